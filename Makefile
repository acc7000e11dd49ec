# The README's two commands: `make demo` and `make test`. Each sets up .venv from scratch
# (a Python >= 3.12 is found on PATH or among pyenv's versions) and then runs.
SHELL := /bin/bash
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
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

.PHONY: demo test test-all bench setup clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	@base=$$($(FIND_PYTHON)); \
	if [ -z "$$base" ]; then echo "bayescal needs Python >= 3.12: install it (e.g. 'pyenv install 3.12') and run make again." >&2; exit 1; fi; \
	echo "Using $$base to create $(VENV)"; \
	rm -rf $(VENV) && "$$base" -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/bayescal demo --out $(OUT)

test: $(STAMP)
	$(PY) -m pytest -q

test-all: $(STAMP)
	$(PY) -m pytest -q -m ''

bench: $(STAMP)
	$(PY) benchmarks/run.py

clean:
	rm -rf $(VENV) $(OUT) .pytest_cache
