"""Every malformed-input class is refused with its LOAD.* code at the right place."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from loadcases import CASES, Case

from cbaudit.io import iter_jsonl, load_document, load_text
from cbaudit.model import InputError


def _load(path: Path) -> None:
    if path.suffix == ".jsonl":
        for _ in iter_jsonl(path):
            pass
    else:
        load_document(path)


def _refusal(path: Path) -> InputError:
    with pytest.raises(InputError) as info:
        _load(path)
    return info.value


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.id)
def test_malformed_file_gives_located_finding(tmp_path: Path, case: Case) -> None:
    """Each malformed file raises InputError with its code, file, line, column and pointer."""
    path = tmp_path / case.filename
    path.write_bytes(case.content)
    (finding,) = _refusal(path).findings
    assert finding.code == case.code
    assert finding.location.file == str(path)
    assert finding.location.line == case.line
    if case.column is not None:
        assert finding.location.column == case.column
    if case.pointer is not None:
        assert finding.location.pointer == case.pointer
    assert "\n" not in finding.message
    if case.says is not None:
        assert case.says in finding.message


@pytest.mark.parametrize("case", [c for c in CASES if not c.is_jsonl], ids=lambda c: c.id)
def test_load_text_agrees_with_load_document(case: Case) -> None:
    """Parsing the same bytes in memory gives the same finding as loading the file."""
    fmt = "yaml" if case.filename.endswith(".yaml") else "json"
    with pytest.raises(InputError) as info:
        load_text(case.content, name="mem", fmt=fmt)
    (finding,) = info.value.findings
    assert (finding.code, finding.location.line) == (case.code, case.line)


def test_missing_file_is_not_found(tmp_path: Path) -> None:
    """A path that does not exist gives LOAD.NOT_FOUND naming the path."""
    with pytest.raises(InputError) as info:
        load_document(tmp_path / "absent.json")
    (finding,) = info.value.findings
    assert finding.code == "LOAD.NOT_FOUND"
    assert finding.location.file == str(tmp_path / "absent.json")


def test_path_under_a_file_is_not_found(tmp_path: Path) -> None:
    """A path that runs through a regular file (ENOTDIR) gives LOAD.NOT_FOUND."""
    (tmp_path / "plain").write_text("{}")
    with pytest.raises(InputError) as info:
        load_document(tmp_path / "plain" / "x.json")
    assert info.value.findings[0].code == "LOAD.NOT_FOUND"


def test_directory_is_refused(tmp_path: Path) -> None:
    """A directory given as a file gives LOAD.IS_DIRECTORY, for documents and for JSONL."""
    folder = tmp_path / "case.json"
    folder.mkdir()
    with pytest.raises(InputError) as info:
        load_document(folder)
    assert info.value.findings[0].code == "LOAD.IS_DIRECTORY"
    with pytest.raises(InputError) as info:
        list(iter_jsonl(folder))
    assert info.value.findings[0].code == "LOAD.IS_DIRECTORY"


def test_missing_jsonl_is_not_found(tmp_path: Path) -> None:
    """iter_jsonl on a missing path gives LOAD.NOT_FOUND on first use."""
    with pytest.raises(InputError) as info:
        next(iter_jsonl(tmp_path / "absent.jsonl"))
    assert info.value.findings[0].code == "LOAD.NOT_FOUND"


def test_unopenable_path_is_unreadable(tmp_path: Path) -> None:
    """A file name the OS refuses (too long) gives LOAD.UNREADABLE, not a traceback."""
    with pytest.raises(InputError) as info:
        load_document(tmp_path / ("x" * 5000 + ".json"))
    assert info.value.findings[0].code == "LOAD.UNREADABLE"


def test_nul_in_path_is_unreadable() -> None:
    """A path holding a NUL byte gives LOAD.UNREADABLE."""
    with pytest.raises(InputError) as info:
        load_document("bad\0name.json")
    assert info.value.findings[0].code == "LOAD.UNREADABLE"


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
def test_permission_denied_is_unreadable(tmp_path: Path) -> None:
    """A file without read permission gives LOAD.UNREADABLE."""
    path = tmp_path / "secret.json"
    path.write_text("{}")
    path.chmod(0)
    with pytest.raises(InputError) as info:
        load_document(path)
    assert info.value.findings[0].code == "LOAD.UNREADABLE"


def test_size_cap_argument(tmp_path: Path) -> None:
    """A file over `max_bytes` gives LOAD.TOO_LARGE; one at the cap loads."""
    path = tmp_path / "case.json"
    path.write_text('{"a": 1}')  # 8 bytes
    assert load_document(path, max_bytes=8).data == {"a": 1}
    with pytest.raises(InputError) as info:
        load_document(path, max_bytes=7)
    (finding,) = info.value.findings
    assert finding.code == "LOAD.TOO_LARGE"
    assert "CBAUDIT_MAX_INPUT_BYTES" in finding.message


def test_size_cap_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """CBAUDIT_MAX_INPUT_BYTES sets the cap (with k/M/G units); an explicit max_bytes wins."""
    path = tmp_path / "case.json"
    path.write_text('{"a": "' + "x" * 2000 + '"}')
    monkeypatch.setenv("CBAUDIT_MAX_INPUT_BYTES", "1k")
    with pytest.raises(InputError) as info:
        load_document(path)
    assert info.value.findings[0].code == "LOAD.TOO_LARGE"
    assert load_document(path, max_bytes=4096).data["a"] == "x" * 2000
    monkeypatch.setenv("CBAUDIT_MAX_INPUT_BYTES", "4k")
    assert load_document(path).data["a"] == "x" * 2000


def test_bad_size_environment_is_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A CBAUDIT_MAX_INPUT_BYTES that is not a size is a UsageError (exit 2) naming it."""
    from cbaudit.model import UsageError

    path = tmp_path / "case.json"
    path.write_text("{}")
    monkeypatch.setenv("CBAUDIT_MAX_INPUT_BYTES", "lots")
    with pytest.raises(UsageError, match="CBAUDIT_MAX_INPUT_BYTES"):
        load_document(path)


def test_size_cap_on_unsized_stream(tmp_path: Path) -> None:
    """A source without a size (a FIFO) is cut off at the cap, not read without end."""
    import contextlib
    import threading

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)

    def write() -> None:
        with contextlib.suppress(BrokenPipeError), open(fifo, "wb") as fh:
            fh.write(b'{"a": "' + b"x" * 100_000 + b'"}')

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    try:
        with pytest.raises(InputError) as info:
            load_document(fifo, max_bytes=1000)
        assert info.value.findings[0].code == "LOAD.TOO_LARGE"
    finally:
        # Whatever happened, let a writer still waiting for a reader finish.
        fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        os.close(fd)
        writer.join(timeout=5)


def test_jsonl_line_cap(tmp_path: Path) -> None:
    """A JSONL line over the per-line cap gives LOAD.TOO_LARGE at that line."""
    path = tmp_path / "trace.jsonl"
    path.write_text('{"i": 0}\n{"s": "' + "x" * 500 + '"}\n')
    records = iter_jsonl(path, max_line_bytes=100)
    assert next(records).data == {"i": 0}
    with pytest.raises(InputError) as info:
        next(records)
    (finding,) = info.value.findings
    assert (finding.code, finding.location.line) == ("LOAD.TOO_LARGE", 2)


def test_jsonl_line_exactly_at_cap_loads(tmp_path: Path) -> None:
    """A JSONL line of exactly the cap (newline not counted) is accepted."""
    body = '{"s": "' + "x" * 20 + '"}'
    path = tmp_path / "trace.jsonl"
    path.write_text(body + "\n" + body + "\n")
    assert len(list(iter_jsonl(path, max_line_bytes=len(body)))) == 2


def test_jsonl_whole_file_has_first_bad_line(tmp_path: Path) -> None:
    """load_document on a .jsonl file refuses it at the first bad line."""
    path = tmp_path / "trace.jsonl"
    path.write_text('{"i": 0}\n\n{"i": 1}\n{"i": }\n{"i": NaN}\n')
    with pytest.raises(InputError) as info:
        load_document(path)
    (finding,) = info.value.findings
    assert (finding.code, finding.location.line, finding.location.column) == (
        "LOAD.SYNTAX",
        4,
        7,
    )


def test_yaml_alias_bound_is_configurable() -> None:
    """The alias-expansion bound is an argument: a small bound refuses a modest expansion."""
    text = "a: &a [1, 2, 3, 4]\nb: [*a, *a, *a]\n"
    assert load_text(text, name="m.yaml", fmt="yaml").data["b"][2] == [1, 2, 3, 4]
    with pytest.raises(InputError) as info:
        load_text(text, name="m.yaml", fmt="yaml", max_alias_nodes=12)
    (finding,) = info.value.findings
    assert (finding.code, finding.location.line, finding.location.column) == (
        "LOAD.YAML_ALIAS_BOMB",
        2,
        13,
    )


def test_alias_bomb_work_is_bounded() -> None:
    """A 9-level billion-laughs document is refused quickly: aliases are counted, not expanded."""
    import time

    lines = ['l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, 10):
        refs = ", ".join([f"*l{level - 1}"] * 9)
        lines.append(f"l{level}: &l{level} [{refs}]")
    start = time.perf_counter()
    with pytest.raises(InputError) as info:
        load_text("\n".join(lines) + "\n", name="lol.yaml", fmt="yaml")
    assert info.value.findings[0].code == "LOAD.YAML_ALIAS_BOMB"
    assert time.perf_counter() - start < 2.0


def test_yaml_alias_depth_is_counted() -> None:
    """An alias that would nest a deep anchor under a deep position is refused as LOAD.DEPTH."""
    text = "a: &a " + "[" * 5 + "1" + "]" * 5 + "\nb: [[[[*a]]]]\n"
    assert load_text(text, name="d.yaml", fmt="yaml", max_depth=10).data["b"][0][0][0][0][0]
    with pytest.raises(InputError) as info:
        load_text(text, name="d.yaml", fmt="yaml", max_depth=9)
    (finding,) = info.value.findings
    assert (finding.code, finding.location.line, finding.location.pointer) == (
        "LOAD.DEPTH",
        2,
        "/b/0/0/0/0",
    )


def test_unknown_format_is_usage_error(tmp_path: Path) -> None:
    """An unknown `fmt` is a UsageError, not a silent guess."""
    from cbaudit.model import UsageError

    path = tmp_path / "x.json"
    path.write_text("{}")
    with pytest.raises(UsageError, match="toml"):
        load_document(path, fmt="toml")


def test_in_memory_lone_surrogate_is_encoding_error() -> None:
    """Text handed over in memory with a lone surrogate character gives LOAD.ENCODING."""
    with pytest.raises(InputError) as info:
        load_text('{"a":\n "\ud800"}', name="mem.json")
    (finding,) = info.value.findings
    assert (finding.code, finding.location.line, finding.location.column) == (
        "LOAD.ENCODING",
        2,
        3,
    )


def test_input_error_renders_one_located_line(tmp_path: Path) -> None:
    """The rendered finding is one line: file:line:column#pointer, severity, code, message."""
    path = tmp_path / "dup.yaml"
    path.write_text("a: 1\na: 2\n")
    with pytest.raises(InputError) as info:
        load_document(path)
    assert str(info.value) == (
        f"{path}:2:1#/a: error LOAD.DUPLICATE_KEY: duplicate key 'a' (value first at line 1); "
        "each key may appear once in a mapping"
    )


def test_small_file_under_a_large_cap_reads_no_cap_sized_buffer(tmp_path: Path) -> None:
    """A regular file is read up to one byte past its size, not past the cap: a 64 MiB cap
    does not cost a 64 MiB buffer for a small document."""
    import tracemalloc

    from cbaudit.io.loader import read_bounded

    path = tmp_path / "case.json"
    path.write_bytes(b'{"a": 1}')
    tracemalloc.start()
    try:
        assert read_bounded(path, "case.json", 64 << 20) == b'{"a": 1}'
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


@pytest.mark.parametrize(("cap", "ok"), [(100, True), (8, False)])
def test_file_grown_since_stat_is_read_to_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cap: int, ok: bool
) -> None:
    """A file longer than its `stat` size said (it grew in between) is read on: all of it
    within the cap, LOAD.TOO_LARGE past it; never silently cut at the old size."""
    from cbaudit.io import loader

    path = tmp_path / "case.json"
    path.write_bytes(b'{"a": 12}')  # 9 bytes; stat will say 3
    real = loader._stat

    def shrunk(p: Path, name: str) -> os.stat_result:
        info = real(p, name)
        fields = list(info)
        fields[6] = 3  # st_size
        return os.stat_result(fields)

    monkeypatch.setattr(loader, "_stat", shrunk)
    if ok:
        assert loader.read_bounded(path, "case.json", cap) == b'{"a": 12}'
    else:
        with pytest.raises(InputError) as info:
            loader.read_bounded(path, "case.json", cap)
        assert info.value.findings[0].code == "LOAD.TOO_LARGE"
