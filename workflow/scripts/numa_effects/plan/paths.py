"""Every output path of the workflow, relative to the results folder: one place, so the rules,
the entry scripts and the tests name a file the same way. ``{...}`` fields are Snakemake
wildcards (or ``str.format`` fields); ``Plan.path`` puts the results folder in front."""

from __future__ import annotations

from numa_effects.plan import grid

MACHINE = "machine.json"
SUMMARY = "summary.txt"
TABLE = "tables/{name}.csv"
MANIFEST = "grid/manifest-{digest}.json"
# each cell's replicates in all under two_stage (plan.stages), named after the manifest's digest
REPLICATES = "grid/replicates-{digest}.json"
CELL = grid.CELL_PATTERN
CELL_LOG = grid.LOG_PATTERN
# one window of a dtype's peak at a placement and thread count (plan.peaks)
PEAK = "peak/{placement}/t{threads}/{dtype}/w{window}.json"
PEAK_LOG = "logs/peak/{placement}/t{threads}/{dtype}/w{window}.log"
# the memory probe of one node pair (measure.workloads.memory_probe): CPUs of node cpu, memory
# on mem
MEMORY = "memory/n{cpu}m{mem}.json"
MEMORY_LOG = "logs/memory/n{cpu}m{mem}.log"
PACKING_PLANS = "packing/{model}/{opt}/plans.json"
PACKING_PLANS_LOG = "logs/packing/{model}/{opt}/plans.log"
PACKING_RUN = "packing/{model}/{opt}/c{budget}/bs{batch_size}.json"
PACKING_RUN_LOG = "logs/packing/{model}/{opt}/c{budget}/bs{batch_size}.log"
# the interference profile: k identical instances side by side, per (budget, threads)
INTERFERENCE_RUN = "packing/{model}/{opt}/c{budget}/interference/t{threads}.json"
INTERFERENCE_RUN_LOG = "logs/packing/{model}/{opt}/c{budget}/interference/t{threads}.log"
# what to deploy (plan.deploy): the configurations searched after the cells, their measurement
DEPLOY_PLAN = "deploy/plan.json"
DEPLOY_PLAN_LOG = "logs/deploy/plan.log"
DEPLOY_RUN = "deploy/run.json"
DEPLOY_RUN_LOG = "logs/deploy/run.log"
# the throughput answer under load (numa-effects loadtest): LoadGen's logs per role, the figure
LOADTEST_DIR = "loadtest"
LOADTEST_FIGURE = "report/figures/{model}/latency_under_load/throughput.{ext}"
REPORT_DIR = "report"
REPORT_PAGE = "report/index.html"
FIGURE_DIR = "report/figures"
LOG = "logs/{name}.log"
COMPILE_CACHE = "cache/torchinductor"
MEMORY_PROBE_CACHE = "cache/memory_probe"  # the probe's compiled C code (workloads.memory_probe)
# A comparison of result folders (config key ``compare``): one folder per comparison name.
COMPARE_DIR = "compare/{compare}"
COMPARE_TABLE = COMPARE_DIR + "/tables/{name}.csv"
COMPARE_PAGE = COMPARE_DIR + "/index.html"
COMPARE_FIGURE_DIR = COMPARE_DIR + "/figures"
COMPARE_LOG = "logs/compare/{compare}/{name}.log"
COMPARE_TABLES = ("compare", "summary", "provenance", "unmatched", "peaks")


# What a run (or an import) writes beside machine.json: a folder holding machine.json and one of
# these is a results folder.
RESULT_FOLDERS = tuple(dict.fromkeys(p.split("/")[0] for p in (MANIFEST, CELL, TABLE)))


def holds_results(folder) -> bool:
    """Whether ``folder`` (a pathlib.Path) is a results folder of a run or an import."""
    return (folder / MACHINE).is_file() and any((folder / d).is_dir() for d in RESULT_FOLDERS)


def table(name: str) -> str:
    return TABLE.format(name=name)


def log(name: str) -> str:
    return LOG.format(name=name)
