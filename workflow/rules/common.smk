# The plan: the config checked (one line per problem, before any job, also under -n), then every
# cell, replicate, job order, peak and packing job and output path computed once by
# numa_effects.plan.build. The other rule files only read PLAN; no module state is mutated here.
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))

from numa_effects import config as config_mod  # noqa: E402
from numa_effects import runlock  # noqa: E402
from numa_effects import slurmconf  # noqa: E402
from numa_effects.plan import build as plan_mod  # noqa: E402
from numa_effects.plan import code as code_mod  # noqa: E402
from numa_effects.compare import settings as compare_plan  # noqa: E402
from numa_effects.plan import cost as cost_mod  # noqa: E402
from numa_effects.plan import grid as grid_mod  # noqa: E402
from numa_effects.plan import host as host_mod  # noqa: E402
from numa_effects.plan import memory as memory_mod  # noqa: E402
from numa_effects.plan import paths  # noqa: E402

# Bad input stops here, before any job (also under `snakemake -n`): exit status 1 and one line
# per problem naming the key and the allowed values, never a traceback; the config files are
# re-read for keys given twice. The same check as `numa-effects check-config`. Values are
# normalised in place (1000.0 -> 1000, 'true' -> true, ./results/ -> results) before the plan
# reads them. Cells are planned against the topology file named in the config (a cluster's
# compute nodes differ from the submit host) or against this machine; every cell verifies its
# plan where it runs.
TOPOLOGY = config_mod.check_or_exit(
    config, configfiles=workflow.configfiles, workflow_dir=workflow.basedir
).topology


def imported_keys(sources):
    """The cells of a PackRat import (pandas is imported only for an import)."""
    from numa_effects.tables import packrat as packrat_mod

    return packrat_mod.keys(sources)


def packrat_interference_inputs(folder):
    from numa_effects.tables import packrat as packrat_mod

    return [str(p) for p in packrat_mod.interference_files(folder)]


def packrat_inputs(sources):
    from numa_effects.tables import packrat as packrat_mod

    return packrat_mod.input_files(sources)


def compared_keys(settings):
    """The matched cells of a comparison of result folders (read only; pandas only then)."""
    from numa_effects.compare import runs as compare_runs

    return compare_runs.matched_keys(
        settings["runs"], settings["labels"], settings["across"]
    )


_SOURCES = (config.get("import") or {}).get("packrat") or []
_COMPARE = compare_plan.settings(config)
# torchao, a C++ compiler, native bf16 (config key bf16), the allocator libraries: cells this
# machine cannot (or under bf16: auto should not) run are skipped with the reason
_HOST = (
    None if (_SOURCES or _COMPARE) else host_mod.current(config.get("allocators") or ())
)


def build_plan(cfg):
    return plan_mod.build(
        cfg,
        TOPOLOGY,
        # cells estimated not to fit in this machine's memory are skipped (plan.memory)
        memory_bytes=memory_mod.machine_bytes(TOPOLOGY),
        imported_keys=imported_keys(_SOURCES) if _SOURCES else None,
        # what "the code changed" means for a re-run: its content (plan.code), never file times
        code=code_mod.digests(cache_file=".snakemake/numa-effects/code-digests.json"),
        # a comparison of result folders (config key compare) measures nothing: its figures
        # are planned from the cells its folders have in common
        compare_keys=compared_keys(_COMPARE) if _COMPARE else None,
        host=_HOST,
    )


# Time as an input (plan.cost): the run's wall time estimated before any job, and with a
# budget the grid shrunk in the documented order until the estimate fits; said in one line
# each, also under -n. The plan is built once; the budget's steps narrow a view of it, and
# the plan run is it narrowed to the fitted config (no cell planned twice). The estimate is
# scaled to this machine by a probe of a few seconds (measure.calibrate), kept in the results
# folder and reused; probed by the main process of a run started by `make run` (check_config.py
# --run sets cost_mod.CALIBRATE_ENV; Snakemake knows no dry run at parse time), never under -n,
# nor where nothing is measured here (a topology file plans another machine).
_WHOLE = build_plan(dict(config))
_CAPS = _HOST.capabilities if _HOST else None
_SCALE = cost_mod.UNCALIBRATED
if _WHOLE.measured and _CAPS is not None and not config.get("topology"):
    from numa_effects.measure import calibrate as calibrate_mod

    _SCALE = calibrate_mod.scale(
        _WHOLE.results,
        min(config["models"], key=lambda m: cost_mod.GFLOP_PER_IMAGE.get(m, 1e9)),
        config["image_size"],
        TOPOLOGY.usable_cpus(),
        _CAPS,
        os.environ.get(cost_mod.CALIBRATE_ENV) != "1" or not workflow.is_main_process,
    )
_FITTED, ESTIMATE = cost_mod.fit(config, TOPOLOGY, _WHOLE, caps=_CAPS, scale=_SCALE)
config.update(_FITTED)
PLAN = _WHOLE.narrowed(config)
RESULTS = PLAN.results
# the deploy job's time: what the budget leaves when it starts (measure.progress.allowance_s)
DEPLOY_ALLOWANCE = cost_mod.deploy_allowance(ESTIMATE, config.get("budget"), RESULTS)


_ANNOUNCED = []


def announce_plan(wildcards=None):
    """The budget's and the estimate's lines, printed once as an input of `all`, also under -n,
    and only when `all` is what runs, so a target Snakemake refuses prints nothing as if a run
    were coming (the targets are known only once the DAG is built, after the Snakefile is read).
    """
    if workflow.is_main_process and PLAN.measured and not _ANNOUNCED:
        _ANNOUNCED.append(True)
        for what in ESTIMATE.shrunk:
            print(f"budget: {what}", file=sys.stderr)
        print(f"numa-effects: {ESTIMATE.line(config.get('budget'))}", file=sys.stderr)
    return []


# Lock files left by a killed run (kill -9, reboot) would stop every later run until
# `snakemake --unlock`; they are removed when no run of this workflow is alive here, never
# while one is (then Snakemake's own lock refuses overlapping runs). See numa_effects.runlock.
if workflow.is_main_process:
    # A slurm.conf whose controller does not answer made this start wait (Snakemake's Slurm
    # plugin asks it at import): one line saying so (make run avoids it; numa_effects.slurmconf).
    _slurm = slurmconf.stale()
    if _slurm is not None:
        print(slurmconf.note(_slurm), file=sys.stderr)
    _stale = runlock.clear_stale_locks()
    if _stale:
        print(
            f"Removed {len(_stale)} stale Snakemake lock file(s) of an interrupted run "
            "(no run of this workflow is alive in this directory).",
            file=sys.stderr,
        )

# Benchmark cells never run concurrently on one machine, whatever --cores says: each holds
# the single bench_slot. A cluster profile raises the limit (cells get exclusive nodes there).
if "bench_slot" not in workflow.global_resources:
    workflow.register_resource("bench_slot", 1)


def cell_key(wildcards):
    return grid_mod.CellKey.from_wildcards(wildcards)


def replicate_outputs(wildcards=None):
    """Every replicate result the tables combine: under two_stage the first stage's and, once
    the checkpoint `replicates` has decided, each cell's further ones (numa_effects.plan.stages).
    """
    if not PLAN.two_stage:
        return PLAN.cell_outputs()
    from numa_effects.plan import stages as stages_mod

    return PLAN.cell_outputs(stages_mod.read(checkpoints.replicates.get().output[0]))


def print_summary():
    # a comparison: where its page is (not the results folder's own run summary)
    if PLAN.compare:
        page = Path(PLAN.compare_targets()[-1])
        if page.exists():
            print(
                f"comparison of {', '.join(PLAN.compare['runs'])}: {page}",
                file=sys.stderr,
            )
        return
    summary = Path(PLAN.path(paths.SUMMARY))
    if summary.exists():
        print(summary.read_text(), file=sys.stderr)
