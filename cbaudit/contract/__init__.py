"""The scheduler contract (article 0x01A): records, their checks, and the validator API."""

from cbaudit.contract.records import (
    IterationPlan,
    IterationResult,
    Phase,
    Queue,
    RequestView,
    SchedulerState,
    WorkItem,
    WorkloadManifest,
)
from cbaudit.contract.validator import (
    validate_case,
    validate_case_file,
    validate_plan,
    validate_result,
    validate_state,
    validate_trace,
)

__all__ = [
    "IterationPlan",
    "IterationResult",
    "Phase",
    "Queue",
    "RequestView",
    "SchedulerState",
    "WorkItem",
    "WorkloadManifest",
    "validate_case",
    "validate_case_file",
    "validate_plan",
    "validate_result",
    "validate_state",
    "validate_trace",
]
