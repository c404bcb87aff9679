"""numa-effects: the importable library behind the Snakemake workflow.

Six layers, three shared modules and a feature folder whose modules each sit in a layer; a
module imports only from its own layer and the layers below it (tests/test_layers.py). One
concern per module, said in its own docstring; docs/architecture.md explains the structure.
Every module is listed here (tests/test_report_registry.py).

Shared, the bottom: ``stats`` (every statistic), ``runlock`` (stale Snakemake locks told apart
from live ones), ``slurmconf`` (a Slurm config whose controller does not answer).

``config``, the config checked before any job starts, one line per problem: ``config.problem``,
``config.schema``, ``config.paths``,
``config.files``, ``config.command``, ``config.cli``.

``plan``, pure planning, metadata only (no torch), imported while Snakemake parses the rules:
``plan.build``, ``plan.spec``, ``plan.grid``, ``plan.settings``, ``plan.paths``, ``plan.code``,
``plan.manifest``, ``plan.stages``, ``plan.peaks``, ``plan.topology``, ``plan.cpulist``,
``plan.placement``, ``plan.node_pairs``, ``plan.binding``, ``plan.optimizations``,
``plan.allocators``, ``plan.cpu``, ``plan.host``, ``plan.memory``, ``plan.models``,
``plan.packing``, ``plan.deploy``, ``plan.launchers``, ``plan.cost``, ``plan.remeasure``,
``plan.durations``, ``plan.narrow``, ``plan.placement_docs``, ``plan.slices``, and the plan's parts
per product, ``plan.products`` (``plan.products.cells``, ``plan.products.peaks``,
``plan.products.memory``, ``plan.products.packing``, ``plan.products.interference``,
``plan.products.deploy``, ``plan.products.compare``, ``plan.products.targets``).

``analysis``, the post-run analysis over the tables' rows, pure: ``analysis.packing``,
``analysis.planner``, ``analysis.interference``, ``analysis.deploy_plan``.

``measure``, the one measuring stack: ``measure.job``, ``measure.record``, ``measure.runner``,
``measure.cell``, ``measure.workloads`` (``measure.workloads.model``,
``measure.workloads.aot``, ``measure.workloads.dtype_peaks``,
``measure.workloads.memory_probe``), ``measure.builder``, ``measure.supervise``,
``measure.timing``, ``measure.contention``, ``measure.verify``, ``measure.provenance``,
``measure.machine``, ``measure.causes``, ``measure.onednn``, ``measure.numerics``,
``measure.deploy``, ``measure.progress``, ``measure.warm``, ``measure.slicer``,
``measure.calibrate``.

``tables``, result files -> tidy tables: ``tables.tidy``, ``tables.cells``, ``tables.stages``,
``tables.speed``, ``tables.degradation``, ``tables.precision``, ``tables.history``,
``tables.formats``, ``tables.flops``, ``tables.peak``, ``tables.memory_matrix``,
``tables.packing``, ``tables.interference``, ``tables.packrat``, ``tables.summary``,
``tables.deploy``, ``tables.deploy_choice``.

``report``, figures and pages drawn from the tables only: ``report.families``,
``report.metrics``, ``report.figures``, ``report.baselines``, ``report.empty``, ``report.data``,
``report.style``, ``report.drawers``, ``report.drawing``, ``report.plots``,
``report.sequential_plots``, ``report.numa_plots``, ``report.precision_plots``,
``report.packing_plots``, ``report.node_pair_plots``, ``report.markup``, ``report.page``,
``report.deploy_section``, ``report.loadtest_plots``.

``compare``, comparing result folders (config key ``compare``), one module per layer
(tests/test_layers.py's ``FEATURES``): ``compare.statistics`` (stats), ``compare.settings``
(plan), ``compare.check`` and ``compare.command`` (config), ``compare.runs``, ``compare.tables`` and
``compare.provenance`` (tables), ``compare.plots`` and ``compare.page`` (report).

Entry points beside the layers: ``cli`` (the ``numa-effects`` command), ``launch`` (a deploy
answer started as measured) and ``loadtest`` (it driven by MLPerf's LoadGen).
"""

__version__ = "0.1.0"
