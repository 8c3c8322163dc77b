"""Malformed inputs, one per class the loader must refuse, with the finding each must give.

Shared by the loader-level tests and the CLI tests. `line`/`column` are 1-based; `pointer`
is checked when not None.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Case:
    """One malformed file: its name and bytes, and the located finding it must produce."""

    id: str
    filename: str
    content: bytes
    code: str
    line: int | None
    column: int | None
    pointer: str | None = None
    says: str | None = None  # a phrase the message must contain

    @property
    def is_jsonl(self) -> bool:
        return self.filename.endswith(".jsonl")


_LAUGHS = (
    'a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]\n'
    "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
    "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
    "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
    "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
    "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
)

CASES: tuple[Case, ...] = (
    # -- JSON ----------------------------------------------------------------------------
    Case("json-syntax", "bad.json", b'{"a": 1,\n "b": x}\n', "LOAD.SYNTAX", 2, 7, "/b"),
    Case(
        "json-truncated",
        "trunc.json",
        b'{"a": [1, 2',
        "LOAD.SYNTAX",
        1,
        12,
        "/a",
        says="unexpected end",
    ),
    Case("json-extra-data", "extra.json", b'{"a": 1}\n{"b": 2}\n', "LOAD.SYNTAX", 2, 1),
    Case(
        "json-duplicate-key",
        "dup.json",
        b'{\n  "a": 1,\n  "b": {"c": 1, "c": 2}\n}\n',
        "LOAD.DUPLICATE_KEY",
        3,
        17,
        "/b/c",
    ),
    Case("json-nan", "nan.json", b'{"x": [1, NaN]}', "LOAD.NONFINITE", 1, 11, "/x/1"),
    Case("json-infinity", "inf.json", b'{"x": -Infinity}', "LOAD.NONFINITE", 1, 7, "/x"),
    Case("json-overflow", "big-float.json", b'{"x": 1e400}', "LOAD.NONFINITE", 1, 7, "/x"),
    Case(
        "json-int-too-long",
        "long-int.json",
        b'{"n": ' + b"7" * 5000 + b"}",
        "LOAD.INT_TOO_LONG",
        1,
        7,
        "/n",
    ),
    Case(
        "json-depth",
        "deep.json",
        b'{"a": ' + b"[" * 300 + b"]" * 300 + b"}",
        "LOAD.DEPTH",
        1,
        262,  # `{` is level 1 at column 1; the 256th `[` (level 257) is at column 6 + 256
        "/a" + "/0" * 255,
    ),
    Case(
        "json-depth-recursion",
        "deeper.json",
        b"[" * 50_000 + b"]" * 50_000,
        "LOAD.DEPTH",
        1,
        257,
    ),
    Case(
        "json-lone-surrogate",
        "surrogate.json",
        b'{"s": "\\ud800"}',
        "LOAD.LONE_SURROGATE",
        1,
        7,
        "/s",
    ),
    Case("json-not-utf8", "latin1.json", b'{"a": "caf\xe9"}', "LOAD.ENCODING", 1, 11),
    Case("json-top-level", "array.json", b"  [1, 2]\n", "LOAD.TOP_LEVEL_TYPE", 1, 3, ""),
    Case("json-empty", "empty.json", b" \n\t\n", "LOAD.EMPTY", 1, None),
    # -- YAML ----------------------------------------------------------------------------
    Case("yaml-syntax", "bad.yaml", b"a: [1,\n", "LOAD.SYNTAX", 2, 1, "/a"),
    Case("yaml-duplicate-key", "dup.yaml", b"a: 1\nb: 2\na: 3\n", "LOAD.DUPLICATE_KEY", 3, 1, "/a"),
    Case(
        "yaml-python-tag",
        "pyobj.yaml",
        b'cmd: !!python/object/apply:os.system ["true"]\n',
        "LOAD.YAML_TAG",
        1,
        6,
        "/cmd",
    ),
    Case("yaml-custom-tag", "custom.yaml", b"x:\n  - !thing 1\n", "LOAD.YAML_TAG", 2, 5, "/x/0"),
    Case("yaml-alias-bomb", "laughs.yaml", _LAUGHS.encode(), "LOAD.YAML_ALIAS_BOMB", 5, 36, "/e/7"),
    Case(
        "yaml-recursive-alias",
        "cycle.yaml",
        b"a: &a [1, *a]\n",
        "LOAD.YAML_RECURSIVE_ALIAS",
        1,
        11,
        "/a/1",
    ),
    Case("yaml-NO", "no.yaml", b"enabled: NO\n", "LOAD.YAML_AMBIGUOUS_SCALAR", 1, 10, "/enabled"),
    Case("yaml-on", "on.yaml", b"flags:\n  - on\n", "LOAD.YAML_AMBIGUOUS_SCALAR", 2, 5, "/flags/0"),
    Case("yaml-y-key", "y.yaml", b"x: 1\ny: 2\n", "LOAD.YAML_AMBIGUOUS_SCALAR", 2, 1, "/y"),
    Case("yaml-octal", "octal.yaml", b"mode: 0755\n", "LOAD.YAML_AMBIGUOUS_SCALAR", 1, 7, "/mode"),
    Case("yaml-sexagesimal", "sexa.yaml", b"t: 1:20\n", "LOAD.YAML_AMBIGUOUS_SCALAR", 1, 4, "/t"),
    Case("yaml-underscore", "under.yaml", b"v: 1_000\n", "LOAD.YAML_AMBIGUOUS_SCALAR", 1, 4, "/v"),
    Case("yaml-binary", "bin.yaml", b"v: 0b101\n", "LOAD.YAML_AMBIGUOUS_SCALAR", 1, 4, "/v"),
    Case("yaml-nan", "nan.yaml", b"x: .nan\n", "LOAD.NONFINITE", 1, 4, "/x"),
    Case("yaml-inf", "inf.yaml", b"x: [-.inf]\n", "LOAD.NONFINITE", 1, 5, "/x/0"),
    Case("yaml-overflow", "big.yaml", b"x: 1e400\n", "LOAD.NONFINITE", 1, 4, "/x"),
    Case(
        "yaml-int-too-long",
        "long.yaml",
        b"v: " + b"9" * 5000 + b"\n",
        "LOAD.INT_TOO_LONG",
        1,
        4,
        "/v",
    ),
    Case(
        "yaml-merge-key",
        "merge.yaml",
        b"base: &b {x: 1}\nother:\n  <<: *b\n",
        "LOAD.YAML_MERGE_KEY",
        3,
        3,
        "/other/<<",
    ),
    Case("yaml-int-key", "intkey.yaml", b"a: 1\n2: b\n", "LOAD.KEY_TYPE", 2, 1, ""),
    Case("yaml-seq-key", "seqkey.yaml", b"? [a, b]\n: 1\n", "LOAD.KEY_TYPE", 1, 3, ""),
    Case(
        "yaml-bad-tagged-value",
        "tagged.yaml",
        b"v: !!int twelve\n",
        "LOAD.YAML_TAG_VALUE",
        1,
        4,
        "/v",
    ),
    Case("yaml-multi-doc", "multi.yaml", b"a: 1\n---\nb: 2\n", "LOAD.MULTI_DOCUMENT", 2, 1),
    Case(
        "yaml-depth",
        "deep.yaml",
        b"a: " + b"[" * 300 + b"]" * 300 + b"\n",
        "LOAD.DEPTH",
        1,
        259,  # the mapping is level 1; the 256th `[` (level 257) is at column 3 + 256
        "/a" + "/0" * 255,
    ),
    Case("yaml-depth-parser", "deeper.yaml", b"[" * 5000, "LOAD.DEPTH", 1, None),
    Case("yaml-control-char", "ctrl.yaml", b"a: b\x01\n", "LOAD.SYNTAX", 1, 5),
    Case("yaml-not-utf8", "latin1.yaml", b"a: 1\nb: caf\xe9\n", "LOAD.ENCODING", 2, 7),
    Case("yaml-top-level", "scalar.yaml", b"\njust some text\n", "LOAD.TOP_LEVEL_TYPE", 2, 1, ""),
    Case("yaml-comments-only", "comments.yaml", b"# nothing\n# here\n", "LOAD.EMPTY", 1, None),
    Case("yaml-undefined-alias", "undef.yaml", b"a: *nope\n", "LOAD.SYNTAX", 1, 4),
    # -- JSONL ---------------------------------------------------------------------------
    Case(
        "jsonl-bad-line",
        "trace.jsonl",
        b'{"i": 0}\n{"i": 1}\n\n{"i": 2,\n',
        "LOAD.SYNTAX",
        4,
        9,
        says="unexpected end",
    ),
    Case(
        "jsonl-duplicate-key",
        "dup.jsonl",
        b'{"i": 0}\n{"i": 1, "i": 2}\n',
        "LOAD.DUPLICATE_KEY",
        2,
        10,
        "/i",
    ),
    Case("jsonl-record-type", "type.jsonl", b'{"i": 0}\n[1]\n', "LOAD.TOP_LEVEL_TYPE", 2, 1, ""),
    Case("jsonl-not-utf8", "enc.jsonl", b'{"i": 0}\n{"s": "\xff"}\n', "LOAD.ENCODING", 2, 8),
    Case("jsonl-nan", "nan.jsonl", b'{"i": 0}\r\n{"x": NaN}\r\n', "LOAD.NONFINITE", 2, 7, "/x"),
    Case("jsonl-empty", "empty.jsonl", b"\n\n", "LOAD.EMPTY", 1, None),
)
