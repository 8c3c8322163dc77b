"""Scheduling policies, one module per family, in an explicit registry (`registry.POLICIES`)."""
