"""Benchmarks of the measurement harness (``make bench``; not part of ``make test``).

- ``cost``: adaptive protocol vs PackRat's fixed 10 + 100 iterations (time, CI half-width).
- ``fidelity``: the pipeline's median vs ``torch.utils.benchmark`` in the same pinning.
- ``overhead``: pipeline wall time vs timed inference; per-cell fixed costs.
- ``dag``: ``snakemake -n`` wall time for the PackRat grid (704 cells) and 10 240 cells.

Each prints one table and writes ``results/bench/<name>.csv``. The machine may be shared: every
benchmark run records the load average, and only ratios measured within one run are compared.
"""

import sys
from pathlib import Path

# The pipeline's package (numa_effects) lives in workflow/scripts: importable by every benchmark
# module, whichever of them is imported first (``python -m benchmarks``, ``make bench``).
SCRIPTS = Path(__file__).resolve().parent.parent / "workflow" / "scripts"
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))
