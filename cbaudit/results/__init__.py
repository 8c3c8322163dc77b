"""Comparability of results, honest statistics, paper registries and the Loop 11 oracles.

Parts (one job each):

* `stats`: medians with distribution-free CIs, Mann-Whitney U, geometric means.
* `coordinates`: the comparison coordinate set and the comparability rule (article F67).
* `samples`: the `SampleSet` every input type is adapted into, and the adapter registry.
* `metrics`: the metric registry (direction: lower or higher is better).
* `compare`: measured comparisons and comparability refusals.
* `registries`: audits of the paper-contract and source-reported-result registries.
* `sensitivity`: the one-control sensitivity oracle on the article's base fixture.
* `closure`: the failure-closure registry, bound to prior artifacts by sha256.
* `negative`: negative fixtures (one mutation each, a declared finding code).
Its check kinds (Loop 11) are declared in `cbaudit.oracles.comparability`.
"""
