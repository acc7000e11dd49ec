# The README's two commands: `make demo` and `make test`. Each sets up .venv from scratch
# (a Python >= 3.12 is found on PATH or among pyenv's versions) and then runs.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
OUT ?= demo_output

# First Python >= 3.12 found: on PATH, then under `pyenv root`/versions, newest first.
FIND_PYTHON := ok() { "$$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }; \
	for c in python3.14 python3.13 python3.12 python3 python; do \
	  p=$$(command -v $$c 2>/dev/null) && ok "$$p" && { echo "$$p"; exit 0; }; \
	done; \
	root=$$(pyenv root 2>/dev/null || echo "$$HOME/.pyenv"); \
	for p in $$(ls -d "$$root"/versions/3.*/bin/python3 2>/dev/null | sort -rV); do \
	  ok "$$p" && { echo "$$p"; exit 0; }; \
	done; exit 0

.PHONY: demo test test-all bench docs docs-fast lint format dist-check setup clean

# .venv is created once; each extra is installed on first need (and again when pyproject.toml
# changes): `make demo` installs only the runtime dependencies, `make test` adds the test extra.
VENV_STAMP := $(VENV)/.venv-stamp
RUNTIME_STAMP := $(VENV)/.runtime-stamp
TEST_STAMP := $(VENV)/.test-stamp
DOCS_STAMP := $(VENV)/.docs-stamp
DEV_STAMP := $(VENV)/.dev-stamp

setup: $(TEST_STAMP)

$(VENV_STAMP):
	@base=$$($(FIND_PYTHON)); \
	if [ -z "$$base" ]; then echo "bayescal needs Python >= 3.12: install it (e.g. 'pyenv install 3.12') and run make again." >&2; exit 1; fi; \
	echo "Using $$base to create $(VENV)"; \
	rm -rf $(VENV) && "$$base" -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	@touch $@

$(RUNTIME_STAMP): pyproject.toml $(VENV_STAMP)
	$(PY) -m pip install --quiet -e .
	@touch $@

$(TEST_STAMP): pyproject.toml $(RUNTIME_STAMP)
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $@

$(DOCS_STAMP): pyproject.toml $(TEST_STAMP)
	$(PY) -m pip install --quiet -e '.[test,docs]'
	@touch $@

$(DEV_STAMP): pyproject.toml $(RUNTIME_STAMP)
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $@

demo: $(RUNTIME_STAMP)
	$(VENV)/bin/bayescal demo --out $(OUT) --force

test: $(TEST_STAMP)
	$(PY) -m pytest -q

test-all: $(TEST_STAMP)
	$(PY) -m pytest -q -m ''

bench: $(TEST_STAMP)
	$(PY) benchmarks/run.py

# The documentation site, warnings as errors; docs-fast skips executing the notebooks.
SPHINXOPTS ?=
docs: $(DOCS_STAMP)
	$(PY) -m sphinx -W --keep-going -b html $(SPHINXOPTS) docs docs/_build/html

docs-fast: $(DOCS_STAMP)
	$(PY) -m sphinx -W --keep-going -b html -D nb_execution_mode=off $(SPHINXOPTS) docs docs/_build/html-fast

# ruff (lint + format check) and mypy on the package; `make format` rewrites the code.
lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check bayescal
	$(VENV)/bin/ruff format --check bayescal
	$(VENV)/bin/mypy

format: $(DEV_STAMP)
	$(VENV)/bin/ruff check --fix --select I,UP035,RUF100,E702 --exit-zero bayescal tests benchmarks
	$(VENV)/bin/ruff format bayescal tests benchmarks

# Build the wheel and sdist, install the wheel in a clean venv, run a smoke fit there.
dist-check: $(DEV_STAMP)
	bash .ci/dist_check.sh $(PY)

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache docs/_build docs/api/generated dist build
