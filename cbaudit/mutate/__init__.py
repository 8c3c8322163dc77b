"""Mutation campaigns over evidence fixtures, the negative-fixture catalog, and metamorphic
relations (issue 6).

- `operators` / `registry`: mutation operators, one explicit registry fed by one module per loop;
- `targets`: fixture types and the oracle that judges each (in memory);
- `patch`: RFC 6902 applied by path copying (no deep copies);
- `campaign`: fixture x operator cells, statuses, score, kill matrix, worker processes;
- `reporting`: a campaign as a check result and as a Stryker mutation-testing report;
- `bundle` / `negatives`: valid fixtures and declared negatives of a bundle, the article floors;
- `metamorphic`: the four named relations;
- `gate_kinds`: the gate kinds `mutation`, `negative_floor` and `metamorphic`.
"""

from __future__ import annotations

from cbaudit.mutate.campaign import CampaignResult, FixtureInput, MutantStatus, run_campaign
from cbaudit.mutate.metamorphic import RELATIONS, MetamorphicOptions, run_relations
from cbaudit.mutate.operators import Operator, OperatorRegistry
from cbaudit.mutate.registry import OPERATORS

__all__ = [
    "OPERATORS",
    "RELATIONS",
    "CampaignResult",
    "FixtureInput",
    "MetamorphicOptions",
    "MutantStatus",
    "Operator",
    "OperatorRegistry",
    "run_campaign",
    "run_relations",
]
