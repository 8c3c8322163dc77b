"""Loop 8 (article 0x09A): fairness and starvation.

- `kinds`: the check kinds `fairness_starvation` and `fairness_replay`, and the mutation target
  of fairness fixtures (light: the oracles load when a check runs);
- `oracle`: the fixture oracle (client flood, VTC lift and bound, reconciled counters, aging,
  prefix quota, MLFQ);
- `replay`: fairness beside SLO outcomes on engine replays;
- `accounting`: the local accounting contract both share (identity, completed service).
"""
