# Two entry points: `make gate` (the main job) and `make test` (lint, types, tests).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The CPU build of torch that these machines carry; pinned so pip never reaches for a CUDA build.
TORCH  ?= torch==2.13.0

.PHONY: all venv gate test lint typecheck pytest bench-cpu clean check-readme

all: test

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[dev]'
	$(PY) -m pip install -q '$(TORCH)' || echo "warning: $(TORCH) not installed; torch tests will be skipped"
	@touch $(STAMP)

venv: $(STAMP)

# The article is the user's document: it is never copied into the repository. When the shared
# folder beside the checkout has it, the formula-binding check runs against it; otherwise that
# check is reported as not run.
ARTICLE ?= $(wildcard ../shared/seeds/000_723c321e7155665c.txt)

gate: $(STAMP)
	CBAUDIT_M52_ARTICLE="$(ARTICLE)" $(VENV)/bin/cbaudit gate evidence/

lint: $(STAMP)
	$(VENV)/bin/ruff check cbaudit tests benchmarks
	$(VENV)/bin/ruff format --check cbaudit tests benchmarks

typecheck: $(STAMP)
	$(VENV)/bin/mypy

pytest: $(STAMP)
	$(VENV)/bin/pytest

test: lint typecheck pytest

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
