"""Honest calibration of a Gymnasium MuJoCo env's ``render()`` frames, read from the renderer.

Gymnasium's MuJoCo envs render through ``env.unwrapped.mujoco_renderer``.  The camera
that drew the last frame is read from the model and data for a fixed camera of the model,
and from the off-screen viewer's ``MjvScene`` for the free (tracking) camera, whose pose
MuJoCo computes only there (a mono render draws from the average of the scene's two
GL eye cameras, as ``mjv_averageCamera`` gives it):

    | # | value            | fixed camera ``i``               | free or tracking camera             |
    |---|------------------|----------------------------------|-------------------------------------|
    | 1 | K                | ``pinhole_profile`` of the frame's size and the vertical field of view:  |
    |   |                  | ``model.cam_fovy[i]``            | ``2 atan(frustum_top / frustum_near)`` |
    | 2 | translation      | ``data.cam_xpos[i]`` (world, m)  | the eyes' mean ``pos``               |
    | 3 | quaternion_xyzw  | the OpenCV optical frame (z = forward, y = down): ``data.cam_xmat[i]``   |
    |   |                  | with its y and z axes negated    | z = ``forward``, y = ``-up``         |

K is computed once per (size, field of view); the pose only when its inputs change.  The
profile also says how the frames were made (``renderer``, profile rule 6: ``render.mujoco.renderer_facts``).

A non-MuJoCo env has no such source: ``calibration_of`` returns ``None`` and the recorder
records its frames as an ``uncalibrated`` camera (``gymnasium_cameras``) rather than invent
a K (``describe()`` says so).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from fastsim_contract.calibration import calibration_digest, pinhole_profile
from fastsim_contract.render_services import select_catalog
from fastsim_embedded.backends.base import Array, CameraReading
from fastsim_recording_format.encoding import readonly

__all__ = [
    "MujocoFrameCalibration", "MujocoJoints", "RenderSnapshot", "RenderSnapshots", "StagedRenderSource",
    "calibration_of", "frame_readings", "joints_of", "release_renderers", "render_observation_path",
    "render_source_of",
]


def _mujoco_parts(env: Any) -> tuple[Any, Any, Any] | None:
    """(model, data, renderer) of a Gymnasium MuJoCo env, else ``None``."""
    unwrapped = getattr(env, "unwrapped", env)
    model, data = getattr(unwrapped, "model", None), getattr(unwrapped, "data", None)
    renderer = getattr(unwrapped, "mujoco_renderer", None)
    if model is None or data is None or type(model).__module__.split(".")[0] != "mujoco":
        return None
    return model, data, renderer


def release_renderers(env: Any) -> None:
    """Free the GL objects of a Gymnasium MuJoCo env's viewers under their own context.

    Gymnasium's ``OffScreenViewer.close`` frees its EGL context but leaves its
    ``MjrContext`` to the GC, whose ``mjr_freeContext`` then deletes GL objects by id in
    whatever context is current at that moment: another env's framebuffer, whose frames
    come out black from then on.  Called before the env is closed, so an env Record saw
    never does that to another (a no-op for any other env)."""
    parts = _mujoco_parts(env)
    viewers = getattr(parts[2], "_viewers", None) if parts is not None else None
    for viewer in list(viewers.values()) if isinstance(viewers, dict) else ():
        con, make_current = getattr(viewer, "con", None), getattr(viewer, "make_context_current", None)
        if con is not None and callable(make_current) and callable(getattr(con, "free", None)):
            make_current()
            con.free()


_FIXED = 2  # mjtCamera.mjCAMERA_FIXED: a camera of the model


class MujocoFrameCalibration:
    """K and the pose of the camera that drew a Gymnasium MuJoCo env's last frame (module table).

    A fixed camera of the model (``viewer.cam.type`` fixed): its pose from ``data.cam_xpos``
    and ``data.cam_xmat``, K from ``model.cam_fovy``.  The free or tracking camera: the
    scene's GL cameras of the frame (a mono render draws from the average of the two eyes,
    ``mjv_averageCamera``), K from their frustum.  K is computed once per (size, field of
    view) and the pose only when its inputs change: a still camera costs a byte compare."""

    def __init__(self, camera: str, renderer: Any, model: Any = None, data: Any = None) -> None:
        self.camera = camera
        self._renderer = renderer
        self._model, self._data = model, data
        self._profiles: dict[tuple[int, int, float], tuple[dict[str, object], str, Array]] = {}
        self._pose_key: bytes = b""
        self._pose: tuple[Array, Array] = (_NAN3, _NAN3)

    def readings(self, frame: Array, channels: tuple[str, str, str, str]) -> tuple[CameraReading, ...]:
        """The frame's four camera readings (rgb, intrinsics, translation, quaternion)."""
        viewer = getattr(self._renderer, "viewer", None)
        scn = getattr(viewer, "scn", None)
        if scn is None:
            raise RuntimeError(f"camera {self.camera}: the env rendered no frame through its MuJoCo renderer")
        cam = getattr(viewer, "cam", None)
        if cam is not None and int(cam.type) == _FIXED and self._data is not None:
            fovy, (translation, quaternion) = self._fixed(int(cam.fixedcamid))
        else:
            fovy, (translation, quaternion) = self._free(scn.camera[0], scn.camera[1])
        height, width = int(frame.shape[0]), int(frame.shape[1])
        key = (width, height, round(fovy, 9))
        cached = self._profiles.get(key)
        if cached is None:
            profile = pinhole_profile(self.camera, width, height, fovy)
            if self._model is not None:  # rule 6: the quality settings are the model's
                profile["renderer"] = _renderer_facts(self._model, viewer)
            k = np.array(
                [[profile["fx"], 0.0, profile["cx"]], [0.0, profile["fy"], profile["cy"]], [0.0, 0.0, 1.0]],
                dtype=np.float64,
            )
            cached = self._profiles[key] = (profile, calibration_digest(profile), readonly(k))
        profile, digest, k = cached
        return frame_readings(self.camera, channels, frame, (profile, digest), (k, translation, quaternion))

    def _fixed(self, i: int) -> tuple[float, tuple[Array, Array]]:
        xpos, xmat = self._data.cam_xpos[i], self._data.cam_xmat[i]
        key = xpos.tobytes() + xmat.tobytes()
        if key != self._pose_key:  # MuJoCo's camera looks along -z with y up: OpenCV's y and z are flipped
            m = xmat.reshape(3, 3).tolist()
            rotation = [[m[r][0], -m[r][1], -m[r][2]] for r in range(3)]
            self._pose_key, self._pose = key, (readonly(np.array(xpos, dtype=np.float64)), readonly(_quaternion_xyzw(rotation)))
        return float(self._model.cam_fovy[i]), self._pose

    def _free(self, left: Any, right: Any) -> tuple[float, tuple[Array, Array]]:
        fovy = math.degrees(2.0 * math.atan2(float(left.frustum_top), float(left.frustum_near)))
        key = b"".join(np.asarray(v).tobytes() for v in (left.pos, right.pos, left.forward, right.forward, left.up, right.up))
        if key != self._pose_key:
            pos = [(a + b) / 2 for a, b in zip(left.pos.tolist(), right.pos.tolist(), strict=True)]
            forward = _unit([a + b for a, b in zip(left.forward.tolist(), right.forward.tolist(), strict=True)])
            up = [a + b for a, b in zip(left.up.tolist(), right.up.tolist(), strict=True)]
            along = sum(u * f for u, f in zip(up, forward, strict=True))
            y = _unit([-(u - along * f) for u, f in zip(up, forward, strict=True)])  # OpenCV: y = -up, z = forward
            x = [y[1] * forward[2] - y[2] * forward[1], y[2] * forward[0] - y[0] * forward[2],
                 y[0] * forward[1] - y[1] * forward[0]]
            rotation = [[x[r], y[r], forward[r]] for r in range(3)]
            self._pose_key, self._pose = key, (readonly(np.array(pos, dtype=np.float64)), readonly(_quaternion_xyzw(rotation)))
        return fovy, self._pose


_NAN3 = readonly(np.full(3, np.nan))


def _renderer_facts(model: Any, viewer: Any) -> dict[str, object]:
    """How the env's off-screen viewer makes its frames (``render.mujoco.renderer_facts``), its
    GL backend the one Gymnasium's ``OffScreenViewer.backend`` chose (``MUJOCO_GL`` or the first
    default that worked; left out if the viewer does not say)."""
    import mujoco  # a MuJoCo env's: imported already

    from fastsim_embedded.render.mujoco import renderer_facts

    backend = getattr(viewer, "backend", None)
    return renderer_facts(model, str(mujoco.__version__), backend if isinstance(backend, str) else None)


def frame_readings(
    camera: str, channels: tuple[str, str, str, str], frame: Array, calibration: tuple[dict[str, object], str],
    values: tuple[Array, Array, Array],
) -> tuple[CameraReading, ...]:
    """A frame's four camera readings: the frame (one contiguous copy, also of a frame that is
    contiguous already: the env's array stays the caller's, writable, and an env that reuses it
    never changes what was recorded) and K, translation, quaternion, all under the profile's digest."""
    (profile, digest), (k, translation, quaternion) = calibration, values
    rgb, intrinsics, translation_channel, quaternion_channel = channels
    return (
        CameraReading(camera, rgb, "rgb", readonly(np.array(frame, dtype=np.uint8, order="C")), digest),
        CameraReading(camera, intrinsics, "intrinsics", k, digest, profile),
        CameraReading(camera, translation_channel, "translation", translation, digest),
        CameraReading(camera, quaternion_channel, "quaternion_xyzw", quaternion, digest),
    )


def _unit(v: list[float]) -> list[float]:
    n = math.sqrt(sum(c * c for c in v))
    return [c / n for c in v]


def _quaternion_xyzw(m: Sequence[Sequence[float]]) -> Array:
    """The unit xyzw quaternion (w >= 0) of a rotation matrix (rows; Shepperd's method)."""
    trace = m[0][0] + m[1][1] + m[2][2]
    if trace > 0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = [(m[2][1] - m[1][2]) / s, (m[0][2] - m[2][0]) / s, (m[1][0] - m[0][1]) / s, 0.25 * s]
    elif m[0][0] > m[1][1] and m[0][0] > m[2][2]:
        s = 2.0 * math.sqrt(1.0 + m[0][0] - m[1][1] - m[2][2])
        q = [0.25 * s, (m[0][1] + m[1][0]) / s, (m[0][2] + m[2][0]) / s, (m[2][1] - m[1][2]) / s]
    elif m[1][1] > m[2][2]:
        s = 2.0 * math.sqrt(1.0 + m[1][1] - m[0][0] - m[2][2])
        q = [(m[0][1] + m[1][0]) / s, 0.25 * s, (m[1][2] + m[2][1]) / s, (m[0][2] - m[2][0]) / s]
    else:
        s = 2.0 * math.sqrt(1.0 + m[2][2] - m[0][0] - m[1][1])
        q = [(m[0][2] + m[2][0]) / s, (m[1][2] + m[2][1]) / s, 0.25 * s, (m[1][0] - m[0][1]) / s]
    if q[3] < 0:
        q = [-c for c in q]
    return np.array(_unit(q), dtype=np.float64)


def calibration_of(env: Any, camera: str) -> MujocoFrameCalibration | None:
    """The frame calibration of a Gymnasium MuJoCo env, or ``None`` for any other env."""
    parts = _mujoco_parts(env)
    if parts is None or parts[2] is None:
        return None
    return MujocoFrameCalibration(camera, parts[2], parts[0], parts[1])


def render_observation_path(env: Any) -> tuple[str, ...] | None:
    """Where ``gymnasium.wrappers.AddRenderObservation`` puts ``render()`` frames in the
    observation (``()``: the whole observation; ``("pixels",)``: its key), or ``None``."""
    while env is not None:
        if type(env).__name__ == "AddRenderObservation":
            kwargs = getattr(env, "_saved_kwargs", {}) or {}
            return () if kwargs.get("render_only", True) else (str(kwargs.get("render_key", "pixels")),)
        env = getattr(env, "env", None)
    return None


def render_source_of(env: Any) -> Any:
    """``render.state`` access to a MuJoCo env's model and data (``None`` for other envs)."""
    parts = _mujoco_parts(env)
    if parts is None:
        return None
    from fastsim_embedded.render.mujoco import (
        MujocoRenderSource,  # imports mujoco: MuJoCo envs only
    )

    return MujocoRenderSource(parts[0], parts[1])


class MujocoJoints:
    """A MuJoCo env's hinge and slide joints (its robot state) and actuators (its controls).

    Recorded as ``robot.joint_position``/``robot.joint_velocity`` at every observation row
    (the state after the step, read from ``env.unwrapped.data``), and each action as an
    applied control target named by the actuators: what ``fsr replay`` and
    ``fsr export --to lerobot`` read as the robot's state and action.
    """

    def __init__(self, model: Any, data: Any) -> None:
        ids = [j for j in range(model.njnt) if int(model.jnt_type[j]) in (2, 3)]  # slide, hinge
        self.names = tuple(str(model.joint(j).name) or f"joint{j}" for j in ids)
        self.actuators = tuple(str(model.actuator(a).name) or f"actuator{a}" for a in range(model.nu))
        self._qpos = np.array([int(model.jnt_qposadr[j]) for j in ids], dtype=np.intp)
        self._qvel = np.array([int(model.jnt_dofadr[j]) for j in ids], dtype=np.intp)
        self._data = data

    def sample(self) -> tuple[Array, Array]:
        """Joint positions and velocities now (new float64 arrays)."""
        return self._data.qpos[self._qpos].astype(np.float64), self._data.qvel[self._qvel].astype(np.float64)


def joints_of(env: Any) -> MujocoJoints | None:
    """The joints of a MuJoCo env with at least one hinge or slide joint, else ``None``."""
    parts = _mujoco_parts(env)
    if parts is None:
        return None
    joints = MujocoJoints(parts[0], parts[1])
    return joints if joints.names else None


@attrs.frozen
class RenderSnapshot:
    """``render.state`` and the moving bodies' transforms, read when an observation was returned."""

    state: Mapping[str, Array] | None
    transforms: object | None


class RenderSnapshots:
    """Takes a MuJoCo env's render-side snapshot at capture time (one per sub-env).

    The recorded row of observation t is published one ``step()`` later (it waits for the
    action chosen from it), when ``data`` already holds state t + 1; so the render side is
    read when observation t is returned and published with its row (``StagedRenderSource``).
    """

    def __init__(self, inner: Any, *, state: bool, geometry: bool) -> None:
        self.inner = inner
        self.state = state
        self.geometry = inner.scene_geometry() if geometry else None
        self.moving: tuple[str, ...] = ()
        if self.geometry is not None:
            kind = select_catalog(self.geometry.catalog_kinds())
            if kind is not None:
                catalog = self.geometry.catalog(kind)
                self.moving = tuple(b.name for b in catalog.bodies if b.motion != "static")

    def take(self) -> RenderSnapshot:
        """The snapshot now."""
        state = self.inner.render_state() if self.state else None
        transforms = self.geometry.transforms(self.moving) if self.geometry is not None and self.moving else None
        return RenderSnapshot(state, transforms)


class StagedRenderSource:
    """One episode's render source: serves the snapshot staged with the row being published."""

    def __init__(self, snapshots: RenderSnapshots) -> None:
        self.snapshots = snapshots
        self.current: RenderSnapshot | None = None

    def render_state(self) -> Mapping[str, Array]:
        """The staged snapshot's state (what the env's data held at observation time)."""
        if self.current is None or self.current.state is None:
            raise RuntimeError("render.state: no snapshot was staged with this row")
        return self.current.state

    def scene_geometry(self) -> Any:
        """The geometry service, its transforms answered from the staged snapshot."""
        return None if self.snapshots.geometry is None else _StagedGeometry(self)

    def fluid_emitter(self) -> None:
        """A Gymnasium env has no particle emitter."""
        return None


class _StagedGeometry:
    def __init__(self, source: StagedRenderSource) -> None:
        self._source = source
        self._inner: Any = source.snapshots.geometry

    def catalog_kinds(self) -> frozenset[str]:
        kinds: frozenset[str] = self._inner.catalog_kinds()
        return kinds

    def catalog(self, kind: str) -> Any:
        return self._inner.catalog(kind)

    def read_resource(self, resource_id: str) -> Any:
        return self._inner.read_resource(resource_id)

    def transforms(self, bodies: Sequence[str]) -> object:
        current = self._source.current
        if current is not None and current.transforms is not None and tuple(bodies) == self._source.snapshots.moving:
            return current.transforms
        return self._inner.transforms(bodies)
