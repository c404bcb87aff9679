import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))

from numa_effects.plan import grid as grid_mod  # noqa: E402
from numa_effects.plan import manifest as manifest_mod  # noqa: E402
from numa_effects.plan import memory as memory_mod  # noqa: E402
from numa_effects.plan import topology as topology_mod  # noqa: E402
from numa_effects import runlock  # noqa: E402
from numa_effects import config as config_check  # noqa: E402
from numa_effects.measure import supervise as supervise_mod  # noqa: E402

# Bad input stops here, before any job (also under `snakemake -n`): exit status 1 and one line
# per problem naming the key and the allowed values, never a traceback; the config files are
# re-read for keys given twice. The same check as `python -m numa_effects.config`.
# Values are normalised in place (1000.0 -> 1000, 'true' -> true, ./results/ -> results) before
# anything below uses them. Cells are planned against the topology file named in the config (a
# cluster's compute nodes differ from the submit host) or against this machine; every cell
# re-checks where it runs.
TOPOLOGY = config_check.check_or_exit(
    config, configfiles=workflow.configfiles, workflow_dir=workflow.basedir
).topology

RESULTS = config["results"]

# Lock files left by a killed run (kill -9, reboot) would stop every later run until
# `snakemake --unlock`; they are removed when no run of this workflow is alive here, never
# while one is (then Snakemake's own lock refuses overlapping runs). See numa_effects.runlock.
if workflow.is_main_process:
    _stale = runlock.clear_stale_locks()
    if _stale:
        print(
            f"Removed {len(_stale)} stale Snakemake lock file(s) of an interrupted run "
            "(no run of this workflow is alive in this directory).",
            file=sys.stderr,
        )
# Cells estimated not to fit in this machine's memory are skipped (numa_effects.plan.memory).
GRID = grid_mod.expand(config, TOPOLOGY, memory_mod.machine_bytes(TOPOLOGY))
REPLICATES = grid_mod.replicates(config)
# Input of the aggregations: a grid change re-runs them even without .snakemake/ metadata.
GRID_MANIFEST = manifest_mod.content(GRID, REPLICATES)
GRID_MANIFEST_PATH = manifest_mod.path(RESULTS, GRID_MANIFEST)
# (cell, replicate) -> Snakemake priority: the earlier in grid.job_order, the higher.
_ORDER = grid_mod.job_order(GRID.cells, REPLICATES, int(config.get("order_seed") or 0))
JOB_PRIORITY = {job: len(_ORDER) - i for i, job in enumerate(_ORDER)}

# Benchmark cells never run concurrently on one machine, whatever --cores says: each holds
# the single bench_slot. A cluster profile raises the limit (cells get exclusive nodes there).
if "bench_slot" not in workflow.global_resources:
    workflow.register_resource("bench_slot", 1)

MEASUREMENT_KEYS = (
    "protocol",
    "target_rel_ci",
    "fixed_iterations",
    "warmup",
    "min_iterations",
    "max_iterations",
    "max_seconds_per_cell",
    "seed",
    "min_warmup_seconds",
    "min_timed_seconds",
    "exclude_foreign_pct",
    "contended_retries",
    "contended_backoff_s",
)


def cell_key(wildcards):
    return grid_mod.CellKey.from_wildcards(wildcards)


def cell_spec(wildcards):
    """Everything the pinned cell process needs; a change here re-runs the cell."""
    key = cell_key(wildcards)
    spec = {
        "cell": {
            **key.as_dict(),
            "image_size": config["image_size"],
            "use_smt": config["use_smt"],
        },
        "plan": GRID.cells[key].to_dict(),
        "settings": {k: config.get(k) for k in MEASUREMENT_KEYS},
        # which independent process of the cell this is (its own result file)
        "replicate": int(wildcards.replicate),
    }
    # torch.compile's cache lives under results/ so reruns reuse compiled kernels.
    if key.opt == "compile":
        spec["compile_cache_dir"] = str(
            Path(RESULTS, "cache", "torchinductor").resolve()
        )
    return spec


def cell_timeout(wildcards):
    """Seconds before a cell is killed: its budget x 3, plus process start and conversion."""
    return supervise_mod.cell_timeout_s(config)


def cell_priority(wildcards):
    return JOB_PRIORITY.get((cell_key(wildcards), int(wildcards.replicate)), 0)


def cell_outputs():
    """Every replicate of every cell (one result file each), in the order they run."""
    return grid_mod.replicate_outputs(GRID, REPLICATES, RESULTS)


def all_outputs():
    outputs = [
        # A missing input of the target makes Snakemake re-check the jobs that make it, with or
        # without .snakemake/ metadata: a changed grid's new manifest re-runs the aggregations.
        GRID_MANIFEST_PATH,
        f"{RESULTS}/machine.json",
        f"{RESULTS}/tables/cells.csv",
        f"{RESULTS}/tables/samples.csv",
        f"{RESULTS}/tables/skipped.csv",
        f"{RESULTS}/tables/failures.csv",
        f"{RESULTS}/tables/peak.csv",
        f"{RESULTS}/tables/degradation.csv",
        f"{RESULTS}/tables/opt_speedup.csv",
        f"{RESULTS}/summary.txt",
        f"{RESULTS}/report/index.html",
    ]
    if config.get("import"):
        # Imported results (workflow/rules/packrat.smk): nothing is measured on this machine.
        measured_only = {f"{RESULTS}/tables/peak.csv", f"{RESULTS}/tables/failures.csv"}
        outputs = [o for o in outputs if o not in measured_only]
    outputs += PACKING_OUTPUTS  # workflow/rules/packing.smk; [] when packing is off
    if not config.get("import"):
        # Every replicate's result is a target too: Snakemake does not re-make a deleted
        # intermediate file whose consumers are up to date, so a deleted or missing replicate
        # re-runs (alone, then the tables) only when it is asked for.
        outputs += cell_outputs()
    return outputs


def print_summary():
    summary = Path(RESULTS) / "summary.txt"
    if summary.exists():
        print(summary.read_text(), file=sys.stderr)


def skipped_rows():
    return [{**key.as_dict(), "reason": why} for key, why in GRID.skipped.items()]
