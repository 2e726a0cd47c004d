#!/usr/bin/env python3
"""The specification's path for the DROID joint-state gate: runs ``acceptance/validate_record_joint_state.py``.

Usage (exactly as the plugin README shows it)::

    python acceptance/scripts/validate_record_joint_state.py \
        --config RUN.yaml --fsr FILE.fsr --report OUT.json

Same arguments, report and exit codes (0 pass, 1 fail, 2 usage or unreadable input).
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

if __name__ == "__main__":
    sys.argv[0] = str(Path(__file__).resolve().parents[1] / "validate_record_joint_state.py")
    runpy.run_path(sys.argv[0], run_name="__main__")
