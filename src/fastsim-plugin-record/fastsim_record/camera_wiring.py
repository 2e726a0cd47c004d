"""Camera selection for the composition root: config + declared scene channels -> wiring.

``select_cameras`` runs at prepare (step 1 of ``fastsim_record.bootstrap.wire``), beside
the bootstrap because it builds concrete adapters (the RGB codec of each alias).  With no camera alias it
returns ``None``: no media lane, no camera pump, no camera grant, no camera stream.

    | # | rule                                                                           |
    |---|--------------------------------------------------------------------------------|
    | 1 | every channel an alias names (rgb, intrinsics, translation, quaternion_xyzw) is |
    |   | declared by the scene; otherwise a ConfigError naming the alias field           |
    | 2 | the RGB channel is declared kind ``rgb``, uint8 ``(H, W, 3)`` (or ``(H, W, 1)`` |
    |   | grey / ``(H, W, 4)`` RGBA); its shape fixes the encoder's (depth, segmentation  |
    |   | and the like never reach the image encoder)                                     |
    | 2b| K / translation / quaternion channels are declared float64 (3,3) / (3,) / (4,)  |
    | 3 | the encoder is the alias's codec (JPEG q92 4:4:4 by default, or PNG level 1); a |
    |   | grey or RGBA image needs ``encoding: png``: ``jpeg`` (the default included) is a |
    |   | ConfigError naming ``<alias>.encoding`` (JPEG is 3-channel)                      |
    | 4 | one ``cameras`` source on the media lane; it is required when any alias is      |
    | 5 | the finalizer consumes the per-channel keys ``cameras.<alias>.<role>``, which   |
    |   | are the keys of Core's terminal cut                                              |
"""

from __future__ import annotations

import numpy as np

from fastsim_contract.protocols import RunContext
from fastsim_contract.run_errors import RunIssue
from fastsim_record.adapters.camera_records import CameraRecordEncoder
from fastsim_record.adapters.codecs import encoder_for_camera
from fastsim_record.config.model import RecordConfig
from fastsim_record.core.captured import LaneName
from fastsim_record.errors import ConfigError, DescriptorDriftError
from fastsim_record.pipeline.camera_pump import CAMERA_SOURCE
from fastsim_record.pipeline.camera_stage import CameraSelection, CameraSetup, CameraStage, rgb_size
from fastsim_record.ports.cameras import ARRAY_SHAPES
from fastsim_record.ports.sources import SourceSpec

__all__ = ["select_cameras"]


def select_cameras(
    config: RecordConfig, run: RunContext, *, path: str = "plugins.record.config.streams.cameras"
) -> CameraSelection | None:
    """Rules 1-4; ``None`` when no camera is selected."""
    cameras = config.streams.cameras
    if not cameras:
        return None
    declared = {c.name: c for c in run.channels}
    issues: list[RunIssue] = []
    setups: list[CameraSetup] = []
    for alias, cam in cameras.items():
        where = f"{path}.{alias}"
        channels = {
            "rgb": cam.rgb, "intrinsics": cam.intrinsics,
            "translation": cam.translation, "quaternion_xyzw": cam.quaternion_xyzw,
        }
        missing = [(r, c) for r, c in channels.items() if c not in declared]
        if missing:
            issues += [
                RunIssue(f"{where}.{r}", f"channel {c!r} is not declared by the scene")
                for r, c in missing
            ]
            continue
        rgb = declared[cam.rgb]
        try:
            if rgb.kind != "rgb":
                raise DescriptorDriftError(
                    f"{rgb.name}: declared kind {rgb.kind!r}; only 'rgb' channels are camera RGB"
                )
            width, height, depth = rgb_size(rgb)
        except DescriptorDriftError as exc:
            issues.append(RunIssue(f"{where}.rgb", str(exc)))
            continue
        bad = [
            (role, declared[channels[role]]) for role, shape in ARRAY_SHAPES.items()
            if tuple(declared[channels[role]].shape) != shape
            or np.dtype(declared[channels[role]].dtype) != np.float64
        ]
        if bad:
            issues += [
                RunIssue(
                    f"{where}.{role}",
                    f"{d.name}: must be declared float64{list(ARRAY_SHAPES[role])}, "
                    f"declared {d.dtype}{list(d.shape)}",
                )
                for role, d in bad
            ]
            continue
        try:
            encoder = encoder_for_camera(cam, width=width, height=height, path=where, channels=depth)
        except ConfigError as exc:
            issues += exc.issues
            continue
        setups.append(CameraSetup(alias, channels, cam.required, encoder))
    if issues:
        raise ConfigError(issues)
    aliases = {s.alias: s.required for s in setups}
    spec = SourceSpec(
        CAMERA_SOURCE, CAMERA_SOURCE, LaneName.MEDIA, any(aliases.values()),
        tuple(c for s in setups for c in s.channels.values()),
    )
    return CameraSelection(spec, aliases, CameraStage(tuple(setups), CameraRecordEncoder))
