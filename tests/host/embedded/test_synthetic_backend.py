"""The synthetic backend: deterministic, configurable, and a Backend by protocol."""

from __future__ import annotations

import numpy as np
import pytest

from fastsim_embedded.backends import (
    UnknownBackend,
    backend_names,
    create_backend,
    register_backend,
)
from fastsim_embedded.backends.base import Backend, BackendSpec
from fastsim_embedded.backends.synthetic import SyntheticBackend
from fastsim_embedded.backends.synthetic import create_backend as create_synthetic


def _trace(spec: BackendSpec, ticks: int = 60) -> list[tuple[object, ...]]:
    backend: Backend = create_backend("synthetic", spec)
    backend.reset(0)
    trace: list[tuple[object, ...]] = []
    for tick in range(1, ticks + 1):
        script = backend.script(tick)
        if script.reset:
            backend.reset(tick)
        outcomes = [backend.apply_control(c) for c in script.commands]
        backend.step(1)
        sample = backend.sample_numeric()
        trace.append((script, tuple(outcomes), tuple((k, v.tobytes()) for k, v in sample.items())))
    return trace


def test_same_seed_same_trajectory() -> None:
    """Two synthetic scenes with the same spec produce byte-identical samples and scripts."""
    spec = BackendSpec(options={"numeric_channels": 9, "reset_every_s": 0.3}, sensor_hz=50, physics_hz=50, seed=7)
    assert _trace(spec) == _trace(spec)
    assert _trace(spec) != _trace(BackendSpec(options=dict(spec.options), sensor_hz=50, physics_hz=50, seed=8))


def test_channel_count_and_layout() -> None:
    """90 numeric channels: joint position/velocity and pose for 30 entities, read-only float64."""
    backend = create_synthetic(BackendSpec(options={"numeric_channels": 90}))
    channels = backend.channels()
    assert len(channels) == 90
    assert channels[0].name == "robot.joint_position"
    assert channels[2].shape == (7,)
    backend.reset(0)
    backend.step(1)
    values = backend.sample_numeric()
    assert len(values) == 90
    assert all(v.dtype == np.float64 and not v.flags.writeable for v in values.values())


def test_velocity_is_the_derivative_of_position() -> None:
    """Joint velocity matches the finite difference of joint position."""
    backend = create_synthetic(BackendSpec(sensor_hz=1000, physics_hz=1000, options={"command_every_s": None}))
    backend.reset(0)
    backend.step(1)
    before = backend.sample_numeric()["robot.joint_position"]
    backend.step(1)
    after = backend.sample_numeric()
    np.testing.assert_allclose((after["robot.joint_position"] - before) * 1000, after["robot.joint_velocity"], rtol=0.02, atol=1e-3)


def test_scripted_commands_events_and_resets() -> None:
    """Commands every 0.5 s, events every 1 s and resets every 0.4 s fall on the right ticks."""
    backend = create_synthetic(BackendSpec(sensor_hz=10, physics_hz=10, options={"reset_every_s": 0.4}))
    scripts = {tick: backend.script(tick) for tick in range(1, 21)}
    assert [t for t, s in scripts.items() if s.commands] == [5, 10, 15, 20]
    assert [t for t, s in scripts.items() if s.events] == [10, 20]
    assert [t for t, s in scripts.items() if s.reset] == [5, 9, 13, 17]
    assert backend.apply_control(scripts[5].commands[0]).accepted


def test_registry_by_name() -> None:
    """Backends are chosen by name; an unknown name lists the known ones."""
    assert {"synthetic", "mujoco"} <= set(backend_names())
    register_backend("synthetic-alias", create_synthetic)
    assert isinstance(create_backend("synthetic-alias", BackendSpec()), SyntheticBackend)
    with pytest.raises(UnknownBackend, match="synthetic"):
        create_backend("nope", BackendSpec())
