"""Shared pytest configuration: hypothesis profiles and the off-screen GL default."""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator

import pytest
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


@pytest.fixture(autouse=True)
def _collect_gym_renderers(request: pytest.FixtureRequest) -> Iterator[None]:
    """After a test of a module that makes Gymnasium envs: collect the garbage it left.

    Gymnasium's MuJoCo ``OffScreenViewer.close`` frees its EGL context, but its
    ``MjrContext`` is released only when the viewer object is collected, and
    ``mjr_freeContext`` then deletes GL objects by id in whatever context is current: a
    closed env collected by the GC in the middle of a later test deletes that test's
    framebuffer, and its frames come out black.  Collected here, right after the test that
    made them, they free nothing of another renderer's."""
    yield
    names = vars(request.module) if request.module is not None else {}
    if "gym" in names or "gymnasium" in names:
        gc.collect()
