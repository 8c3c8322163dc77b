"""`cbaudit new bundle`: the files of a new evidence bundle that passes the gate as generated.

`bundle_files(name, article)` returns the files (relative path -> text): `bundle.yaml`, a
README, and one loop folder `claims/` with a tiny workload, a replay check with exact
assertions and a negative check that must be rejected for a declared reason, so the first
`cbaudit gate` already runs a claim and a rejection. With an article, `bundle.yaml` records
its name and sha256 and the README says how to bind its formulas (docs/authoring.md).

`write_bundle(parent, name, files)` writes them atomically: into a hidden temporary folder
beside the target, renamed into place only when every file is written. A target that exists
and is not an empty folder is refused (`NEW.TARGET.EXISTS`), never overwritten.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from cbaudit.model import InputError

NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]*$")

_WORKLOAD = """\
# Three requests on two sequence slots: A and B arrive together, C two ticks later. Each
# prompt is one token; the realized output lengths (2, 8, 3) are hidden truth the scheduler
# never sees. Replace it with your own workload (docs/authoring.md).
schema_version: 1
workload_id: {name}-example
clock: {{unit: tick}}
policy:
  policy_id: declared-by-replay
  policy_version: "1"
  tie_break:
    key: [arrival_order, request_id, request_generation]
    phase_order: [DECODE_ROW, PREFILL_CHUNK]
budgets: {{token_budget: 2, sequence_budget: 2}}
requests:
  - {{request_id: A, arrival: 0, arrival_order: 0, prompt_tokens: 1, max_output_tokens: 8}}
  - {{request_id: B, arrival: 0, arrival_order: 1, prompt_tokens: 1, max_output_tokens: 8}}
  - {{request_id: C, arrival: 2, arrival_order: 2, prompt_tokens: 1, max_output_tokens: 8}}
fixture_only_hidden_truth:
  realized_output_tokens: {{A: 2, B: 8, C: 3}}
"""

_CHECKS = """\
# The checks of one part of the document. Paths are relative to this file. Each check states
# the sentence it backs (claim) and its evidence class; docs/authoring.md adds a calculator
# claim bound to a formula registry.
loop: claims
title: Example claims (replace them with your document's)
checks:
  - id: claims.refill-occupancy
    kind: replay
    title: Iteration-level refill keeps both slots busy
    claim: >-
      Refilling a slot at the next iteration runs the three requests in 8 iterations and
      fills 13 of the 16 slot-iterations.
    evidence_class: synthetic
    workload: example.workload.yaml
    policy: orca
    assert:
      iterations: 8
      slot_occupancy: "13/16"
  - id: claims.neg-static-occupancy
    kind: negative_check
    title: A static batch does not reach the refill occupancy
    claim: >-
      Claiming that a static batch also fills 13/16 of its slots is refuted (it fills 13/22).
    evidence_class: synthetic
    expect_code: REPLAY.ASSERT.MISMATCH
    check:
      kind: replay
      workload: example.workload.yaml
      policy: static
      assert:
        slot_occupancy: "13/16"
"""

_README = """\
# {name}

An evidence bundle for cbaudit{about}. Run it with:

```console
$ cbaudit gate {name}
```

- `bundle.yaml` names the bundle and lists the check files it includes.
- `claims/checks.yaml` holds example checks: a replay of `claims/example.workload.yaml` with
  exact assertions, and a negative check that must be rejected with `REPLAY.ASSERT.MISMATCH`.
  Replace them with your document's claims.
{article_steps}
See docs/authoring.md in cbaudit for the whole walk: a replay check, a negative, a formula
registry bound to the document, and a calculator claim that names its formula.
"""

_ARTICLE_STEPS = """\
- The document is `{article}` (sha256 recorded in `bundle.yaml`). To bind its display
  equations, write a formula registry skeleton and fill in each formula's name, family and
  plain form:

  ```console
  $ cbaudit formula-audit {name}/pins/formula_registry.yaml --init --article {article}
  ```

  then add a `formula_audit` check with `article: ${{YOUR_ARTICLE_VARIABLE}}`.
"""


def bundle_files(
    name: str, article: Path | None = None, article_bytes: bytes = b""
) -> dict[str, str]:
    """The files of a new bundle `name` (relative path -> text); `article_bytes` are the
    article's bytes (read by the caller, bounded), hashed into `bundle.yaml`."""
    if not NAME_RE.match(name):
        raise ValueError(
            f"bundle name {name!r}: use lower-case letters, digits, '.', '_' and '-',"
            " starting with a letter or digit"
        )
    lines = [
        f"# The evidence bundle {name}. Checks live in the included files; paths inside",
        "# them are relative to each file.",
        "schema_version: 1",
        f"bundle: {name}",
        f'title: "{name}"',
    ]
    about = ""
    steps = ""
    if article is not None:
        digest = hashlib.sha256(article_bytes).hexdigest()
        lines += [
            "source:",
            f'  title: "{article.name}"',
            f"  sha256: {digest}",
            "  note: the document this bundle checks (it is not copied into the bundle)",
        ]
        about = f" that checks the claims of `{article.name}`"
        steps = _ARTICLE_STEPS.format(name=name, article=article)
    lines += ["include:", "  - claims/checks.yaml", ""]
    return {
        "bundle.yaml": "\n".join(lines),
        "README.md": _README.format(name=name, about=about, article_steps=steps),
        "claims/checks.yaml": _CHECKS,
        "claims/example.workload.yaml": _WORKLOAD.format(name=name),
    }


def write_bundle(parent: Path, name: str, files: Mapping[str, str]) -> Path:
    """Write `files` as the folder `parent/name`, atomically; refuse an existing target."""
    target = parent / name
    if not parent.is_dir():
        raise InputError.at(
            "NEW.PARENT.MISSING", f"the parent folder {parent} does not exist", str(parent)
        )
    if target.exists() and not (target.is_dir() and not any(target.iterdir())):
        raise InputError.at(
            "NEW.TARGET.EXISTS",
            f"{target} exists and is not an empty folder; choose another name or --dir",
            str(target),
        )
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=parent))
    try:
        for rel, text in sorted(files.items()):
            path = staging / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        umask = os.umask(0)  # mkdtemp makes 0700; the folder gets mkdir()'s mode under the umask
        os.umask(umask)
        os.chmod(staging, 0o777 & ~umask)
        if target.is_dir():
            target.rmdir()  # empty: checked above
        os.rename(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target
