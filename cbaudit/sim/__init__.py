"""Simulation: workloads, the iteration engine, cost models, metrics."""
