"""``python -m numa_effects.config FILE... [--config KEY=VALUE...]``: check a config as the
workflow will."""

import sys

from numa_effects.config import main

sys.exit(main())
