"""``python -m numa_effects.config FILE... [--config KEY=VALUE...]``: check a config as the
workflow will (``numa_effects.config.cli``)."""

import sys

from numa_effects.config.cli import main

sys.exit(main())
