"""The DROID-like MuJoCo scene: joint vector, cameras, calibration, control and reset."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import pytest

pytestmark = pytest.mark.mujoco

if TYPE_CHECKING:
    from fastsim_embedded.backends.mujoco_scene import MujocoDroidScene

scene_mod = pytest.importorskip("fastsim_embedded.backends.mujoco_scene")

TICK_DT = 1 / 30


@pytest.fixture(scope="module")
def scene() -> Iterator[MujocoDroidScene]:
    """One small scene per module (renderers are reused), reset before each use by tests."""
    s: MujocoDroidScene = scene_mod.MujocoDroidScene(width=160, height=120)
    yield s
    s.close()


def _run_script(scene: MujocoDroidScene, ticks: int) -> None:
    for tick in range(ticks):
        scene.apply_command(scene.scripted_command(tick, TICK_DT))
        scene.advance(TICK_DT)


def test_joint_vector_is_13_float64_in_rad(scene: MujocoDroidScene) -> None:
    """Position and velocity are 13-entry read-only float64 vectors; every unit is rad."""
    scene.reset()
    pos, vel = scene.joint_position(), scene.joint_velocity()
    for value in (pos, vel):
        assert value.shape == (13,)
        assert value.dtype == np.float64
        assert not value.flags.writeable
        assert np.all(np.isfinite(value))
    assert len(scene_mod.JOINT_NAMES) == 13
    assert scene_mod.JOINT_NAMES[:7] == tuple(f"joint{i}" for i in range(1, 8))
    assert scene_mod.JOINT_UNITS == ("rad",) * 13
    assert pos[3] == pytest.approx(-2.2)


def test_cameras_render_non_trivial_images(scene: MujocoDroidScene) -> None:
    """Each of the three cameras renders a read-only uint8 RGB image with real content."""
    scene.reset()
    assert scene_mod.CAMERA_NAMES == ("exterior_left", "exterior_right", "wrist")
    for camera in scene_mod.CAMERA_NAMES:
        image = scene.render(camera)
        assert image.shape == (120, 160, 3)
        assert image.dtype == np.uint8
        assert not image.flags.writeable
        assert image.std() > 10.0
        assert len(np.unique(image.reshape(-1, 3), axis=0)) > 50


def test_render_size_is_configurable(scene: MujocoDroidScene) -> None:
    """A different resolution renders at that size and K follows it."""
    image = scene.render("wrist", width=64, height=48)
    assert image.shape == (48, 64, 3)
    k = scene.intrinsics("wrist", width=64, height=48)
    assert k[0, 2] == pytest.approx(31.5)
    assert k[1, 2] == pytest.approx(23.5)


def test_intrinsics_match_fovy(scene: MujocoDroidScene) -> None:
    """K is float64 3x3 with fy = (H/2)/tan(fovy/2), fx = fy, centre at ((W-1)/2, (H-1)/2)."""
    for camera in scene_mod.CAMERA_NAMES:
        k = scene.intrinsics(camera)
        fovy = float(scene.model.camera(camera).fovy[0])
        f = 60.0 / math.tan(math.radians(fovy) / 2)
        assert k.dtype == np.float64
        assert k.shape == (3, 3)
        expected = np.array([[f, 0.0, 79.5], [0.0, f, 59.5], [0.0, 0.0, 1.0]])
        np.testing.assert_allclose(k, expected)


def test_extrinsics_are_unit_quaternions_in_float64(scene: MujocoDroidScene) -> None:
    """Translation is float64[3], quaternion float64[4] with unit norm and w >= 0."""
    scene.reset()
    for camera in scene_mod.CAMERA_NAMES:
        pose = scene.extrinsics(camera)
        assert pose.translation.shape == (3,)
        assert pose.translation.dtype == np.float64
        assert pose.quaternion_xyzw.shape == (4,)
        assert pose.quaternion_xyzw.dtype == np.float64
        assert np.linalg.norm(pose.quaternion_xyzw) == pytest.approx(1.0, abs=1e-12)
        assert pose.quaternion_xyzw[3] >= 0


def _rotation_xyzw(q: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    x, y, z, w = q
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def test_extrinsics_follow_the_opencv_convention(scene: MujocoDroidScene) -> None:
    """Projecting the red cube with K and the OpenCV pose lands on red pixels, in front."""
    scene.reset()
    cube = scene.object_position("cube")
    for camera in ("exterior_left", "exterior_right"):
        pose = scene.extrinsics(camera)
        rot = _rotation_xyzw(pose.quaternion_xyzw)
        p_cam = rot.T @ (cube - pose.translation)
        assert p_cam[2] > 0  # z forward
        u, v, _ = scene.intrinsics(camera) @ (p_cam / p_cam[2])
        r, g, b = scene.render(camera)[round(v), round(u)].astype(int)
        assert r > 120
        assert r > 2 * g
        assert r > 2 * b


def test_wrist_camera_moves_with_the_arm(scene: MujocoDroidScene) -> None:
    """The wrist camera's translation and orientation change as the arm moves; exteriors do not."""
    scene.reset()
    wrist0 = scene.extrinsics("wrist")
    left0 = scene.extrinsics("exterior_left")
    _run_script(scene, 30)
    wrist1 = scene.extrinsics("wrist")
    left1 = scene.extrinsics("exterior_left")
    assert np.linalg.norm(wrist1.translation - wrist0.translation) > 0.05
    assert abs(float(np.dot(wrist1.quaternion_xyzw, wrist0.quaternion_xyzw))) < 0.999
    np.testing.assert_allclose(left1.translation, left0.translation)
    np.testing.assert_allclose(left1.quaternion_xyzw, left0.quaternion_xyzw, atol=1e-12)


def test_poses_after_a_step_describe_the_new_joint_state(scene: MujocoDroidScene) -> None:
    """After a step, body and camera poses are those of the new qpos, not one step behind."""
    import mujoco

    scene.reset()
    _run_script(scene, 20)  # the arm is moving
    fresh = mujoco.MjData(scene.model)
    fresh.qpos[:] = scene.data.qpos
    fresh.qvel[:] = scene.data.qvel
    mujoco.mj_forward(scene.model, fresh)
    np.testing.assert_array_equal(scene.data.xpos, fresh.xpos)
    np.testing.assert_array_equal(scene.data.xquat, fresh.xquat)
    np.testing.assert_array_equal(scene.data.cam_xpos, fresh.cam_xpos)
    np.testing.assert_array_equal(scene.data.cam_xmat, fresh.cam_xmat)


def test_scripted_command_is_a_pure_function_of_tick(scene: MujocoDroidScene) -> None:
    """The script gives 8 finite float64 targets and the same tick gives the same command."""
    scene.reset()
    a = scene.scripted_command(40, TICK_DT)
    _run_script(scene, 10)
    b = scene.scripted_command(40, TICK_DT)
    assert a.shape == (8,)
    assert a.dtype == np.float64
    np.testing.assert_array_equal(a, b)
    assert scene_mod.COMMAND_UNITS == ("rad",) * 8


def test_commands_are_the_driven_joints_targets_in_rad_within_their_model_ranges(scene: MujocoDroidScene) -> None:
    """Actuator i drives COMMAND_NAMES[i]; the range is those joints' model ranges; ctrl = target; the script spans it."""
    m = scene.model
    joints = [int(j) for j in m.actuator_trnid[:, 0]]
    assert tuple(m.joint(j).name for j in joints) == scene_mod.COMMAND_NAMES
    assert scene_mod.COMMAND_NAMES[7] == "finger_joint" == scene_mod.JOINT_NAMES[7]
    low, high = scene.command_range()
    np.testing.assert_array_equal(low, m.jnt_range[joints, 0])
    np.testing.assert_array_equal(high, m.jnt_range[joints, 1])
    assert (low[7], high[7]) == (0.0, pytest.approx(0.8))
    target = np.array([*scene.waypoint("grasp"), 0.3125])
    scene.apply_command(target)
    np.testing.assert_array_equal(scene.data.ctrl, target)  # rad in, ctrl = gear (1) * target
    scene.apply_command([*scene.waypoint("grasp"), 5.0])
    assert scene.data.ctrl[7] == high[7]  # the scene itself clips to the actuator's ctrl range
    grip = [scene.scripted_command(k, TICK_DT)[7] for k in range(round(scene_mod.PICK_DURATION_S / TICK_DT) + 1)]
    assert (grip[0], grip[-1]) == (low[7], high[7])  # open at the start, fully closed for the lift


def test_bad_command_is_rejected(scene: MujocoDroidScene) -> None:
    """A command of the wrong length or with NaN is refused, naming the expected entries."""
    with pytest.raises(ValueError, match="expected 8 finite floats"):
        scene.apply_command([0.0] * 7)
    with pytest.raises(ValueError, match="expected 8 finite floats"):
        scene.apply_command([math.nan] * 8)


def test_scripted_pick_closes_the_gripper_and_lifts_the_cube(scene: MujocoDroidScene) -> None:
    """Driven only through commands, the pick closes the gripper on the cube and lifts it."""
    scene.reset()
    z0 = float(scene.object_position("cube")[2])
    _run_script(scene, round(scene_mod.PICK_DURATION_S / TICK_DT) + 5)
    assert scene.gripper_closure() > 0.3
    assert float(scene.object_position("cube")[2]) > z0 + 0.05
    gripper = scene.joint_position()[7:]
    np.testing.assert_allclose(gripper, gripper[0], atol=0.02)  # linkage follows finger_joint


def test_reset_restores_the_initial_state(scene: MujocoDroidScene) -> None:
    """After motion, reset() restores joints, velocities, objects, time and camera poses."""
    scene.reset()
    pos0 = scene.joint_position()
    cube0 = scene.object_position("cube")
    wrist0 = scene.extrinsics("wrist")
    _run_script(scene, 45)
    assert not np.allclose(scene.joint_position(), pos0)
    scene.reset()
    np.testing.assert_array_equal(scene.joint_position(), pos0)
    np.testing.assert_array_equal(scene.joint_velocity(), np.zeros(13))
    np.testing.assert_array_equal(scene.object_position("cube"), cube0)
    np.testing.assert_allclose(scene.extrinsics("wrist").translation, wrist0.translation)
    assert scene.sim_time == 0.0


def test_render_state_accessors(scene: MujocoDroidScene) -> None:
    """Body states, joint states and geometry cover the arm, gripper and objects."""
    scene.reset()
    bodies = {b.name: b for b in scene.body_states()}
    assert {"link7", "hand", "cube", "can", "block"} <= bodies.keys()
    np.testing.assert_allclose(bodies["cube"].position, scene.object_position("cube"))
    joints = {j.name: j for j in scene.joint_states()}
    assert joints["cube_free"].kind == "free"
    assert joints["cube_free"].qpos.shape == (7,)
    assert joints["cube_free"].qvel.shape == (6,)
    geoms = {g.name: g for g in scene.geometry()}
    assert geoms["table_top"].static
    assert geoms["table_top"].kind == "box"
    assert not geoms["cube"].static
    assert geoms["link1"].kind == "capsule"
    assert geoms["link1"].visual_only
    assert geoms["left_pad"].body == "left_inner_finger"


def test_invalid_mujoco_gl_names_the_variable() -> None:
    """An unusable MUJOCO_GL value fails with one message naming MUJOCO_GL=egl/osmesa."""
    code = "import fastsim_embedded.backends.mujoco_scene"
    env = {**os.environ, "MUJOCO_GL": "not-a-gl-backend"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0
    assert "RenderUnavailable" in last
    assert "MUJOCO_GL=not-a-gl-backend" in last
    assert "MUJOCO_GL=egl" in last
    assert "MUJOCO_GL=osmesa" in last


_BROKEN_GL_LIBRARY = """
import sys

class NoGlLibrary:
    def find_spec(self, name, path=None, target=None):
        if name == "mujoco":  # what PyOpenGL raises when MUJOCO_GL=osmesa has no libOSMesa
            raise AttributeError("'NoneType' object has no attribute 'glGetError'")

sys.meta_path.insert(0, NoGlLibrary())
import fastsim_embedded.backends.mujoco_scene
"""


@pytest.mark.parametrize("gl", ["osmesa", "broken-library"])
def test_missing_gl_library_names_the_variable(gl: str) -> None:
    """A GL backend whose library is missing fails importing with RenderUnavailable, not a raw error."""
    code = _BROKEN_GL_LIBRARY if gl == "broken-library" else "import fastsim_embedded.backends.mujoco_scene"
    env = {**os.environ, "MUJOCO_GL": "osmesa"}
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    if gl == "osmesa" and proc.returncode == 0:
        return  # this machine has libOSMesa: nothing to report
    last = proc.stderr.strip().splitlines()[-1]
    assert proc.returncode != 0
    assert "RenderUnavailable" in last
    assert "MUJOCO_GL=osmesa" in last
    assert "set MUJOCO_GL=egl" in last


def test_failed_gl_context_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """If the Renderer cannot get a GL context, render() raises RenderUnavailable naming MUJOCO_GL."""

    def no_context(*args: object, **kwargs: object) -> None:
        raise scene_mod.mujoco.FatalError("gladLoadGL error")

    monkeypatch.setattr(scene_mod.mujoco, "Renderer", no_context)
    s = scene_mod.MujocoDroidScene(width=8, height=8)
    with pytest.raises(scene_mod.RenderUnavailable, match=r"set MUJOCO_GL=egl .* or MUJOCO_GL=osmesa"):
        s.render("wrist")
