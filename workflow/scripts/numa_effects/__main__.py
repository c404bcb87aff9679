"""``python -m numa_effects <command>``: the ``numa-effects`` command (``cli``)."""

import sys

from numa_effects.cli import main

sys.exit(main())
