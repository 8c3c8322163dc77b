# Two entry points: `make gate` (the main job) and `make test` (lint, types, tests).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
# The CPU build of torch that these machines carry; pinned so pip never reaches for a CUDA build.
TORCH  ?= torch==2.13.0

.PHONY: all venv gate vllm-release verify-policies test lint typecheck pytest pytest-compiled wheel browser clean

all: test

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -q -e '.[dev,ray]'
	$(PY) -m pip install -q '$(TORCH)' || echo "warning: $(TORCH) not installed; torch tests will be skipped"
	@touch $(STAMP)

venv: $(STAMP)

# The article is the user's document: it is never copied into the repository. When the shared
# folder beside the checkout has it, the formula-binding check runs against it; otherwise that
# check is reported as not run.
ARTICLE ?= $(wildcard ../shared/seeds/000_723c321e7155665c.txt)
# Lecture 4 (the lecture-4-continuous-batching bundle binds its formulas to it the same way).
LECTURE4 ?= $(wildcard ../shared/seeds/003_d1c4d8563692c767.txt)

# The vLLM v0.23.0 release as published (the wheel, about 270 MB), fetched by pip into .cache/.
# With it here, `make gate` verifies both vLLM pins' hashes, sizes, git blob ids and line markers
# (the article's 52, and the 143 behind vllm-v1's rules) against the bytes vLLM shipped; without
# it those checks are reported as not run. CBAUDIT_VLLM_SOURCE
# set by the caller (a checkout, an unpacked release or an archive) takes precedence.
VLLM_WHEEL = $(firstword $(wildcard .cache/vllm/vllm-0.23.0*.whl))
CBAUDIT_VLLM_SOURCE ?= $(VLLM_WHEEL)

gate: $(STAMP)
	CBAUDIT_M52_ARTICLE="$(ARTICLE)" CBAUDIT_LECTURE4_ARTICLE="$(LECTURE4)" \
	  CBAUDIT_VLLM_SOURCE="$(CBAUDIT_VLLM_SOURCE)" $(VENV)/bin/cbaudit gate evidence/

vllm-release: $(STAMP)
	$(PY) -m pip download -q --no-deps --only-binary :all: --implementation cp \
	  --python-version 3.12 --platform manylinux_2_28_x86_64 -d .cache/vllm 'vllm==0.23.0'
	for pin in pinned/vllm-v0.23.0.yaml pinned/vllm-v0.23.0-scheduler-rules.yaml; do \
	  $(VENV)/bin/cbaudit verify-pin $$pin --source "$$(ls .cache/vllm/vllm-0.23.0*.whl | head -n 1)" \
	    || exit $$?; \
	done

# The replay engine believes a policy's stretch declaration only from the policy sources the
# differential tests ran on (cbaudit/policies/verified_sources.json). After editing a policy:
# the tests run against a candidate record of the sources as they are now, which replaces the
# record only when they pass.
VERIFY_TESTS = tests/sim/test_stretch.py tests/sim/test_block_rows.py \
  tests/sim/test_stretch_walk.py tests/sim/test_stretch_claims.py \
  tests/sim/test_stretch_trace_scale.py tests/policies/test_vllm_v1_block.py
CANDIDATE = $(CURDIR)/.cache/verified_sources.candidate.json
verify-policies: $(STAMP)
	@mkdir -p .cache
	$(PY) -m cbaudit.policies.verified --write $(CANDIDATE)
	CBAUDIT_VERIFIED_SOURCES=$(CANDIDATE) $(VENV)/bin/pytest -q -n $(PYTEST_WORKERS) \
	  --dist loadfile $(VERIFY_TESTS)
	mv $(CANDIDATE) cbaudit/policies/verified_sources.json

lint: $(STAMP)
	$(VENV)/bin/ruff check cbaudit tests benchmarks hatch_build.py
	$(VENV)/bin/ruff format --check cbaudit tests benchmarks hatch_build.py

typecheck: $(STAMP)
	$(VENV)/bin/mypy

# The HTML report is tested in real headless Chromium, driven by Playwright (dev extra) through
# the OS package's binary. In CI (CI=true), or when asked (CBAUDIT_INSTALL_BROWSER=1), install
# it from the OS packages when it is missing and we are root; where that is impossible the
# browser tests are skipped with a message saying why. They leave screenshots of the reports in
# artifacts/screenshots/ (git-ignored) for CI to keep.
browser:
	@if ! command -v chromium >/dev/null 2>&1 && { [ "$$CI" = true ] || [ -n "$$CBAUDIT_INSTALL_BROWSER" ]; }; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing chromium (OS package) for the HTML report test"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null 2>&1 \
	      || echo "note: could not install chromium; the browser test will be skipped"; \
	  else echo "note: chromium missing and not installable here; the browser test will be skipped"; fi; \
	fi

# The suite runs on one pytest-xdist worker per CPU (PYTEST_WORKERS=0 runs it in one process).
# Each test file goes to one worker (--dist loadfile), so a module's fixtures are made once; the
# files are handed out in collection order (--no-loadscope-reorder), which tests/conftest.py
# starts with the `slow` tests, so the longest files do not start last.
PYTEST_WORKERS ?= logical
pytest: $(STAMP) browser wheel
	CBAUDIT_TEST_WHEEL="$$(ls $(WHEEL_DIR)/cbaudit-*.whl)" \
	  $(VENV)/bin/pytest -n $(PYTEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The wheel a user's `pip install .` gets (hatch_build.py compiles the replay's hot modules
# with mypyc where a C compiler and the Python headers are found; elsewhere it is the
# interpreted wheel, and the line printed says why). `pytest` installs it into a fresh venv
# (tests/project/test_wheel_install.py); `pytest-compiled` runs the engine, policy,
# conformance and differential tests against it, all but those marked `instruments` (they
# replace or subclass code that compiled modules do not let them touch; the interpreted run
# above has them). Where the wheel is interpreted there is no compiled build to test, and
# the target says so.
WHEEL_DIR := .cache/wheel
COMPILED  := .cache/compiled
COMPILED_TESTS = tests/sim tests/policies tests/conform tests/contract
wheel: $(STAMP)
	@rm -rf $(WHEEL_DIR) && mkdir -p $(WHEEL_DIR)
	@echo "building the wheel (pip wheel .)"
	@$(PY) -m pip wheel -v --no-deps -w $(WHEEL_DIR) . > $(WHEEL_DIR)/build.log 2>&1 \
	  || { tail -n 40 $(WHEEL_DIR)/build.log; exit 1; }
	@sed -n 's/^ *\(cbaudit: .*\)/\1/p' $(WHEEL_DIR)/build.log

pytest-compiled: wheel
	@rm -rf $(COMPILED) && $(PY) -m zipfile -e $(WHEEL_DIR)/cbaudit-*.whl $(COMPILED)
	@if [ -f $(COMPILED)/cbaudit/_compiled.json ]; then \
	  CBAUDIT_TEST_BUILD=$(CURDIR)/$(COMPILED) $(VENV)/bin/pytest -n $(PYTEST_WORKERS) \
	    --dist loadfile -m 'not instruments' -p no:cacheprovider $(COMPILED_TESTS); \
	else echo "note: the wheel is interpreted here: no compiled build to test"; fi

test: lint typecheck pytest pytest-compiled

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .cache
