"""The cameras of a Gymnasium recording: where each one's frames come from and how honest its calibration is.

    | # | frames                                    | camera alias                  | calibration               |
    |---|-------------------------------------------|-------------------------------|---------------------------|
    | 1 | ``render()`` (``render_mode="rgb_array"``) | ``options.camera`` (``render``) | MuJoCo env: K and pose of |
    |   | or ``AddRenderObservation``'s pixels       |                               | the GL camera; any other  |
    |   |                                           |                               | env: ``uncalibrated``     |
    | 2 | a ``Box(uint8, (H, W, 3))`` observation    | the leaf's path without       | ``uncalibrated``          |
    |   | leaf (``observation.image`` -> ``image``)  | ``observation.`` (any other   |                           |
    |   |                                           | character than ``[A-Za-z0-9_-]`` -> ``_``; |              |
    |   |                                           | the whole observation: ``observation``) |                 |
    | 3 | a ``Box(uint8, (H, W))``, ``(H, W, 1)`` or | as row 2: a PNG camera (1    | ``uncalibrated``          |
    |   | ``(H, W, 4)`` leaf with the image bounds   | channel grey, 4 RGBA; format  |                           |
    |   | 0..255 (``spaces``)                        | section 9.2), exact           |                           |
    | 4 | frame stacks, other uint8 arrays           | none: numeric channels, exact | -                         |

Frames are recorded as ``(H, W, C)`` uint8 (:func:`camera_frame`: a ``(H, W)`` grey frame is
its ``(H, W, 1)`` view), and read back so.  The recording's ``encoding`` (JPEG by default)
applies to its RGB cameras; a grey or RGBA camera is always PNG, lossless (JPEG has no alpha
and FSR's JPEG streams are RGB), which the episode's camera note says.

An ``uncalibrated`` camera (format rule 3u, ``fastsim_recording_format.codecs.calibration``)
keeps the four camera streams, so Record's per-tick calibration rules hold unchanged:
its intrinsics sample carries the ``uncalibrated`` profile (no fx, fy, cx, cy) and its K,
translation and quaternion are all NaN.  No K is ever invented.

Row 2 applies to every sub-env (the pixels are part of the observation); ``camera_envs``
selects the sub-envs whose ``render()`` frames (row 1) are recorded.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from fastsim_contract.calibration import calibration_digest, uncalibrated_profile
from fastsim_embedded.backends.base import Array, CameraReading
from fastsim_embedded.gymnasium_host.mujoco import (
    calibration_of,
    frame_readings,
    render_observation_path,
)
from fastsim_embedded.gymnasium_host.spaces import Leaf, leaf_value
from fastsim_recording_format.codecs.image import CHANNELS
from fastsim_recording_format.encoding import readonly

__all__ = ["CameraSource", "UncalibratedCamera", "camera_frame", "camera_note", "plan_cameras"]

_NAN_K = readonly(np.full((3, 3), np.nan))
_NAN_T = readonly(np.full(3, np.nan))
_NAN_Q = readonly(np.full(4, np.nan))


class UncalibratedCamera:
    """The readings of a frame whose camera has no known K or pose (format rule 3u)."""

    calibrated = False

    def __init__(self, camera: str) -> None:
        self.camera = camera
        self._profiles: dict[tuple[int, int], tuple[dict[str, object], str]] = {}

    def readings(self, frame: Array, channels: tuple[str, str, str, str]) -> tuple[CameraReading, ...]:
        """The frame and its uncalibrated profile; K, translation and quaternion all NaN."""
        size = (int(frame.shape[1]), int(frame.shape[0]))
        cached = self._profiles.get(size)
        if cached is None:
            profile = uncalibrated_profile(self.camera, *size)
            cached = self._profiles[size] = (profile, calibration_digest(profile))
        return frame_readings(self.camera, channels, frame, cached, (_NAN_K, _NAN_T, _NAN_Q))


@attrs.frozen
class CameraSource:
    """One camera of the recording: its alias and the observation leaf its frames are
    (``None``: ``render()`` frames)."""

    alias: str
    leaf: Leaf | None
    render: bool  # render() frames (row 1), calibrated when the env is MuJoCo

    def frame(self, observation: Any, rendered: Any) -> Any:
        """This camera's frame of one observation (and the ``render()`` frame taken with it)."""
        return rendered if self.leaf is None else leaf_value(observation, self.leaf)

    def calibrator(self, env: Any) -> Any:
        """The sub-env's source of K and pose for this camera (row 1: MuJoCo, else uncalibrated)."""
        found = calibration_of(env, self.alias) if env is not None and self.render else None
        return found if found is not None else UncalibratedCamera(self.alias)


def camera_frame(frame: Any) -> Array | None:
    """``frame`` as a camera records it, uint8 ``(H, W, C)`` with C 1, 3 or 4 (a ``(H, W)`` grey
    frame: its ``(H, W, 1)`` view), else ``None`` (not recorded as a frame)."""
    if not isinstance(frame, np.ndarray) or frame.dtype != np.uint8:
        return None
    if frame.ndim == 2:
        return frame.reshape(*frame.shape, 1)
    return frame if frame.ndim == 3 and frame.shape[2] in (1, 3, 4) else None


def _alias(leaf: Leaf) -> str:
    """The leaf's path as a camera alias (Record's: letters, digits, ``_`` and ``-``)."""
    rest = leaf.name.removeprefix("observation").removeprefix(".")
    return re.sub(r"[^A-Za-z0-9_-]", "_", rest) if rest else "observation"


def plan_cameras(
    observation: Sequence[Leaf], env: Any, *, render_frames: bool, render_alias: str, images: bool,
) -> tuple[tuple[CameraSource, ...], tuple[Leaf, ...]]:
    """``(cameras, numeric observation leaves)`` of a recording (module table).

    ``render_frames``: the env renders ``rgb_array`` frames and they are asked for;
    ``images``: image observation leaves become cameras (``False``: numeric channels)."""
    path = render_observation_path(env) if env is not None and render_frames else None
    cameras: list[CameraSource] = []
    numeric: list[Leaf] = []
    for leaf in observation:
        if leaf.image and path is not None and leaf.path == path:  # AddRenderObservation: render frames
            cameras.append(CameraSource(render_alias, leaf, True))
        elif leaf.image and images:
            cameras.append(CameraSource(_alias(leaf), leaf, False))
        else:
            numeric.append(leaf)
    if render_frames and not any(c.alias == render_alias for c in cameras):
        cameras.insert(0, CameraSource(render_alias, None, True))
    aliases = [c.alias for c in cameras]
    if len(set(aliases)) != len(aliases):
        raise ValueError(f"observation: two cameras would share the alias {sorted(aliases)}; rename a Dict key")
    return tuple(cameras), tuple(numeric)


def camera_note(calibrators: dict[str, Any], asked: bool, shapes: Mapping[str, tuple[int, ...]] | None = None) -> str:
    """How this sub-env's cameras were recorded (in the episode's description); ``shapes``:
    alias -> its frames' ``(H, W, C)`` (a grey or RGBA camera is said to be PNG)."""
    if not calibrators:
        return "no camera recorded" + ("" if asked else ": render frames not asked for")
    return "; ".join(
        (f"{alias}: MuJoCo renderer, K and pose of every frame read from the scene's GL camera"
         if getattr(cal, "calibrated", True) else
         f"{alias}: uncalibrated (no calibration source: Record never invents a K; K and pose are NaN)")
        + _png_note((shapes or {}).get(alias, (3,))[-1])
        for alias, cal in calibrators.items()
    )


def _png_note(channels: int) -> str:
    if channels == 3:
        return ""
    return f", {CHANNELS[channels]} ({channels} channel{'s' if channels > 1 else ''}): PNG, exact"
