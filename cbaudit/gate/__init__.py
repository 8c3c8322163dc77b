"""The gate: reads bundle manifests and runs the checks they declare."""
