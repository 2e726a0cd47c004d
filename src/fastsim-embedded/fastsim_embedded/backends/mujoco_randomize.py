"""Seeded variation of the DROID-like MuJoCo scene, within declared ranges.

The scene's ``randomize`` mapping (``scenario.scene.mujoco.randomize``) declares each
range; the Run's seed picks one value in each, once per episode, before the pick is
planned (so the scripted grasp follows the moved object):

    | # | key              | default      | what varies (uniform in the range)                  |
    |---|------------------|--------------|-----------------------------------------------------|
    | 1 | object_xy_m      | 0.04         | each object's start x and y, +- this (m)            |
    | 2 | object_yaw_rad   | 0.6          | each object's start yaw, +- this (rad)              |
    | 3 | target_xy_m      | 0.06         | the lift target's x and y from the grasp, +- (m)    |
    | 4 | target_height_m  | [0.12, 0.2]  | the lift target's height above the grasp (m)        |
    | 5 | light_scale      | [0.7, 1.3]   | the key and fill lights' brightness factor          |
    | 6 | light_dir_jitter | 0.15         | the lights' direction x and y, +- this               |
    | 7 | camera_jitter_m  | 0.01         | the exterior cameras' position, +- this per axis (m)|

Every range of 0 (or a pair with equal ends) turns that variation off; ``randomize:
false`` turns all of it off (the unrandomized scene, as before seeds existed).  The
applied values are returned, so they are recorded with the Run's scene description.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs
import numpy as np

__all__ = ["DEFAULT_RANGES", "Randomization", "apply_randomization", "parse_randomization"]

OBJECTS: Final = ("cube", "can", "block")
EXTERIOR_CAMERAS: Final = ("exterior_left", "exterior_right")
LIGHTS: Final = ("key", "fill")

DEFAULT_RANGES: Final[dict[str, object]] = {
    "object_xy_m": 0.04,
    "object_yaw_rad": 0.6,
    "target_xy_m": 0.06,
    "target_height_m": [0.12, 0.2],
    "light_scale": [0.7, 1.3],
    "light_dir_jitter": 0.15,
    "camera_jitter_m": 0.01,
}
_LIMITS: Final = {  # the largest range the scene can honour (objects stay on the table)
    "object_xy_m": 0.1, "object_yaw_rad": 3.1416, "target_xy_m": 0.15, "target_height_m": (0.05, 0.35),
    "light_scale": (0.0, 3.0), "light_dir_jitter": 0.5, "camera_jitter_m": 0.05,
}


@attrs.frozen
class Randomization:
    """The declared ranges (``None``: no randomization at all)."""

    ranges: Mapping[str, Any] = attrs.field(factory=lambda: dict(DEFAULT_RANGES))


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and np.isfinite(value)


def parse_randomization(value: object) -> Randomization | None:
    """The authored ``randomize`` value: ``ValueError`` naming the key for a bad range."""
    if value is False:
        return None
    if value is None or value is True:
        return Randomization()
    if not isinstance(value, Mapping):
        raise ValueError(f"mujoco.randomize: must be a mapping of ranges or false (got {type(value).__name__})")
    ranges = dict(DEFAULT_RANGES)
    for key, item in value.items():
        if key not in DEFAULT_RANGES:
            raise ValueError(f"mujoco.randomize.{key}: unknown range (known: {', '.join(DEFAULT_RANGES)})")
        limit = _LIMITS[key]
        if isinstance(limit, tuple):
            ok = (isinstance(item, list | tuple) and len(item) == 2 and all(_number(v) for v in item)
                  and limit[0] <= item[0] <= item[1] <= limit[1])
            if not ok:
                raise ValueError(f"mujoco.randomize.{key}: must be [low, high] with "
                                 f"{limit[0]} <= low <= high <= {limit[1]} (got {item!r})")
            ranges[key] = [float(item[0]), float(item[1])]
        else:
            if not (_number(item) and 0 <= float(item) <= float(limit)):  # type: ignore[arg-type]
                raise ValueError(f"mujoco.randomize.{key}: must be a number from 0 through {limit} (got {item!r})")
            ranges[key] = float(item)
    return Randomization(ranges)


def _symmetric(rng: np.random.Generator, half: float, size: int) -> np.ndarray[Any, Any]:
    return rng.uniform(-half, half, size=size) if half > 0 else np.zeros(size)


def _between(rng: np.random.Generator, pair: list[float]) -> float:
    return float(rng.uniform(pair[0], pair[1])) if pair[1] > pair[0] else float(pair[0])


def apply_randomization(model: Any, home_key: int, randomization: Randomization, seed: int) -> dict[str, Any]:
    """Vary ``model`` in place (the home keyframe, lights, cameras); return what was applied.

    The lift target is returned as ``target_offset_m`` for the pick planner.
    """
    r = randomization.ranges
    rng = np.random.default_rng(seed)
    applied: dict[str, Any] = {"seed": seed, "ranges": dict(r)}
    objects = {}
    key_qpos = model.key_qpos[home_key]
    for name in OBJECTS:
        adr = int(model.joint(f"{name}_free").qposadr[0])
        dxy = _symmetric(rng, float(r["object_xy_m"]), 2)
        yaw = float(_symmetric(rng, float(r["object_yaw_rad"]), 1)[0])
        key_qpos[adr:adr + 2] += dxy
        key_qpos[adr + 3:adr + 7] = [np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2)]
        objects[name] = {"xy_m": [float(v) for v in key_qpos[adr:adr + 2]], "yaw_rad": yaw}
    applied["objects"] = objects
    target = _symmetric(rng, float(r["target_xy_m"]), 2)
    height = _between(rng, r["target_height_m"])
    applied["target_offset_m"] = [float(target[0]), float(target[1]), height]
    scale = _between(rng, r["light_scale"])
    for name in LIGHTS:
        light = model.light(name)
        light.diffuse[:] = np.clip(light.diffuse * scale, 0.0, 1.0)
        light.dir[:2] += _symmetric(rng, float(r["light_dir_jitter"]), 2)
    applied["light_scale"] = scale
    cameras = {}
    for name in EXTERIOR_CAMERAS:
        camera = model.camera(name)
        camera.pos[:] += _symmetric(rng, float(r["camera_jitter_m"]), 3)
        cameras[name] = [float(v) for v in camera.pos]
    applied["camera_pos_m"] = cameras
    return applied
