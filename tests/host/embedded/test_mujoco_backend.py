"""The `mujoco` backend: the DROID-like scene behind the embedded host's Backend protocol."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import pytest

from fastsim_contract.calibration import calibration_digest, intrinsic_matrix
from fastsim_embedded.backends import create_backend
from fastsim_embedded.backends.base import BackendSpec, ControlCommand

if TYPE_CHECKING:
    from fastsim_embedded.backends.mujoco_backend import MujocoBackend

pytestmark = pytest.mark.mujoco
pytest.importorskip("mujoco")

SMALL = {"width": 64, "height": 48}


def _backend(**options: object) -> MujocoBackend:
    spec = BackendSpec(options={**SMALL, **options}, sensor_hz=30.0, physics_hz=120.0)
    backend: MujocoBackend = create_backend("mujoco", spec)  # type: ignore[assignment]
    backend.reset(0)
    return backend


@pytest.fixture
def backend() -> Iterator[MujocoBackend]:
    """A small-render backend without periodic resets."""
    b = _backend(reset_every_s=None)
    yield b
    b.close()


def _run(backend: MujocoBackend, ticks: int, start: int = 1) -> int:
    """Drive ticks like the host loop (no cameras); returns the generation reached."""
    generation = 0
    for tick in range(start, start + ticks):
        script = backend.script(tick)
        if script.reset:
            generation += 1
            backend.reset(generation)
        for command in script.commands:
            assert backend.apply_control(command).accepted
        backend.step(4)
    return generation


def test_declares_joint_state_and_four_channels_per_camera(backend: MujocoBackend) -> None:
    """Two 13-entry float64 joint channels with units, then rgb/K/translation/quaternion per camera."""
    channels = {c.name: c for c in backend.channels()}
    pos, vel = channels["robot.joint_position"], channels["robot.joint_velocity"]
    assert (pos.kind, pos.dtype, pos.shape, pos.entity) == ("numeric", "float64", (13,), "robot")
    assert pos.units == ("rad",) * 13
    assert vel.units == ("rad/s",) * 13
    for cam in ("exterior_left", "exterior_right", "wrist"):
        base = f"sensors.{cam}.camera"
        assert channels[f"{base}.rgb"].shape == (48, 64, 3)
        assert channels[f"{base}.rgb"].dtype == "uint8"
        assert channels[f"{base}.intrinsics"].shape == (3, 3)
        assert channels[f"{base}.extrinsics.translation"].shape == (3,)
        assert channels[f"{base}.extrinsics.quaternion_xyzw"].shape == (4,)
    assert len(channels) == 2 + 3 * 4


def test_numeric_samples_match_the_declaration(backend: MujocoBackend) -> None:
    """sample_numeric returns read-only float64 (13,) arrays for both joint channels."""
    values = backend.sample_numeric()
    assert set(values) == {"robot.joint_position", "robot.joint_velocity"}
    for value in values.values():
        assert value.dtype == np.float64
        assert value.shape == (13,)
        assert not value.flags.writeable


def test_packed_sample_is_the_per_channel_samples_back_to_back(backend: MujocoBackend) -> None:
    """PackedSampling: one fresh read-only buffer equal to joint position then velocity, bit for bit."""
    _run(backend, 10)  # the arm is moving: velocities are not zero
    assert backend.numeric_packing() == (
        ("robot.joint_position", "<f8", (13,)), ("robot.joint_velocity", "<f8", (13,)),
    )
    packed = backend.sample_numeric_packed()
    values = backend.sample_numeric()
    expected = values["robot.joint_position"].tobytes() + values["robot.joint_velocity"].tobytes()
    assert packed.tobytes() == expected
    assert np.any(values["robot.joint_velocity"] != 0)
    assert not packed.flags.writeable
    assert packed.flags.c_contiguous
    assert backend.sample_numeric_packed() is not packed  # fresh each call, never mutated


def test_host_publishes_mujoco_ticks_packed() -> None:
    """The run loop picks PackedSampling for the MuJoCo backend when the plan selects its channels."""
    from fastsim_embedded.session.loop import observation_publisher

    class Host:
        bound: object = None

        def wants_observations(self) -> bool:
            return True

        def bind_numeric_packing(self, packing: object) -> bool:
            self.bound = packing
            return True

        def packed_observer(self, sample: Callable[[], object], max_block: int = 1) -> Callable[[], object]:
            return sample

    b = _backend(reset_every_s=None)
    try:
        host = Host()
        publish = observation_publisher(host, b)  # type: ignore[arg-type]
        assert publish is not None
        assert host.bound == b.numeric_packing()
        assert np.asarray(publish()).shape == (26,)
    finally:
        b.close()


def test_camera_readings_carry_the_calibration_digest(backend: MujocoBackend) -> None:
    """Every reading of a camera shares its profile digest; intrinsics carry the profile and K."""
    readings = backend.sample_cameras()
    assert len(readings) == 12
    for reading in readings:
        assert not reading.value.flags.writeable
        if reading.role == "intrinsics":
            assert reading.profile is not None
            assert calibration_digest(reading.profile) == reading.calibration_digest
            np.testing.assert_allclose(reading.value, intrinsic_matrix(reading.profile))
        else:
            assert reading.profile is None
    digests = {(r.camera, r.calibration_digest) for r in readings}
    assert len(digests) == 3


def test_selected_cameras_only(backend: MujocoBackend) -> None:
    """The cameras option limits declared channels and rendered readings."""
    b = _backend(cameras=["wrist"], reset_every_s=None)
    try:
        assert {r.camera for r in b.sample_cameras()} == {"wrist"}
        assert len(b.channels()) == 2 + 4
    finally:
        b.close()


def test_scripted_pick_runs_through_control_commands(backend: MujocoBackend) -> None:
    """The pick is issued as audited set_joint_targets commands and lifts the cube."""
    z0 = float(backend.scene.object_position("cube")[2])
    script = backend.script(1)
    assert [c.name for c in script.commands] == ["set_joint_targets"]
    assert len(script.commands[0].args["targets"]) == 8  # type: ignore[arg-type]
    assert [e.name for e in script.events] == ["pick.phase"]
    backend.step(4)
    _run(backend, 110, start=2)
    assert float(backend.scene.object_position("cube")[2]) > z0 + 0.05


def test_bad_commands_are_rejected_not_raised(backend: MujocoBackend) -> None:
    """Unknown names, targets or malformed args give a rejected outcome with the reason."""
    bad = [
        ControlCommand("c1", "teleport", "robot", {}),
        ControlCommand("c2", "set_joint_targets", "other", {"targets": [0.0] * 8}),
        ControlCommand("c3", "set_joint_targets", "robot", {"targets": [0.0] * 3}),
        ControlCommand("c4", "set_joint_targets", "robot", {"targets": "x"}),
    ]
    for command in bad:
        outcome = backend.apply_control(command)
        assert not outcome.accepted
        assert outcome.detail["error"]


def test_periodic_reset_starts_from_the_initial_state() -> None:
    """With reset_every_s the script asks for a reset and the state returns to its start."""
    b = _backend(reset_every_s=1.0)
    try:
        initial = b.sample_numeric()["robot.joint_position"]
        generation = _run(b, 31)
        assert generation == 1
        assert b.script(32).reset is False
        np.testing.assert_allclose(b.sample_numeric()["robot.joint_position"], initial, atol=0.05)
    finally:
        b.close()


def test_render_source_exposes_render_state(backend: MujocoBackend) -> None:
    """render_source() gives the robot's 13 joints and the objects' rigid poses."""
    state = backend.render_source().render_state()
    assert state["articulation/robot/joint_position"].shape == (13,)
    assert state["rigid/cube/pose"].shape == (7,)


def test_bad_options_are_rejected() -> None:
    """Unknown cameras and non-positive rates fail with the option's name."""
    with pytest.raises(ValueError, match="cameras"):
        create_backend("mujoco", BackendSpec(options={"cameras": ["top"]}))
    with pytest.raises(ValueError, match="control_hz"):
        create_backend("mujoco", BackendSpec(options={"control_hz": 0}))
