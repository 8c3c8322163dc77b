"""The result model shared by every subcommand: findings, results, evidence classes, errors."""

from cbaudit.model.errors import CbauditError, InputError, UsageError
from cbaudit.model.findings import (
    EvidenceClass,
    ExitCode,
    Finding,
    FindingSink,
    Location,
    Locator,
    Severity,
)
from cbaudit.model.result import CheckResult, CheckStatus, InputDigest, Report

__all__ = [
    "CbauditError",
    "CheckResult",
    "CheckStatus",
    "EvidenceClass",
    "ExitCode",
    "Finding",
    "FindingSink",
    "InputDigest",
    "InputError",
    "Location",
    "Locator",
    "Report",
    "Severity",
    "UsageError",
]
