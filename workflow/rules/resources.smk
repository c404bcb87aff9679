# Job resources: ONE set of definitions for every executor. profiles/local and profiles/slurm
# add only executor specifics (cores or jobs, the bench_slot limit, status polling, site knobs).
#
# A benchmark job (one holding bench_slot, e.g. cell and peak) owns a whole machine. Locally the
# single bench_slot serialises them and `threads` = every CPU keeps other jobs off the machine;
# under Slurm each one is an exclusive node allocation with all of the node's CPUs and memory,
# and its job step spans all CPUs (the executor's srun asks for `threads` CPUs), so numactl
# can bind to any of them.
import math
import os

from snakemake.exceptions import WorkflowError

# Seconds a benchmark job needs on top of its process timeout: Slurm step start, the job's own
# snakemake parsing the workflow, writing outputs to a shared filesystem.
JOB_OVERHEAD_S = 300

# Slurm: mem_mb=0 asks for all of the node's memory (`sbatch --mem=0`). The executor plugin
# passes no --mem for mem_mb=0 (and warns "No job memory information") and refuses --mem in
# slurm_extra, so the request goes through sbatch's own input variable. Jobs with a memory
# request pass --mem on the command line, which takes precedence. Harmless without Slurm.
os.environ.setdefault("SBATCH_MEM_PER_NODE", "0")


def runtime_minutes(seconds):
    """Wall-time request (minutes) for a job whose work is killed after `seconds`."""
    return math.ceil((float(seconds) + JOB_OVERHEAD_S) / 60)


def bench_resources(timeout_s):
    """Resources of a benchmark job whose process is killed after timeout_s seconds."""
    return {
        "bench_slot": 1,
        "runtime": runtime_minutes(timeout_s),
        "mem_mb": 0,
        "slurm_extra": "--exclusive",
    }


def bench_threads(wildcards):
    """Every logical CPU of the planning topology: a benchmark job owns the whole machine."""
    require_cluster_topology()
    return len(PLAN.topology.cpus)


def require_cluster_topology():
    """Refuse to submit benchmark jobs to a cluster planned against the submit host.

    Every cluster job re-parses the workflow on its compute node; without a topology file it
    would plan against that node instead, so cells could vanish or change their plan between
    submit host and node (and re-run on every invocation)."""
    if (
        workflow.non_local_exec
        and workflow.is_main_process
        and not config.get("topology")
    ):
        raise WorkflowError(
            "benchmark jobs on a cluster need the compute nodes' topology, and config key "
            "'topology' is null (= this submit host). Capture it with a small job on the "
            "target partition first, then name it:\n"
            "    snakemake --profile profiles/slurm machine\n"
            "    snakemake --profile profiles/slurm all --config topology=results/machine.json\n"
            "(see docs/cluster.md)."
        )
