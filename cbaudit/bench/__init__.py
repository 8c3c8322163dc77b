"""The torch mixed-step runner and its results files.

Only the modules that need torch (`model`, `measure`) import it, through
`torch_env.require_torch()`; the runner process (`python -m cbaudit.bench.runner`) loads them.
Everything else here (specs, grids, geometry and roofline, statistics, fits, results files,
attach, the gate kind) is plain Python so the CLI stays light.
"""
