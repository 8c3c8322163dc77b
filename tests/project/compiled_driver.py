"""Run many `cbaudit` commands in one process and keep everything they write (a helper of
test_wheel_install.py, not a test).

    python compiled_driver.py CASES.json OUTDIR

CASES.json is a list of {"name": str, "args": [str, ...]}. Each case runs as `cbaudit ARGS`
with OUTDIR as the working directory (so the output paths in ARGS are relative and the same
under every build); its exit code, stdout and stderr go to NAME.exit, NAME.out and NAME.err.
The last line printed is a JSON object: where each compiled-module candidate was loaded from,
so the caller knows which build ran.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
from pathlib import Path


def main() -> None:
    cases = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    out = Path(sys.argv[2]).resolve()
    out.mkdir(parents=True, exist_ok=True)
    os.chdir(out)
    from cbaudit.cli.app import run

    for case in cases:
        stdout, stderr = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = run(list(case["args"]))
            except SystemExit as err:  # (an exit the app maps itself)
                code = err.code if isinstance(err.code, int) else 1
        name = case["name"]
        (out / f"{name}.exit").write_text(f"{code}\n", encoding="utf-8")
        (out / f"{name}.out").write_text(stdout.getvalue(), encoding="utf-8")
        (out / f"{name}.err").write_text(stderr.getvalue(), encoding="utf-8")
    import cbaudit.sim.engine

    print(json.dumps({"engine": cbaudit.sim.engine.__file__}))


if __name__ == "__main__":
    main()
