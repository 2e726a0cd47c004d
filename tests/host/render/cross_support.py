"""Both Replay renderers over the same recorded ticks: masks, depth, colour, side by side.

MuJoCo's foreground is its segmentation (-1 where nothing was drawn; Replay's particle
spheres are decorative geoms without an object) and its
depth ``mujoco.Renderer``'s (metres along the optical axis); moderngl's are its depth
buffer (``inf`` where nothing was drawn).  Both come from the same ``prepare_replay``
ticks, so the poses are identical by construction.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_embedded.render.replay import prepare_replay

__all__ = ["FramePair", "compare", "paired_frames", "side_by_side"]


@attrs.frozen
class FramePair:
    """One camera at one tick, from both renderers."""

    tick: int
    camera: str
    mujoco_rgb: npt.NDArray[np.uint8]
    mujoco_depth: npt.NDArray[np.float32]
    mujoco_mask: npt.NDArray[np.bool_]
    gl_rgb: npt.NDArray[np.uint8]
    gl_depth: npt.NDArray[np.float32]
    mujoco_moving: npt.NDArray[np.bool_]  # pixels showing a body that is not welded to the world
    gl_static_depth: npt.NDArray[np.float32]  # the static bodies alone

    @property
    def gl_mask(self) -> npt.NDArray[np.bool_]:
        return np.isfinite(self.gl_depth)

    @property
    def gl_moving(self) -> npt.NDArray[np.bool_]:
        """Where a moving body is in front of every static one (1 mm margin)."""
        return self.gl_depth < self.gl_static_depth - 1e-3


def _mujoco_frames(backend: Any, cameras: tuple[str, ...], sizes: dict[str, tuple[int, int]]) -> dict[str, Any]:
    """RGB, depth and foreground of each camera from MuJoCo's own renderer at the posed state."""
    import mujoco

    source = backend.render_source()
    decorators = getattr(getattr(backend.inner, "scene", None), "decorators", [])  # Replay's particles
    out = {}
    for cam in cameras:
        width, height = sizes[cam]
        with mujoco.Renderer(source.model, height=height, width=width) as renderer:
            renderer.update_scene(source.data, camera=cam)
            first = int(renderer.scene.ngeom)
            for decorate in decorators:
                decorate(renderer.scene)
            for i in range(first, int(renderer.scene.ngeom)):  # particles: mjv_initGeom makes decor
                renderer.scene.geoms[i].segid = i  # geoms with no segid, which segmentation skips
                renderer.scene.geoms[i].category = int(mujoco.mjtCatBit.mjCAT_DYNAMIC)
            rgb = renderer.render().copy()
            renderer.enable_depth_rendering()
            depth = renderer.render().copy()
            renderer.disable_depth_rendering()
            renderer.enable_segmentation_rendering()
            seg = renderer.render().copy()
        geom, kind = seg[..., 0], seg[..., 1]  # (-1, -1) background; particles (-1, mjOBJ_UNKNOWN)
        # a model geom has an id below ngeom; a pixel read back with another (seen once, in a fluid Run on
        # Python 3.12, cause not found) is not taken as a model geom (not a body: not counted as moving)
        is_geom = (geom >= 0) & (geom < int(source.model.ngeom)) & (kind == int(mujoco.mjtObj.mjOBJ_GEOM))
        body = np.asarray(source.model.geom_bodyid)[np.where(is_geom, geom, 0)]
        particle = kind == int(mujoco.mjtObj.mjOBJ_UNKNOWN)
        moving = (is_geom & (np.asarray(source.model.body_weldid)[body] != 0)) | particle
        out[cam] = (rgb, depth.astype(np.float32), kind != -1, moving)
    return out


def paired_frames(source: Path, run: Path, cameras: tuple[str, ...]) -> Iterator[FramePair]:
    """Every tick of ``source`` drawn by both renderers through ``run``'s cameras."""
    _, mj, mj_track = prepare_replay(source, run, renderer="mujoco")
    _, gl, _gl_track = prepare_replay(source, run, renderer="moderngl")
    try:
        for tick in range(1, len(mj_track.records) + 1):
            for backend in (mj, gl):
                backend.script(tick)
                backend.step(1)
            frames = {cam: gl.inner.frame(cam, depth=True) for cam in cameras}
            sizes = {cam: (f.rgb.shape[1], f.rgb.shape[0]) for cam, f in frames.items()}
            reference = _mujoco_frames(mj, cameras, sizes)
            for cam, frame in frames.items():
                rgb, depth, mask, moving = reference[cam]
                static = gl.inner.frame(cam, depth=True, static_only=True).depth
                assert frame.depth is not None
                assert static is not None
                yield FramePair(tick, cam, rgb, depth, mask, frame.rgb, frame.depth, moving, static)
    finally:
        mj.close()
        gl.close()


def _iou(a: npt.NDArray[np.bool_], b: npt.NDArray[np.bool_]) -> float:
    union = int(np.count_nonzero(a | b))
    return float(np.count_nonzero(a & b)) / union if union else 1.0


def compare(pair: FramePair) -> dict[str, float]:
    """Foreground IoU, moving-body IoU, depth median |diff| (m) within both masks, colour mean |diff|."""
    both = pair.mujoco_mask & pair.gl_mask
    depth = float(np.median(np.abs(pair.mujoco_depth[both] - pair.gl_depth[both]))) if both.any() else 0.0
    colour = float(np.mean(np.abs(pair.mujoco_rgb.astype(np.int16) - pair.gl_rgb.astype(np.int16))))
    return {"iou": _iou(pair.mujoco_mask, pair.gl_mask), "moving_iou": _iou(pair.mujoco_moving, pair.gl_moving),
            "depth_median_m": depth, "colour_mean_abs": colour}


def side_by_side(pair: FramePair, path: Path) -> None:
    """MuJoCo | moderngl | mask disagreement as a PNG: white where both see a moving body,
    red only MuJoCo's foreground (or moving body), cyan only moderngl's."""
    import cv2

    diff = np.zeros_like(pair.mujoco_rgb)
    diff[pair.mujoco_moving & pair.gl_moving] = (255, 255, 255)
    diff[(pair.mujoco_mask & ~pair.gl_mask) | (pair.mujoco_moving & ~pair.gl_moving)] = (255, 0, 0)
    diff[(pair.gl_mask & ~pair.mujoco_mask) | (pair.gl_moving & ~pair.mujoco_moving)] = (0, 255, 255)
    image = np.hstack([pair.mujoco_rgb, pair.gl_rgb, diff])
    if not cv2.imwrite(str(path), np.ascontiguousarray(image[..., ::-1])):
        raise OSError(f"could not write {path}")
