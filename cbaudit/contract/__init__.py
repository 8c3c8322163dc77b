"""The scheduler contract (article 0x01A): records, their checks, and the validator API."""

# The records live in `cbaudit.contract.records` and the validator API in
# `cbaudit.contract.validator`; this package imports neither, so the replay engine (which
# needs the records and the live checks) does not load the case and trace readers.
