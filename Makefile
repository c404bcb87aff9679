# numa-effects: the two commands are `make run` (default pipeline) and `make test` (test suite).
# Both create .venv with the pinned requirements if it is missing or out of date.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt | md5sum | cut -c1-12)
CORES ?= 1
SNAKEMAKE_ARGS ?=
PYTEST_ARGS ?=

.PHONY: run test lint format bench venv sysdeps clean help

help:
	@echo "make run    - run the default pipeline (config/config.yaml) into results/"
	@echo "make test   - lint (ruff, snakefmt, snakemake --lint) and run the test suite"
	@echo "make bench  - run the benchmarks in benchmarks/ (slow; not part of make test)"
	@echo "make format - format Python (ruff) and Snakemake files (snakefmt)"

$(STAMP): requirements.txt requirements-dev.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "error: Python >= 3.11 is required (set PYTHON=...)" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	rm -f $(VENV)/.installed-*
	touch $@

venv: $(STAMP)

sysdeps:
	tools/install-system-deps

run: venv sysdeps
	$(BIN)/snakemake --cores $(CORES) all $(SNAKEMAKE_ARGS)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakefmt --check Snakefile workflow/rules
	$(BIN)/snakemake --lint

test: venv sysdeps lint
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest $(PYTEST_ARGS)

format: venv
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .
	$(BIN)/snakefmt Snakefile workflow/rules

bench: venv sysdeps
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m benchmarks $(BENCH_ARGS)

clean:
	rm -rf results .snakemake
