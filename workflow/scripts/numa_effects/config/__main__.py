"""``python -m numa_effects.config``: check a config as the workflow will (``cli``)."""

import sys

from numa_effects.config.cli import main

sys.exit(main())
