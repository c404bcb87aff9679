# numa-effects: the two commands are `make run` (default pipeline) and `make test` (test suite).
# Both create .venv with the pinned requirements if it is missing or out of date.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat requirements.txt requirements-dev.txt | md5sum | cut -c1-12)
CORES ?= 1
SNAKEMAKE_ARGS ?=
PYTEST_ARGS ?=

RESULTS ?=

.PHONY: docs-img docs-thumbs run deploy check-config retry-failed test check lint format bench loadtest venv sysdeps clean help

# `make run` and `make check-config` check the command line (SNAKEMAKE_ARGS) and the config
# files before Snakemake reads them: one line per problem naming the key, file or item
# (numa_effects.config.cli), and the Snakemake they start never waits for a Slurm controller
# that does not answer (numa_effects.slurmconf).
CHECKED := $(BIN)/python workflow/scripts/check_config.py

help:
	@echo "make run    - run the default pipeline (config/config.yaml) into results/"
	@echo "make deploy OBJECTIVE=throughput [ROLE=all-cores] [ARGS='-- prog ...'] - start it"
	@echo "make check-config - check SNAKEMAKE_ARGS and the config they make, run nothing"
	@echo "make retry-failed - re-run only the failed cells (RESULTS=folder if not results/)"
	@echo "make test   - lint (ruff, snakefmt, snakemake --lint) and run the test suite"
	@echo "make check  - the fast inner loop: lint and the unit tests (no torch or snakemake runs)"
	@echo "make bench  - run the benchmarks in benchmarks/ (slow; not part of make test)"
	@echo "make loadtest - the recommendation and its strongest baseline under MLPerf's LoadGen"
	@echo "               (OBJECTIVE=throughput or a row of recommendation.csv; RESULTS=folder)"
	@echo "make format - format Python (ruff) and Snakemake files (snakefmt)"
	@echo "make venv   - .venv with the pinned requirements and the numa-effects command"
	@echo "make docs-img - redraw docs/img/placements.svg and rulegraph.svg (tools/docs_img.py)"
	@echo "make docs-thumbs RUN=<results> [MORE=<results>...] - docs/img/thumbs/, report-4node.png"

$(STAMP): requirements.txt requirements-dev.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "error: Python >= 3.11 is required (set PYTHON=...)" >&2; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -r requirements-dev.txt
	$(BIN)/python -m pip install -q --no-deps -e .
	rm -f $(VENV)/.installed-*
	touch $@

# The package, editable, with its command (`numa-effects`); again when pyproject.toml changes.
$(BIN)/numa-effects: pyproject.toml | $(STAMP)
	$(BIN)/python -m pip install -q --no-deps -e .
	touch $@

venv: $(STAMP) $(BIN)/numa-effects

sysdeps:
	tools/install-system-deps

run: venv sysdeps
	$(CHECKED) --run --profile profiles/local --cores $(CORES) all $(SNAKEMAKE_ARGS)

# Start what the run recommends, pinned as measured (docs/deploy.md, "Starting it"): the
# reference server, or the program in ARGS after `--`; ARGS=--print prints the sh lines instead.
OBJECTIVE ?=
ROLE ?= recommended
ARGS ?=
deploy: $(STAMP)
	PYTHONPATH=workflow/scripts $(BIN)/python -m numa_effects launch --results $(or $(RESULTS),results) \
		$(if $(OBJECTIVE),--objective $(OBJECTIVE)) --role $(ROLE) $(ARGS)

check-config: venv
	$(CHECKED) --snakemake --profile profiles/local --cores $(CORES) all $(SNAKEMAKE_ARGS)

# Re-run only the cells whose result says failed (docs/troubleshooting.md). Pass the
# same SNAKEMAKE_ARGS (e.g. --configfile) as the run that failed; RESULTS=folder if not results.
retry-failed: venv sysdeps
	@failed="$$($(BIN)/python workflow/scripts/failed_cells.py $(RESULTS))" || exit 1; \
	if [ -z "$$failed" ]; then echo "no failed cells: nothing to retry"; \
	else echo "retrying $$(echo "$$failed" | wc -l) failed cell(s)"; \
	$(CHECKED) --run --cores $(CORES) all $(SNAKEMAKE_ARGS) --forcerun $$failed; fi

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/snakefmt --check Snakefile workflow/rules
	$(BIN)/snakemake --lint

test: venv sysdeps lint
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest $(PYTEST_ARGS)

# The inner loop while developing: lint and every test without a marker (pure logic on
# fixtures; no torch model, no snakemake run, no guest, no Slurm). `make test` is what CI runs.
UNIT_TESTS := -m "not integration and not numa_vm and not slurm"
check: venv lint
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m pytest $(UNIT_TESTS) -q $(PYTEST_ARGS)

format: venv
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .
	$(BIN)/snakefmt Snakefile workflow/rules

bench: venv sysdeps
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m benchmarks $(BENCH_ARGS)

# The deploy answer under load (numa-effects loadtest, docs/deploy.md): LoadGen's Offline and a
# Server bisection against the recommendation and its strongest baseline, into
# tables/loadtest.csv of the results folder. OBJECTIVE: a row of tables/recommendation.csv
# (throughput when unset).
LOADTEST_ARGS ?=
loadtest: venv sysdeps
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/python -m numa_effects loadtest \
		--results $(or $(RESULTS),results) --objective "$(or $(OBJECTIVE),throughput)" \
		$(LOADTEST_ARGS)
	$(BIN)/python -m numa_effects.report.loadtest_plots $(or $(RESULTS),results)

# The manual's generated pictures; tests/test_docs_img.py fails when one is stale.
docs-img: venv
	tools/install-system-deps --docs
	$(BIN)/python tools/docs_img.py

# docs/report.md's thumbnails and the README's screenshot from a drawn multi-node run
# (tests/numa_vm/README.md, "Thumbnails"); MORE: folders for the families RUN lacks
docs-thumbs: venv
	@test -n "$(RUN)" || { echo "error: make docs-thumbs RUN=<results folder> [MORE=...]" >&2; exit 2; }
	$(BIN)/python tools/docs_thumbs.py $(RUN) $(MORE)

clean:
	rm -rf results .snakemake
