"""The pinhole camera model both Replay renderers honour, as OpenGL matrices.

Conventions are the recorded calibration's (``mujoco_scene``'s camera table): K with
pixel centres at integer ``(u, v)``, ``(0, 0)`` the centre of the top-left pixel; the
OpenCV optical frame (x right, y down, z forward); extrinsics camera-to-world, a
translation (the camera centre) and an xyzw quaternion.  A world point ``p`` projects
to ``K @ R.T @ (p - t)`` (then divide by z).

    | # | step                | what                                                        |
    |---|---------------------|-------------------------------------------------------------|
    | 1 | view                | world -> OpenGL eye: ``diag(1, -1, -1) @ R.T @ (p - t)``    |
    | 2 | projection          | from K so that pixel ``(u, v)`` lands on the centre of the |
    |   |                     | framebuffer pixel in column ``u``, row ``v`` from the top  |
    | 3 | depth               | the depth buffer back to metres along the optical axis     |
    | 4 | another resolution  | :func:`rescale`: same vertical field of view, square pixels |
    |   |                     | and the principal point's offset from the centre scaled    |

Step 4 is what MuJoCo does when a camera renders at another size (its K depends only
on ``fovy`` and the image size), so both renderers agree on a camera that was recorded
at one resolution and is replayed at another.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

__all__ = ["NEAR", "FAR", "linear_depth", "pose_matrix", "projection", "quaternion_matrix", "rescale", "view"]

F64 = npt.NDArray[np.float64]
NEAR: Final = 0.01  # m
FAR: Final = 100.0  # m
_GL_FROM_CV: Final = np.diag([1.0, -1.0, -1.0])


def quaternion_matrix(xyzw: F64) -> F64:
    """The rotation matrix of an xyzw quaternion (normalised first)."""
    q = np.asarray(xyzw, dtype=np.float64)
    x, y, z, w = q / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def pose_matrix(pose: F64) -> F64:
    """The 4x4 transform of a 7-value pose ``x y z qx qy qz qw``."""
    out = np.eye(4)
    out[:3, :3] = quaternion_matrix(pose[3:7])
    out[:3, 3] = pose[:3]
    return out


def view(translation: F64, quaternion_xyzw: F64) -> F64:
    """Row 1: the 4x4 world -> OpenGL eye matrix of a camera-to-world OpenCV pose."""
    rotation = quaternion_matrix(quaternion_xyzw)
    out = np.eye(4)
    out[:3, :3] = _GL_FROM_CV @ rotation.T
    out[:3, 3] = -out[:3, :3] @ np.asarray(translation, dtype=np.float64)
    return out


def projection(k: F64, width: int, height: int, near: float = NEAR, far: float = FAR) -> F64:
    """Row 2: the 4x4 OpenGL projection of K for a ``width`` x ``height`` image.

    Clip x = (2 fx / W) x_eye - (2 (cx + 0.5) / W - 1) z_eye; clip y = (2 fy / H) y_eye +
    (2 (cy + 0.5) / H - 1) z_eye, the image's rows counted from the top (the frame is read back bottom row first and
    flipped); depth is OpenGL's usual ``[near, far]`` mapping.
    """
    fx, fy, cx, cy = float(k[0, 0]), float(k[1, 1]), float(k[0, 2]), float(k[1, 2])
    return np.array(
        [
            [2 * fx / width, -2 * float(k[0, 1]) / width, -(2 * (cx + 0.5) / width - 1), 0.0],
            [0.0, 2 * fy / height, 2 * (cy + 0.5) / height - 1, 0.0],
            [0.0, 0.0, -(far + near) / (far - near), -2 * far * near / (far - near)],
            [0.0, 0.0, -1.0, 0.0],
        ]
    )


def linear_depth(buffer: npt.NDArray[np.float32], near: float = NEAR, far: float = FAR) -> npt.NDArray[np.float32]:
    """Row 3: window depth in [0, 1] -> metres along the optical axis (``inf`` where empty)."""
    d = buffer.astype(np.float64)
    z_ndc = 2.0 * d - 1.0
    metres = 2.0 * far * near / (far + near - z_ndc * (far - near))
    return np.where(d < 1.0, metres, np.inf).astype(np.float32)


def rescale(k: F64, size: tuple[int, int], to: tuple[int, int]) -> F64:
    """Row 4: K of a camera recorded at ``size`` (W, H), for an image of ``to`` (W, H)."""
    (w0, h0), (w1, h1) = size, to
    s = h1 / h0
    out = np.array(k, dtype=np.float64, copy=True)
    out[0, 0] *= s
    out[1, 1] *= s
    out[0, 1] *= s
    out[0, 2] = (w1 - 1) / 2.0 + (float(k[0, 2]) - (w0 - 1) / 2.0) * s
    out[1, 2] = (h1 - 1) / 2.0 + (float(k[1, 2]) - (h0 - 1) / 2.0) * s
    return out
