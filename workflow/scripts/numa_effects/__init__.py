"""numa-effects: the importable library behind the Snakemake workflow.

One concern per module (after psf/pyperf):

- ``cpulist``: Linux CPU-list strings ("0-3,8") <-> sorted int tuples.
- ``topology``: the machine's nodes, packages, cores and SMT siblings (sysfs, ``lscpu -p``, JSON).
- ``placement``: pure planner (topology, threads, placement, use_smt) -> numactl arguments.
- ``grid``: the config's grid expanded into runnable cells and skipped cells with reasons.
- ``optimizations``: the registry of model optimizations (eager, TorchScript, ...).
- ``stats``: summary statistics of latency samples; the order-statistic CI of the median.
- ``measure``: the timing loop: warm-up, adaptive or fixed stopping (no process handling).
- ``flops``: FLOPs per forward pass (FlopCounterMode) and the efficiency columns.
- ``peak``: the pinned float32 GEMM peak process (``python -m numa_effects.peak``).
- ``degradation``: placement vs sequential and optimization vs eager, with bootstrap CIs.
- ``provenance``: versions, environment, machine facts, binding read back from /proc.
- ``cellresult``: the cell JSON result model and atomic writes.
- ``launcher``: process orchestration: numactl command line, timeout, failure capture.
- ``cell``: the pinned child process entry point (``python -m numa_effects.cell``).
- ``tidy``: cell JSONs -> tidy tables.
"""

__version__ = "0.1.0"
