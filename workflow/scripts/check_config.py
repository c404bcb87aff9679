#!/usr/bin/env python3
"""Check a config, or a whole Snakemake command line, before Snakemake reads it: one line per
problem naming the key, file and line (``numa_effects.config.cli``; no PYTHONPATH needed).

    python workflow/scripts/check_config.py my.yaml --config batch_sizes='[1,8]'
    python workflow/scripts/check_config.py --snakemake all --configfile my.yaml
    python workflow/scripts/check_config.py --run --cores 2 all --configfile my.yaml

(the last two are ``make check-config`` and ``make run`` with SNAKEMAKE_ARGS).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from numa_effects.config.cli import main

sys.exit(main())
