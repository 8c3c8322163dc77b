"""Every loop oracle of the article (Loops 2-11, the lesson and the lecture), and its check kinds.

One module or small package per loop (docs/architecture.md has the table): Loop 2
`contract_cases`, Loop 3 and the lesson's and lecture's replays `replay`, Loops 4-7 and 10 the
fixture oracles run by the kind `oracle` (`fixture_oracle`), Loop 8 `fairness/`, Loop 9
`preemption/`, Loop 11 `comparability`, hash binding `binding`, measured evidence
`bench_results`. A fixture oracle takes a loaded fixture and returns one `CheckResult` whose
metrics are its report; negative fixtures name the finding code they must produce.
"""
