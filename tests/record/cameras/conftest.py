"""Fixtures for camera tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import CameraRun


@pytest.fixture
def camera_run(tmp_path: Path) -> CameraRun:
    """A runner for camera Runs on the embedded host."""
    return CameraRun(tmp_path)
