"""Hash binding of formulas: a registry of plain-text formulas bound to an article's display
equations by the sha256 of their normalized LaTeX, with worked examples checked by a small safe
evaluator."""
