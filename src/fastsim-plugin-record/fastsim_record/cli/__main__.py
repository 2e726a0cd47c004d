"""``python -m fastsim_record.cli``."""

import sys

from fastsim_record.cli import main

sys.exit(main())
