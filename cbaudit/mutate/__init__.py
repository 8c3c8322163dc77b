"""Mutation campaigns over evidence fixtures, the negative-fixture catalog, and metamorphic
relations (issue 6).

- `operators` / `registry`: mutation operators, one explicit registry fed by one module per loop;
- `targets`: which fixture type a document is (the targets themselves are declared by the check
  kinds beside their oracles and passed in: `cbaudit.kinds.TARGETS`);
- `patch`: RFC 6902 applied by path copying (no deep copies);
- `campaign`: fixture x operator cells, statuses, score, kill matrix, worker processes;
- `reporting`: a campaign as a check result and as a Stryker mutation-testing report;
- `bundle` / `negatives`: valid fixtures and declared negatives of a bundle, the article floors;
- `metamorphic`: the four named relations;
- `kinds`: the check kinds `mutation`, `negative_floor` and `metamorphic`.

Import what you need from those modules: this package imports none of them, so a campaign
over one fixture type loads only the oracle that judges it (issue 13, fast start).
"""
