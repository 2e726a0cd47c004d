"""Camera fakes: deterministic frames, calibration profiles and the four samples of a tick.

``camera_tick(alias, ...)`` returns the samples a Core publishes for one camera in one
tick, in the order a host publishes them: RGB and extrinsics first (forward-referencing
the epoch's digest), intrinsics last.  Every array is read-only, like Core's.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from fastsim_contract.calibration import calibration_digest, intrinsic_matrix, pinhole_profile
from fastsim_contract.values import CameraSample
from fastsim_record.ports.encoders import FrameEncoder
from fastsim_recording_format import names
from fastsim_recording_format.encoding import readonly
from fastsim_recording_format.synth import scene_frame

__all__ = ["camera_tick", "frozen", "profile_for", "scene_frame", "scene_image", "write_camera_fsr"]

_ROLES = ("rgb", "intrinsics", "translation", "quaternion_xyzw")


#: Mark an array read-only (immutable, as Core hands it over) and return it.
frozen = readonly


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
        sample("translation", names.TRANSLATION, translation),
        sample("quaternion_xyzw", names.QUATERNION, quaternion),
        sample("intrinsics", "intrinsics", k, profile=profile),
    )


def scene_image(height: int, width: int, tick: int, channels: int) -> NDArray[np.uint8]:
    """The scene frame as ``channels`` 1 (its grey luma) or 4 (RGB with a varying alpha), or 3 (RGB)."""
    rgb = scene_frame(height, width, tick)
    if channels == 1:
        grey = (rgb.astype(np.uint16) @ np.array([77, 150, 29], np.uint16)) >> 8
        return np.ascontiguousarray(grey.astype(np.uint8)[..., None])
    if channels == 4:
        alpha = ((np.arange(width, dtype=np.uint16)[None, :] * 7 + tick * 13) % 256).astype(np.uint8)
        return np.ascontiguousarray(np.concatenate([rgb, np.broadcast_to(alpha, (height, width))[..., None]], axis=-1))
    return rgb


def write_camera_fsr(
    path: str | os.PathLike[str],
    encoders: Mapping[str, FrameEncoder],
    plan: Sequence[tuple[int, int, float]],
    *,
    legacy_raw: bool = False,
) -> dict[tuple[str, int], NDArray[np.uint8]]:
    """Write an FSR holding only camera streams; returns (alias, tick) -> the exact frame
    (RGB; for a 1- or 4-channel encoder the scene's grey or RGBA frame: :func:`scene_image`).

    ``plan`` is (generation, tick, fovy_deg) steps; every camera publishes its four samples
    per step.  ``legacy_raw`` writes 0.3.0-era RGB streams instead: codec ``{width,
    height}`` only and packed raw RGB payloads.
    """
    from fastsim_record.adapters.camera_records import CameraRecordEncoder
    from fastsim_record.ports.cameras import camera_streams
    from fastsim_recording_format import FsrWriter, RecordIn, RunMetadata, StreamSpec

    specs: list[StreamSpec] = []
    for alias, encoder in encoders.items():
        channels = {r: f"sensors.{alias}.camera.{r}" for r in _ROLES}
        for decl in camera_streams(alias, channels, encoder.descriptor, required=True):
            codec = dict(decl.codec)
            if legacy_raw and decl.name.endswith("." + names.RGB):
                codec = {"width": encoder.descriptor.width, "height": encoder.descriptor.height}
            specs.append(StreamSpec(len(specs), decl.name, decl.kind, codec, dict(decl.attributes)))
    ids = {s.name: s.stream_id for s in specs}
    frames: dict[tuple[str, int], NDArray[np.uint8]] = {}
    records: list[RecordIn] = []
    stream_seq: dict[str, int] = {}
    seq = 0
    for generation, tick, fovy in plan:
        for alias, encoder in encoders.items():
            d = encoder.descriptor
            rec = CameraRecordEncoder(alias, encoder)
            image = None if d.channels == 3 else scene_image(d.height, d.width, tick, d.channels)
            for sample in camera_tick(alias, tick=tick, width=d.width, height=d.height, fovy_deg=fovy, frame=image):
                out = rec.encode(sample)
                payload = out.payload
                if sample.role == "rgb":
                    frames[(alias, tick)] = np.array(sample.value, dtype=np.uint8)
                    if legacy_raw:
                        payload = frames[(alias, tick)].tobytes()
                seq += 1
                stream_seq[out.stream] = stream_seq.get(out.stream, 0) + 1
                records.append(
                    RecordIn.data(
                        ids[out.stream], seq, stream_seq[out.stream], generation,
                        tick * 10_000_000, payload, dict(out.metadata),
                    )
                )
    run = RunMetadata("run-cameras", "completion-cameras", {"name": "fastsim_record.testing"})
    with FsrWriter(path, run, specs) as writer:
        for start in range(0, len(records), 64):
            writer.write_batch(records[start : start + 64])
        writer.seal()
    return frames
