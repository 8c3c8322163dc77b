"""Executors: where the independent units of a sweep, a campaign or a gate run.

One interface under `replay sweep`, `mutate` and `gate`: `map(fn, shared, units, failed=...)`
calls `fn(shared, unit)` for every unit and returns the results **in the order of the units**,
whatever order they finished in, so the merge is deterministic and a report does not depend on
where its units ran.

* `LocalExecutor(jobs)`: today's behaviour. One job runs the units in this process; more run
  them in a local process pool (`cbaudit.io.workers`). An exception in a unit propagates.
* `RayExecutor(address)` (`--executor ray`, the optional extra `cbaudit[ray]`): every unit is
  a Ray task on an existing cluster. `shared` is put in the object store once; a unit must
  carry its inputs' content (not paths on this machine: a worker need not share its file
  system, see `cbaudit.io.shipping`). A task that raises or whose worker dies is retried once;
  a unit that fails twice becomes `failed(unit, why)`, an error result of that unit, never a
  dropped one.

`provenance()` says where the units ran (kind, address, hosts, worker count); reports keep it
in a field of its own (`Report.executor`) and only for a cluster run, so a Ray run's report
equals the local run's byte for byte apart from that field.

Ray is imported only by `RayExecutor`; without it the executor is refused with a message naming
the extra (exit 2), as is an address where no cluster answers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from cbaudit.io.workers import worker_pool
from cbaudit.model import UsageError

S = TypeVar("S")
U = TypeVar("U")
R = TypeVar("R")

#: Seconds a cluster address may take to accept a connection before it is called unreachable.
CONNECT_TIMEOUT_S = 5.0
RAY_EXTRA = "pip install 'cbaudit[ray]'"


class ExecutorKind(StrEnum):
    """`--executor` choices."""

    local = "local"
    ray = "ray"


class Executor(Protocol):
    """Runs independent units and hands their results back in unit order."""

    def map(
        self,
        fn: Callable[[S, U], R],
        shared: S,
        units: Sequence[U],
        *,
        failed: Callable[[U, str], R],
        done: Callable[[int, int, R], None] | None = None,
    ) -> list[R]:
        """`[fn(shared, u) for u in units]`, computed wherever the executor runs units.

        `failed(unit, why)` is the result of a unit that could not be run (a cluster executor
        after its retry); `done(n, index, result)` hears of the n-th finished unit."""
        ...

    @property
    def remote(self) -> bool:
        """True when units may run on another machine (they must carry their inputs)."""
        ...

    def provenance(self) -> dict[str, Any] | None:
        """Where the units ran, for the report's `executor` field (None: locally)."""
        ...

    def close(self) -> None: ...


# ------------------------------------------------------------------------------- local

_SHARED: dict[str, Any] = {}


def _set_shared(shared: Any) -> None:
    _SHARED["value"] = shared


def _call_shared(fn: Callable[[Any, Any], Any], unit: Any) -> Any:
    return fn(_SHARED["value"], unit)


class LocalExecutor:
    """This process (one job) or a local process pool of `jobs` workers."""

    remote = False

    def __init__(self, jobs: int) -> None:
        self.jobs = max(1, jobs)

    def map(
        self,
        fn: Callable[[S, U], R],
        shared: S,
        units: Sequence[U],
        *,
        failed: Callable[[U, str], R],
        done: Callable[[int, int, R], None] | None = None,
    ) -> list[R]:
        del failed  # a local unit that raises stops the command, as it always did
        if self.jobs <= 1 or len(units) <= 1:
            serial: list[R] = []
            for i, unit in enumerate(units):
                serial.append(fn(shared, unit))
                if done is not None:
                    done(i + 1, i, serial[-1])
            return serial
        from concurrent.futures import as_completed

        out: dict[int, R] = {}
        with worker_pool(min(self.jobs, len(units)), _set_shared, (shared,)) as pool:
            futures = {pool.submit(_call_shared, fn, unit): i for i, unit in enumerate(units)}
            for n, future in enumerate(as_completed(futures), 1):
                i = futures[future]
                out[i] = future.result()
                if done is not None:
                    done(n, i, out[i])
        return [out[i] for i in range(len(units))]

    def provenance(self) -> dict[str, Any] | None:
        return None

    def close(self) -> None:
        return None


# --------------------------------------------------------------------------------- ray


def _ray_call(fn: Callable[[Any, Any], Any], shared: Any, unit: Any) -> tuple[str, Any]:
    """One unit on a Ray worker: (the worker's host, the unit's result)."""
    import socket

    return socket.gethostname(), fn(shared, unit)


def import_ray() -> Any:
    """The `ray` module, or a usage error (exit 2) naming the extra that installs it."""
    try:
        import ray
    except ImportError:
        raise UsageError(f"--executor ray needs Ray, which is not installed: {RAY_EXTRA}") from None
    return ray


def _reachable(address: str) -> None:
    """Refuse (exit 2) a `host:port` where nothing accepts a connection, before Ray waits on
    it for minutes. `auto` and `ray://` addresses are left to Ray."""
    if address == "auto" or "://" in address:
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise UsageError(f"--ray-address {address!r} is not HOST:PORT, ray://HOST:PORT or auto")
    import socket

    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as err:
        raise UsageError(
            f"--ray-address {address}: no Ray cluster answers there ({err.strerror or err});"
            " start one with `ray start --head` or pass the address of a running head"
        ) from None


class RayExecutor:
    """Units as Ray tasks on an existing cluster (`address`: HOST:PORT, ray://..., auto)."""

    remote = True

    def __init__(self, address: str | None) -> None:
        ray = import_ray()
        self.ray = ray
        self.address = address or os.environ.get("RAY_ADDRESS") or "auto"
        _reachable(self.address)
        import logging

        try:
            ray.init(
                address=self.address,
                logging_level=logging.ERROR,
                log_to_driver=False,
                configure_logging=True,
            )
        except (ConnectionError, RuntimeError, ValueError) as err:
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise UsageError(
                f"--ray-address {self.address}: could not join a Ray cluster ({first});"
                " start one with `ray start --head` or pass the address of a running head"
            ) from None
        self.hosts: set[str] = set()
        self.workers = int(ray.cluster_resources().get("CPU", 0))

    def map(
        self,
        fn: Callable[[S, U], R],
        shared: S,
        units: Sequence[U],
        *,
        failed: Callable[[U, str], R],
        done: Callable[[int, int, R], None] | None = None,
    ) -> list[R]:
        ray = self.ray
        if not units:
            return []
        task = ray.remote(_ray_call).options(max_retries=1, retry_exceptions=True, num_cpus=1)
        shared_ref = ray.put(shared)
        pending = {task.remote(fn, shared_ref, unit): i for i, unit in enumerate(units)}
        out: dict[int, R] = {}
        n = 0
        while pending:
            refs = list(pending)
            ready, rest = ray.wait(refs, num_returns=1)
            if rest:  # and whatever else is ready by now, so a long run is not quadratic
                more, _ = ray.wait(rest, num_returns=len(rest), timeout=0)
                ready += more
            for ref in ready:
                i = pending.pop(ref)
                try:
                    host, result = ray.get(ref)
                except Exception as err:  # failed twice (raised, or its worker was lost)
                    out[i] = failed(units[i], _why(err))
                else:
                    self.hosts.add(str(host))
                    out[i] = result
                n += 1
                if done is not None:
                    done(n, i, out[i])
        return [out[i] for i in range(len(units))]

    def provenance(self) -> dict[str, Any] | None:
        return {
            "kind": ExecutorKind.ray.value,
            "address": self.address,
            "hosts": sorted(self.hosts),
            "workers": self.workers,
        }

    def close(self) -> None:
        self.ray.shutdown()


def _why(err: BaseException) -> str:
    """One line saying why a unit failed on the cluster (after its retry)."""
    text = " ".join(str(err).split())
    if len(text) > 300:
        text = text[:297] + "..."
    return f"the unit failed twice on the cluster ({type(err).__name__}): {text}"


def make_executor(kind: ExecutorKind | str, jobs: int, address: str | None) -> Executor:
    """The executor a command's `--executor`, `--jobs` and `--ray-address` ask for."""
    kind = ExecutorKind(kind)
    if kind is ExecutorKind.local:
        if address is not None:
            raise UsageError("--ray-address needs --executor ray")
        return LocalExecutor(jobs)
    return RayExecutor(address)
