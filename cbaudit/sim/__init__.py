"""The simulator only: workloads, the iteration engine, cost models, metrics, importers, replay
reports and sweeps. The loop oracles that replay it live in `cbaudit.oracles`."""
