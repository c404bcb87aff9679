"""numa-effects: the importable library behind the Snakemake workflow.

One concern per module (after psf/pyperf); tests/test_report_registry.py fails when a module is
not listed here.

Machine and plan:

- ``cpulist``: Linux CPU-list strings ("0-3,8") <-> sorted int tuples.
- ``topology``: the machine's nodes, packages, cores and SMT siblings (sysfs, ``lscpu -p``, JSON).
- ``machine``: machine facts recorded once per run in ``machine.json`` (kernel NUMA knobs, ...).
- ``placement``: pure planner (topology, threads, placement, use_smt) -> numactl arguments.
- ``grid``: the config's grid expanded into runnable cells and skipped cells with reasons;
  ``grid.KEYS``, the cell key columns.
- ``memory``: each cell's memory estimated while planning; cells that cannot fit are skipped.
- ``manifest``: the grid manifest (cells and replicates asked for, digest in its name).
- ``config``: the config checked before any job starts, one line per problem (a sub-package:
  Snakemake and ``python -m numa_effects.config`` run the same check).
- ``models``: the torchvision model names, checked in (no torch import at parse time).
- ``optimizations``: the registry of model optimizations (eager, TorchScript, ...).

Measuring one cell:

- ``stats``: summary statistics of latency samples; the order-statistic CI of the median.
- ``measure``: the timing loop: warm-up, adaptive or fixed stopping, which iterations count.
- ``runner``: the one measuring stack: k >= 1 pinned instances driven round by round (cells,
  the peak and packing groups alike): start, time, probe, retry, verify.
- ``flops``: FLOPs per forward pass (FlopCounterMode) and the efficiency columns.
- ``peak``: the float32 GEMM peak, a workload of the one measuring stack, and peak.csv.
- ``provenance``: versions, environment, machine facts, binding read back from /proc.
- ``verify``: proof from inside the running cell that threads and memory sit where planned.
- ``contention``: noise and concurrency guards (was anything else running?).
- ``cellresult``: the cell JSON result model and atomic writes.
- ``launcher``: one cell (or peak) end to end: plan re-check, the runner, the result file.
- ``supervise``: starting and supervising pinned children; classifying how they ended.
- ``causes``: the failure causes a cell can end with, one line of meaning each.
- ``cell``: the pinned instance process of every measurement
  (``python -m numa_effects.measure.cell``), answering the runner's ``go``/``verify``.
- ``runlock``: stale Snakemake locks after a killed run, told apart from live ones.

Packing (PackRat's question on the user's grid):

- ``packing``: which <instances, threads, batch> minimises latency for a batch and core budget
  (``Planner``: with the interference model; the profile's jobs).
- ``interference`` (plan): the interference model s(x) = 1 + beta x^2, its fit and a plan's
  predicted latency with its interval; (tables) ``tables/interference.csv``, the profile.
- ``packing_run`` (measure.group): measure packing configurations (fat and candidates, or an
  interference profile: alone and k side by side, per replicate) with the runner.
- ``packing_table``: ``tables/packing.csv``: each plan predicted alone, with interference and
  measured, and the recommendation; ``packing_candidates.csv``.
- ``packing_plots``: the report's Packing figures, drawn from ``tables/packing.csv`` and
  ``tables/interference.csv``.

Tables and report:

- ``tidy``: cell JSONs -> tidy tables.
- ``degradation``: placement vs sequential and optimization vs eager, with bootstrap CIs.
- ``packrat``: PackRat's published results imported as this project's tidy tables.
- ``summary``: the short text summary a run ends with.
- ``compare_runs``: result folders compared cell by cell (config key ``compare``): matching on
  every key column, the ratio with its two-level CI and a verdict, the geometric mean over cells,
  provenance differences, cells of one run only (``plan.compare`` resolves the key).
- ``figures``: the figure-family registry (sections, captions, draw functions) and which
  figures a grid supports (pure, imported at parse time).
- ``figure_data``: the tidy tables loaded and shaped for the figures (pandas, no matplotlib).
- ``style``: colours, labels and the marks of failed / skipped / missing / disturbed cells.
- ``plots``: drawing the figures (matplotlib), dispatched through the registry.
- ``report_html``: the self-contained report page ``results/report/index.html``.
- ``compare_plots``, ``compare_page``: a comparison's forest plots and heatmaps, and its page
  ``results/compare/<name>/index.html``.
"""

__version__ = "0.1.0"
