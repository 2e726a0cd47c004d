"""Cameras a Run adds to a scene (``extra_cameras``), which both Replay renderers honour.

A Replay Run can ask for a viewpoint the source never recorded: ``scenario.scene.mujoco.
extra_cameras`` names each new camera with its mount, in MuJoCo's camera convention (the
camera looks along its local -z with y up, as an MJCF ``<camera>``):

    | # | key         | meaning                                                             |
    |---|-------------|---------------------------------------------------------------------|
    | 1 | body        | the body it is mounted on (default ``world``: fixed in the world)   |
    | 2 | pos         | its position in that body's frame (m)                               |
    | 3 | target      | a point in the body's frame it looks at (world up is +z), or        |
    | 4 | quat_xyzw   | its orientation in the body's frame (exactly one of target, quat)   |
    | 5 | fovy        | the vertical field of view (degrees, default 45, MuJoCo's)          |

The ``mujoco`` backend adds each as an MJCF camera before it compiles the model
(``MjSpec``); the ``moderngl`` renderer places it on the recorded pose of ``body`` (the
geometry stream's) at each tick.  Both then use the same pinhole model: square pixels,
``fy = (H / 2) / tan(fovy / 2)``, principal point at the image centre.  Importing this
module imports no simulator.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import attrs
import numpy as np
import numpy.typing as npt

__all__ = ["CameraMount", "parse_mounts", "rotation_to_xyzw"]

F64 = npt.NDArray[np.float64]
_KEYS: Final = frozenset({"body", "pos", "target", "quat_xyzw", "fovy"})
_CV_FROM_MJ: Final = np.diag([1.0, -1.0, -1.0])


def rotation_to_xyzw(rotation: F64) -> F64:
    """The unit xyzw quaternion (w >= 0) of a 3x3 rotation matrix."""
    m = np.asarray(rotation, dtype=np.float64)
    trace = m[0, 0] + m[1, 1] + m[2, 2]
    if trace > 0:
        s = 2.0 * np.sqrt(trace + 1.0)
        q = [(m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s]
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * np.sqrt(1.0 + m[i, i] - m[j, j] - m[k, k])
        q = [0.0, 0.0, 0.0, (m[k, j] - m[j, k]) / s]
        q[i], q[j], q[k] = 0.25 * s, (m[j, i] + m[i, j]) / s, (m[k, i] + m[i, k]) / s
    out = np.array(q, dtype=np.float64)
    out /= np.linalg.norm(out)
    return -out if out[3] < 0 else out


@attrs.frozen
class CameraMount:
    """One added camera (module table)."""

    name: str
    body: str
    pos: tuple[float, float, float]
    quat_xyzw: tuple[float, float, float, float]  # MuJoCo camera frame -> body frame
    fovy: float

    def local(self) -> F64:
        """4x4 MuJoCo camera frame -> body frame."""
        from fastsim_embedded.backends.gl_replay.camera import pose_matrix

        return pose_matrix(np.array([*self.pos, *self.quat_xyzw], dtype=np.float64))

    def opencv_pose(self, body_world: F64) -> tuple[F64, F64]:
        """Translation and xyzw quaternion (OpenCV optical frame -> world) on ``body_world``."""
        world = np.asarray(body_world, dtype=np.float64) @ self.local()
        return world[:3, 3].copy(), rotation_to_xyzw(world[:3, :3] @ _CV_FROM_MJ)

    def k(self, width: int, height: int) -> F64:
        """K at ``width`` x ``height`` (the pinhole model in the module header)."""
        f = (height / 2.0) / np.tan(np.radians(self.fovy) / 2.0)
        return np.array([[f, 0.0, (width - 1) / 2.0], [0.0, f, (height - 1) / 2.0], [0.0, 0.0, 1.0]])


def _vec(value: object, n: int, where: str) -> tuple[float, ...]:
    try:
        out = tuple(float(v) for v in value)  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        out = ()
    if len(out) != n or not all(np.isfinite(out)):
        raise ValueError(f"{where}: must be a list of {n} finite numbers (got {value!r})")
    return out


def _look_at(pos: tuple[float, ...], target: tuple[float, ...], where: str) -> tuple[float, ...]:
    back = np.subtract(pos, target)
    if not np.linalg.norm(back) > 0:
        raise ValueError(f"{where}: target must differ from pos")
    z = back / np.linalg.norm(back)  # MuJoCo cameras look along -z
    x = np.cross([0.0, 0.0, 1.0], z)
    if np.linalg.norm(x) < 1e-9:  # looking straight up or down: x along world +x
        x = np.array([1.0, 0.0, 0.0])
    x /= np.linalg.norm(x)
    y = np.cross(z, x)
    return tuple(float(v) for v in rotation_to_xyzw(np.column_stack([x, y, z])))


def parse_mounts(raw: object, where: str = "extra_cameras") -> tuple[CameraMount, ...]:
    """The added cameras of a scene's knobs; ``ValueError`` (one line with its path) otherwise."""
    if raw is None:
        return ()
    if not isinstance(raw, Mapping):
        raise ValueError(f"{where}: must be a mapping of camera names to mounts")
    mounts = []
    for name, spec in raw.items():
        at = f"{where}.{name}"
        if not isinstance(spec, Mapping):
            raise ValueError(f"{at}: must be a mapping with pos and target or quat_xyzw")
        stray = sorted(str(k) for k in spec if k not in _KEYS)
        if stray:
            raise ValueError(f"{at}.{stray[0]}: unknown key (known: {', '.join(sorted(_KEYS))})")
        if ("target" in spec) == ("quat_xyzw" in spec):
            raise ValueError(f"{at}: give exactly one of target and quat_xyzw")
        pos = _vec(spec.get("pos"), 3, f"{at}.pos")
        if "target" in spec:
            quat = _look_at(pos, _vec(spec["target"], 3, f"{at}.target"), f"{at}.target")
        else:
            q = np.array(_vec(spec["quat_xyzw"], 4, f"{at}.quat_xyzw"))
            if not np.linalg.norm(q) > 0:
                raise ValueError(f"{at}.quat_xyzw: must not be zero")
            quat = tuple(float(v) for v in q / np.linalg.norm(q))
        fovy = spec.get("fovy", 45.0)
        if isinstance(fovy, bool) or not isinstance(fovy, int | float) or not 0 < fovy < 180:
            raise ValueError(f"{at}.fovy: must be a number of degrees above 0 and below 180 (got {fovy!r})")
        body = spec.get("body", "world")
        if not isinstance(body, str) or not body:
            raise ValueError(f"{at}.body: must be a body name")
        mounts.append(CameraMount(str(name), body, pos, quat, float(fovy)))  # type: ignore[arg-type]
    return tuple(mounts)
