"""numa-effects: the importable library behind the Snakemake workflow.

Six layers, three shared modules and a feature folder whose modules each sit in a layer
(``compare``; docs/architecture.md); a module imports only from its own layer and the layers
below it (tests/test_layers.py). One concern per module (after
psf/pyperf); tests/test_report_registry.py fails when a module is not listed here.

Shared, the bottom:

- ``stats``: every statistic of the project (medians, two-level CIs, ratios, verdicts).
- ``runlock``: stale Snakemake locks after a killed run, told apart from live ones.
- ``slurmconf``: a Slurm config whose controller does not answer (every start of Snakemake
  would wait for it), found at once.

``config``: the config checked before any job starts, one line per problem (Snakemake and
``python -m numa_effects.config`` run the same check):

- ``config.problem``: ``Problem(key, text)`` and ``ConfigError``.
- ``config.schema``: the schema and what it allows, in words.
- ``config.messages``: jsonschema's errors as problems.
- ``config.coerce``: every value normalised to its schema type.
- ``config.checks``: what the schema cannot check (finite numbers, names against registries).
- ``config.registries``: the registries a config's names are checked against.
- ``config.paths``: keys naming files and folders, checked against the file system.
- ``config.files``: config files read as Snakemake reads them.
- ``config.readme``: config/README.md's key tables, generated from the schema.
- ``config.command``: a whole Snakemake command line checked before Snakemake reads it.
- ``config.cli``: ``python -m numa_effects.config`` (``make run``, ``make check-config``).

``plan``: pure planning, metadata only (no torch), imported while Snakemake parses the rules:

- ``plan.build``: the workflow's ``Plan``, computed once from the checked config.
- ``plan.spec``: the typed job (``Spec``, ``GroupSpec``), built here for every workload.
- ``plan.grid``: the axes registry (``AXES``, ``KEYS``, ``CellKey``) and the grid expanded into
  runnable and skipped cells.
- ``plan.settings``: the measurement settings and their defaults.
- ``plan.paths``: every output path, relative to the results folder.
- ``plan.code``: digests of the code's content that decide re-runs.
- ``plan.manifest``: the grid manifest (cells and replicates asked for).
- ``plan.stages``: replicates where the noise is (``two_stage``): the counts file, read back.
- ``plan.peaks``: the peak's windows: how many, and where in the job order they run.
- ``plan.topology``, ``plan.cpulist``: the machine's nodes, cores and SMT siblings.
- ``plan.placement``: the placement registry and the pure planner -> numactl arguments.
- ``plan.node_pairs``: the node-pair family's pairs on a topology (config key node_pairs).
- ``plan.binding``: when two placements are the same binding; which cell measures it once.
- ``plan.optimizations``: the optimization registry (steps, graph mode, dtype, requirements).
- ``plan.allocators``: the allocator registry (libraries, preload, proof).
- ``plan.cpu``: what the CPU computes fast (ISA flags, native bf16, theoretical peak).
- ``plan.host``: what the planning machine offers beyond its topology (skips with reasons).
- ``plan.memory``: each cell's memory estimate; cells that cannot fit are skipped.
- ``plan.models``: the torchvision model names, checked in.
- ``plan.packing``: the ``packing`` key resolved: budgets, the packing and profile jobs.
- ``plan.deploy``: what to deploy: the objectives, the baselines' registry, the ``deploy`` key.
- ``plan.launchers``: the layouts other tools choose by rule (``run_cpu`` as it computes them).
- ``plan.cost``: the run's wall time estimated before any job; the grid shrunk to a budget.
- ``plan.remeasure``: what a run measures, why, and its estimated time (the dry run's line).

``analysis``: the post-run analysis over the tables' rows, pure (no I/O, no torch):

- ``analysis.packing``: PackRat's question: the best <instances, threads, batch> per budget.
- ``analysis.planner``: the same with interference, per node; the optimizer's rows.
- ``analysis.interference``: the interference model s(x) = 1 + beta x^2 and a plan's interval.
- ``analysis.deploy_plan``: the configurations the deploy answer measures, searched from the
  cells.

``measure``: the one measuring stack (cells, peaks, memory probes, packing groups, interference
profiles):

- ``measure.job``: the front door: one job end to end (preflight, runner, the workload's
  summary and check, the status decided once, the atomic write), a cell's or a group's.
- ``measure.record``: the typed record (``Record``, ``GroupRecord``, ``Failure``), its format
  and atomic writes.
- ``measure.runner``: k >= 1 pinned instances driven round by round: start, time, probe,
  retry, verify.
- ``measure.cell``: the pinned instance process of every measurement.
- ``measure.workloads``: the registry of workloads, one module each with one interface:
- ``measure.workloads.model``: a torchvision model with its optimization (the optimizations'
  runtime code, ``bf16_aot``'s packaging), inspected after its timed steps.
- ``measure.workloads.aot``: ``bf16_aot``'s exported module and its packaging child process.
- ``measure.workloads.dtype_peaks``: the peak per dtype on the models' path (``efficiency``).
- ``measure.workloads.memory_probe``: idle latency and read bandwidth of one node pair (a
  pointer chase and a read pass in C compiled at run time): the measured memory matrix.
- ``measure.builder``: the cell's torchvision model, its module imported alone where it can be.
- ``measure.supervise``: starting and supervising pinned children; how they ended.
- ``measure.timing``: the timing loop: warm-up, stopping rules, which iterations count.
- ``measure.contention``: was anything else running where a cell was measured?
- ``measure.verify``: proof from inside the cell that threads and memory sit as planned.
- ``measure.provenance``: binding read back, versions, environment, load.
- ``measure.machine``: machine facts recorded once per run in ``machine.json``.
- ``measure.causes``: the failure causes, one line of meaning each.
- ``measure.onednn``: which oneDNN kernels a model really ran.
- ``measure.numerics``: agreement of an optimized model with float32 eager.
- ``measure.deploy``: the deploy answer's configurations in ABBA rounds; their gains judged.
- ``measure.progress``: the run's progress line with an ETA, printed as each measuring job ends.

``tables``: result files -> tidy tables:

- ``tables.tidy``: the tables' one reader (typed booleans and integers) and one writer.
- ``tables.cells``: cell records -> cells.csv, samples.csv, skipped.csv, failures.csv.
- ``tables.stages``: the first stage's replicates -> each cell's replicates in all (Stein).
- ``tables.speed``: with the canary, each cell's latency at the run's reference speed.
- ``tables.degradation``: placement vs its baseline, optimization vs eager (degradation.csv, ...).
- ``tables.precision``: each optimization and allocator vs float32 eager with glibc.
- ``tables.history``: the records a re-run replaces kept first; another machine's folder refused.
- ``tables.formats``: a results folder of another version (records, cells.csv) refused in one line.
- ``tables.flops``: FLOPs per forward pass and the efficiency columns.
- ``tables.peak``: peak.csv.
- ``tables.memory_matrix``: memory_matrix.csv, the node pairs' latency and bandwidth beside the
  firmware distances and each CPU node's local diagonal.
- ``tables.packing``: packing.csv and packing_candidates.csv.
- ``tables.interference``: interference.csv, the profile.
- ``tables.packrat``: PackRat's published results imported as tidy tables.
- ``tables.summary``: the short text summary a run ends with.
- ``tables.deploy``: recommendation.csv: what to deploy, with the gains over the baselines.

``report``: figures and pages, drawn from the tables only:

- ``report.families``: the figure families and the page sections they stand in (the registry).
- ``report.metrics``: latency or throughput, what a figure shows of a cell.
- ``report.figures``: which figures a grid's cells support (planned at parse time).
- ``report.baselines``: which allocator's cells a figure shows; eager, the Precision baseline.
- ``report.empty``: what a section says when it has no figure.
- ``report.data``: the tables loaded and shaped for the figures (no matplotlib).
- ``report.style``: colours, labels, the marks of cells that are not a clean value.
- ``report.drawers``: ``@drawer``, a family's draw function registered.
- ``report.drawing``: the drawing helpers the figure modules share (matplotlib).
- ``report.plots``: ``draw`` (a family's figure by its draw function) and ``save``.
- ``report.sequential_plots``, ``report.numa_plots``, ``report.precision_plots``,
  ``report.packing_plots``, ``report.node_pair_plots``: each section's figures.
- ``report.markup``: the HTML both pages are made of.
- ``report.page``: the self-contained report page.
- ``report.deploy_section``: the page's first section, "What to deploy".

``compare``: comparing result folders (config key ``compare``), one module per layer
(tests/test_layers.py's ``FEATURES``):

- ``compare.statistics`` (stats): one cell by two runs, the verdict, the geometric mean.
- ``compare.settings`` (plan): the ``compare`` key resolved (folders, labels, the name).
- ``compare.check`` (config): the key checked against the file system and the axes.
- ``compare.runs`` (tables): the folders read, checked and their cells matched.
- ``compare.tables`` (tables): compare.csv, summary.csv, unmatched.csv and peaks.csv.
- ``compare.provenance`` (tables): every recorded fact of each run; one machine or several.
- ``compare.plots`` (report): a comparison's figures.
- ``compare.page`` (report): a comparison's page.
"""

__version__ = "0.1.0"
