"""MuJoCo with an off-screen GL context, its renderers and the camera conventions.

``mujoco_scene``'s module header has the camera convention table (K, the OpenCV camera
frame, MuJoCo -> OpenCV), which :func:`intrinsics_from_fovy` and
:func:`mujoco_to_opencv_quaternion` implement.

``MUJOCO_GL`` must be set before mujoco is imported: it binds its GL backend then.  An
invalid value, or its GL library missing, fails the import itself; either is one
:class:`RenderUnavailable` line naming the variable to set (as is a renderer that cannot
get a context later, :func:`gl_message`).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from fastsim_embedded.render.camera_mounts import CameraMount
from fastsim_embedded.render.mujoco import renderer_facts as mujoco_renderer_facts

__all__ = [
    "OffscreenRenderers",
    "add_cameras",
    "RenderUnavailable",
    "gl_message",
    "intrinsics_from_fovy",
    "mujoco",
    "mujoco_to_opencv_quaternion",
    "renderer_facts",
]


class RenderUnavailable(RuntimeError):
    """MuJoCo could not create an off-screen OpenGL context."""


def renderer_facts(model: Any) -> dict[str, object]:
    """How this model's frames are made (``render.mujoco.renderer_facts``), its GL backend
    ``MUJOCO_GL``: what this module rendered with."""
    return mujoco_renderer_facts(model, str(mujoco.__version__), os.environ.get("MUJOCO_GL") or "egl")


def gl_message(exc: BaseException) -> str:
    """One line naming MUJOCO_GL, the failure, and the values to try."""
    gl = os.environ.get("MUJOCO_GL", "<unset>")
    return (
        f"MuJoCo could not create an off-screen OpenGL context with MUJOCO_GL={gl} "
        f"({type(exc).__name__}: {exc}); set MUJOCO_GL=egl (GPU/EGL) or "
        "MUJOCO_GL=osmesa (software rendering) in the environment before mujoco is "
        "first imported"
    )


os.environ.setdefault("MUJOCO_GL", "egl")
try:
    import mujoco
except ModuleNotFoundError as _exc:  # mujoco itself missing: the [sim] extra, not a GL problem
    if _exc.name != "mujoco":
        raise RenderUnavailable(gl_message(_exc)) from _exc
    raise
except Exception as _exc:  # an invalid MUJOCO_GL value, or its GL library missing (osmesa
    # without libOSMesa fails inside PyOpenGL with an AttributeError), fails the import itself
    raise RenderUnavailable(gl_message(_exc)) from _exc


def add_cameras(xml: str, mounts: Sequence[CameraMount], reserved: Sequence[str] = ()) -> Any:
    """The model of MJCF ``xml`` with ``mounts`` added as cameras (``MjSpec``, MuJoCo >= 3.2).

    Without mounts the XML is compiled as it is.  A mount on a body the model lacks, or
    named like a ``reserved`` camera, is one ``ValueError`` line with its path."""
    if not mounts:
        return mujoco.MjModel.from_xml_string(xml)
    spec = mujoco.MjSpec.from_string(xml)
    for mount in mounts:
        where = f"extra_cameras.{mount.name}"
        parent = spec.worldbody if mount.body == "world" else spec.body(mount.body)
        if parent is None:
            raise ValueError(f"{where}.body: the scene has no body {mount.body!r}")
        if mount.name in reserved:
            raise ValueError(f"{where}: the scene already has a camera {mount.name!r}")
        x, y, z, w = mount.quat_xyzw
        parent.add_camera(name=mount.name, pos=list(mount.pos), quat=[w, x, y, z], fovy=mount.fovy)
    return spec.compile()


class OffscreenRenderers:
    """One ``mujoco.Renderer`` per resolution, made on first use and reused."""

    def __init__(self) -> None:
        self._renderers: dict[tuple[int, int], Any] = {}

    def get(self, model: Any, width: int, height: int) -> Any:
        """The renderer of ``width x height`` (the model's off-screen buffer grows to fit)."""
        key = (width, height)
        renderer = self._renderers.get(key)
        if renderer is None:
            vis = model.vis.global_
            vis.offwidth, vis.offheight = max(vis.offwidth, width), max(vis.offheight, height)
            try:
                renderer = mujoco.Renderer(model, height=height, width=width)
            except Exception as exc:  # EGL/OSMesa/GLX failures surface as many types
                raise RenderUnavailable(gl_message(exc)) from exc
            self._renderers[key] = renderer
        return renderer

    def close(self) -> None:
        """Release every renderer's GL resources."""
        for renderer in self._renderers.values():
            renderer.close()
        self._renderers.clear()


F64 = npt.NDArray[np.float64]
_CV_FROM_MJ: Final = np.diag([1.0, -1.0, -1.0])


def intrinsics_from_fovy(fovy_deg: float, width: int, height: int) -> F64:
    """K for a MuJoCo camera with vertical field of view ``fovy_deg`` (see table row 1)."""
    f = (height / 2.0) / math.tan(math.radians(fovy_deg) / 2.0)
    return np.array(
        [[f, 0.0, (width - 1) / 2.0], [0.0, f, (height - 1) / 2.0], [0.0, 0.0, 1.0]],
        dtype=np.float64,
    )


def mujoco_to_opencv_quaternion(xmat_mj: F64) -> F64:
    """The xyzw quaternion of ``R_mj @ diag(1, -1, -1)``, with w >= 0."""
    r_cv = np.asarray(xmat_mj, dtype=np.float64).reshape(3, 3) @ _CV_FROM_MJ
    return _quat_xyzw(r_cv)


def _quat_xyzw(rot: F64) -> F64:
    wxyz = np.empty(4)
    mujoco.mju_mat2Quat(wxyz, np.ascontiguousarray(rot, dtype=np.float64).reshape(9))
    if wxyz[0] < 0:
        wxyz = -wxyz
    wxyz /= np.linalg.norm(wxyz)
    return np.array([wxyz[1], wxyz[2], wxyz[3], wxyz[0]], dtype=np.float64)
