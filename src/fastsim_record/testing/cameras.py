"""Camera fakes: deterministic frames, calibration profiles and the four samples of a tick.

``camera_tick(alias, ...)`` returns the samples a Core publishes for one camera in one
tick, in the order a host publishes them: RGB and extrinsics first (forward-referencing
the epoch's digest), intrinsics last.  Every array is read-only, like Core's.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fastsim_contract.calibration import calibration_digest, intrinsic_matrix, pinhole_profile
from fastsim_contract.values import CameraSample

__all__ = ["camera_tick", "frozen", "profile_for", "scene_frame"]


def frozen(array: NDArray[Any]) -> NDArray[Any]:
    """Mark an array read-only (immutable, as Core hands it over) and return it."""
    array.setflags(write=False)
    return array


def scene_frame(height: int, width: int, tick: int = 0, seed: int = 0) -> NDArray[np.uint8]:
    """A rendered-looking RGB frame: smooth shading, a horizon, a few flat-coloured boxes."""
    y = np.linspace(0.0, 1.0, height, dtype=np.float32)[:, None]
    x = np.linspace(0.0, 1.0, width, dtype=np.float32)[None, :]
    frame = np.empty((height, width, 3), dtype=np.float32)
    frame[..., 0] = 90 + 60 * y + 20 * x
    frame[..., 1] = 110 + 50 * y
    frame[..., 2] = 160 - 40 * y + 10 * x
    floor = y > 0.55
    frame[np.broadcast_to(floor, (height, width))] = (120, 100, 80)
    rng = np.random.default_rng(seed)
    for i in range(4):
        cy = int((0.3 + 0.4 * rng.random()) * height)
        cx = int(((0.15 + 0.2 * i + 0.01 * tick) % 1.0) * width)
        hh, hw = max(2, height // 10), max(2, width // 14)
        colour = rng.integers(30, 230, size=3)
        shade = np.linspace(1.0, 0.7, 2 * hh, dtype=np.float32)[:, None, None]
        patch = frame[max(0, cy - hh) : cy + hh, max(0, cx - hw) : cx + hw]
        patch[...] = colour * shade[: patch.shape[0]]
    return np.clip(frame, 0, 255).astype(np.uint8)


def profile_for(alias: str, width: int, height: int, fovy_deg: float = 58.0) -> dict[str, object]:
    """The pinhole calibration profile of a fake camera."""
    return pinhole_profile(alias, width, height, fovy_deg)


def camera_tick(
    alias: str,
    *,
    tick: int,
    width: int = 64,
    height: int = 48,
    fovy_deg: float = 58.0,
    frame: NDArray[np.uint8] | None = None,
    channel_prefix: str | None = None,
) -> tuple[CameraSample, ...]:
    """The four samples of one camera in one tick: rgb, translation, quaternion, intrinsics."""
    profile = profile_for(alias, width, height, fovy_deg)
    digest = calibration_digest(profile)
    prefix = channel_prefix or f"sensors.{alias}.camera"
    angle = 0.01 * tick
    rgb = frozen(frame if frame is not None else scene_frame(height, width, tick))
    translation = frozen(np.array([0.5 + 0.001 * tick, -0.4, 0.6], dtype=np.float64))
    quaternion = frozen(
        np.array([0.0, 0.0, math.sin(angle / 2), math.cos(angle / 2)], dtype=np.float64)
    )
    k = frozen(np.array(intrinsic_matrix(profile), dtype=np.float64))

    def sample(role: str, channel: str, value: NDArray[Any], **extra: Any) -> CameraSample:
        return CameraSample(
            camera=alias, channel=f"{prefix}.{channel}", role=role, value=value,
            calibration_digest=digest, channel_sequence=tick, **extra,
        )

    return (
        sample("rgb", "rgb", rgb),
        sample("translation", "extrinsics.translation", translation),
        sample("quaternion_xyzw", "extrinsics.quaternion_xyzw", quaternion),
        sample("intrinsics", "intrinsics", k, profile=profile),
    )
