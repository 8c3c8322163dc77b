"""Hash binding of runtime sources: pin manifests, their verification and creation.

A pin manifest records facts about third-party source files (sha256, byte count, git blob id
and exact marker lines), never the source itself. `verify` checks those facts against a
checkout or a git repository that the user supplies.
"""
