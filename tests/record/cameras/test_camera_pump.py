"""The camera pump on the publishing thread: conversion, per-channel continuity, media lane admission."""

from __future__ import annotations

import threading

from fastsim_contract.values import CameraSample, Envelope, SourceKind
from fastsim_record.core.captured import LaneName
from fastsim_record.core.lane import Lane, LaneSpec
from fastsim_record.errors import ContractError
from fastsim_record.pipeline.camera_pump import CameraPump
from fastsim_record.pipeline.monitor import Monitor
from fastsim_record.pipeline.pumps import LaneHandle
from fastsim_record.testing.cameras import camera_tick


def _pump(**aliases: bool) -> tuple[CameraPump, LaneHandle, Monitor]:
    handle = LaneHandle(
        Lane(LaneSpec(name=LaneName.MEDIA, max_items=64, max_bytes=1 << 30), list(aliases.values())), threading.Event()
    )
    monitor = Monitor(lambda _reason: False)
    return CameraPump(aliases, handle, monitor), handle, monitor


def _stamped(samples: tuple[CameraSample, ...], start: int, tick: int) -> list[Envelope]:
    return [
        Envelope(
            global_sequence=start + i, source=SourceKind.CAMERA, generation=0, tick=tick,
            sim_time_ns=tick, payload=s, source_sequence=tick,
        )
        for i, s in enumerate(samples)
    ]


def test_pump_admits_each_channel_with_its_own_continuity() -> None:
    """Two cameras' channels each keep their own capture sequence; the frame is admitted untouched."""
    pump, handle, monitor = _pump(a=True, b=False)
    seq = 1
    published = []
    for tick in (1, 2, 3):
        for alias in ("a", "b"):
            samples = camera_tick(alias, tick=tick)
            published.append(samples[0].value)
            for envelope in _stamped(samples, seq, tick):
                pump(envelope)
            seq += 4
    assert monitor.error is None
    items = handle.lane.drain()
    assert len(items) == 24
    assert items[0].source == "cameras.a.rgb"
    assert items[0].stream == "cameras.a.rgb"
    assert items[1].stream == "cameras.a.extrinsics.translation"
    assert items[0].size == 64 * 48 * 3
    assert [i.required for i in items[:5]] == [True] * 4 + [False]
    rgb = [i.payload.value for i in items if isinstance(i.payload, CameraSample) and i.payload.role == "rgb"]
    assert all(x is y for x, y in zip(rgb, published, strict=True))
    assert handle.wake.is_set()


def test_unselected_camera_is_a_contract_error() -> None:
    """A sample of a camera Record did not select latches a ContractError and is not admitted."""
    pump, handle, monitor = _pump(a=True)
    for envelope in _stamped(camera_tick("zzz", tick=1), 1, 1):
        pump(envelope)
    assert isinstance(monitor.error, ContractError)
    assert "unselected" in str(monitor.error)
    assert handle.lane.drain() == []


def test_channel_sequence_hole_is_a_contract_error() -> None:
    """A camera channel whose capture sequence skips one latches a continuity error."""
    pump, _, monitor = _pump(a=True)
    for envelope in _stamped(camera_tick("a", tick=1), 1, 1):
        pump(envelope)
    for envelope in _stamped(camera_tick("a", tick=3), 5, 3):
        pump(envelope)
    assert isinstance(monitor.error, ContractError)


def test_grey_and_rgba_frames_are_admitted_at_their_own_byte_size() -> None:
    """Byte admission charges a grey frame H*W bytes and an RGBA frame H*W*4 (its ``nbytes``), not an RGB frame's."""
    from fastsim_record.testing.cameras import scene_image

    pump, handle, monitor = _pump(grey=True, rgba=True)
    for k, (alias, channels) in enumerate((("grey", 1), ("rgba", 4))):
        samples = camera_tick(alias, tick=1, frame=scene_image(48, 64, 1, channels))
        for envelope in _stamped(samples, 1 + 4 * k, 1):
            pump(envelope)
    assert monitor.error is None
    sizes = {i.stream: i.size for i in handle.lane.drain() if i.stream.endswith(".rgb")}
    assert sizes == {"cameras.grey.rgb": 48 * 64, "cameras.rgba.rgb": 48 * 64 * 4}
