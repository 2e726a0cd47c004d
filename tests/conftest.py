"""Shared pytest configuration: hypothesis profiles and the off-screen GL default."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

os.environ.setdefault("MUJOCO_GL", "egl")

settings.register_profile(
    "ci",
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "dev",
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "thorough",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_unconfigure(config: object) -> None:
    """A finished run must end: a hang after the last test (a native sink flushing at exit, a
    stray non-daemon thread) prints every thread's stack and exits 1 after five minutes,
    instead of holding CI until its own limit (pytest-timeout covers the tests themselves)."""
    import faulthandler

    faulthandler.dump_traceback_later(300, exit=True)
