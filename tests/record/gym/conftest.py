"""The Gymnasium suite runs against real Gymnasium 1.x envs (MuJoCo renders through EGL)."""

from __future__ import annotations

import os

os.environ.setdefault("MUJOCO_GL", "egl")
