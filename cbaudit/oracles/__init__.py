"""The article's loop oracles (Loops 3-11): small exact checks over declared fixtures.

Each oracle takes a loaded fixture and returns one `CheckResult` whose metrics are its report.
`registry.ORACLES` names them; the gate kind `oracle` (`gate_kinds.run_oracle`) runs one
fixture per declared check, and negative fixtures name the finding code they must produce.
"""
