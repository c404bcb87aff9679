import sys
from pathlib import Path

from snakemake.utils import validate

sys.path.insert(0, str(Path(workflow.basedir) / "workflow" / "scripts"))

from numa_effects import grid as grid_mod  # noqa: E402
from numa_effects import topology as topology_mod  # noqa: E402

validate(config, schema="../schemas/config.schema.yaml")

RESULTS = config["results"]

# Cells are planned against the topology file named in the config (a cluster's compute nodes
# differ from the submit host) or against this machine; every cell re-checks where it runs.
TOPOLOGY = (
    topology_mod.load(config["topology"])
    if config.get("topology")
    else topology_mod.current()
)
GRID = grid_mod.expand(config, TOPOLOGY)

# Benchmark cells never run concurrently on one machine, whatever --cores says: each holds
# the single bench_slot. A cluster profile raises the limit (cells get exclusive nodes there).
if "bench_slot" not in workflow.global_resources:
    workflow.register_resource("bench_slot", 1)

MEASUREMENT_KEYS = (
    "warmup",
    "min_iterations",
    "max_iterations",
    "max_seconds_per_cell",
    "seed",
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
        "settings": {k: config[k] for k in MEASUREMENT_KEYS},
    }
    # torch.compile's cache lives under results/ so reruns reuse compiled kernels.
    if key.opt == "compile":
        spec["compile_cache_dir"] = str(
            Path(RESULTS, "cache", "torchinductor").resolve()
        )
    return spec


def cell_timeout(wildcards):
    """Seconds before a cell is killed: its budget x 3, plus process start and conversion."""
    return 3 * float(config["max_seconds_per_cell"]) + 120


def cell_outputs():
    return [key.path(RESULTS) for key in GRID.cells]


def all_outputs():
    return [
        f"{RESULTS}/machine.json",
        f"{RESULTS}/tables/cells.csv",
        f"{RESULTS}/tables/samples.csv",
        f"{RESULTS}/tables/skipped.csv",
        f"{RESULTS}/summary.txt",
    ]


def print_summary():
    summary = Path(RESULTS) / "summary.txt"
    if summary.exists():
        print(summary.read_text(), file=sys.stderr)


def skipped_rows():
    return [{**key.as_dict(), "reason": why} for key, why in GRID.skipped.items()]
