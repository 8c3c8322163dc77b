"""The names of the `calculator_claim` kind and of its mutation target.

Apart from `cbaudit.oracles.calculator_claims` so that the mutation operators
(`cbaudit.mutate.ops_calc`) can name them without loading the calculators.
"""

NAME = "calculator_claim"
TARGET = "calculator-claims"
