"""Record on a Core that delivers blocks of ticks (issue 26), through the fake Core: the
same file as per tick, opting in only with a fail_run numeric lane, a block that does not
fit is fatal with exact accounting, and a Core without the keyword gets a plain subscription;
and on the embedded host, once it stamps blocks, the same file with and without them."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from unittest import mock

import attrs
import pytest
from tests.record.pipeline.test_tick_buffers import _record

from fastsim_contract.values import (
    CameraCapture,
    CapturePlan,
    ChannelDescriptor,
    CompletionKind,
    ObservationBlock,
)
from fastsim_record.bootstrap import create_plugin
from fastsim_record.config.model import CameraConfig, RecordConfig
from fastsim_record.core.lane import BLOCK_CAP, Lane
from fastsim_record.pipeline.pumps import Pump
from fastsim_record.testing.cameras import camera_tick
from fastsim_record.testing.fake_core import FakeCore, FakePluginContext, numeric_channels
from fastsim_record.testing.harness import Harness, make_config, plan_for, summary_of

_WAIT = 30.0  # a hang guard, never a timing assertion
_CAM = "sensors.cam.camera"
CAMERA = CameraCapture(alias="cam", rgb=f"{_CAM}.rgb", intrinsics=f"{_CAM}.intrinsics",
                       translation=f"{_CAM}.extrinsics.translation",
                       quaternion_xyzw=f"{_CAM}.extrinsics.quaternion_xyzw")
CHANNELS = (
    *numeric_channels(3),
    ChannelDescriptor("robot.f32", "numeric", "float32", (3,), ("m",) * 3, "robot"),
    ChannelDescriptor("robot.count", "numeric", "int32", (), ("1",), "robot"),
    ChannelDescriptor(CAMERA.rgb, "rgb", "uint8", (48, 64, 3), (), "cam"),
    ChannelDescriptor(CAMERA.intrinsics, "numeric", "float64", (3, 3), (), "cam"),
    ChannelDescriptor(CAMERA.translation, "numeric", "float64", (3,), (), "cam"),
    ChannelDescriptor(CAMERA.quaternion_xyzw, "numeric", "float64", (4,), (), "cam"),
)


def _seeded_run(max_block: int) -> Harness:
    """Ticks alone, with commands and events, camera frames, an event between blocks, a reset, an unpaced stretch."""
    base = RecordConfig()
    config = attrs.evolve(base, streams=attrs.evolve(base.streams, cameras={"cam": CameraConfig(
        CAMERA.rgb, CAMERA.intrinsics, CAMERA.translation, CAMERA.quaternion_xyzw,
    )}))
    plan = plan_for(config, CHANNELS)
    plan = CapturePlan(plan.sources | {"cameras"}, plan.observation_channels, cameras=(CAMERA,))
    h = Harness.started(config, channels=CHANNELS, capture=plan, max_block=max_block, packed_ticks=True)
    h.run_ticks(130, control=False)
    for _ in range(4):  # a camera frame every 5 ticks: each flushes the pending block
        h.run_ticks(5, control=False)
        for sample in camera_tick("cam", tick=h.core.tick):
            h.core.publish_camera(sample.channel, sample.value, sample.calibration_digest, sample.profile)
    h.run_ticks(20, events_every=7)
    h.core.publish("events", {"event": "marker"})
    h.run_ticks(57, control=False)
    h.core.reset()
    h.run_ticks(95, control=False, unpaced=True)
    h.run_ticks(10, control=True, events_every=3)
    result = h.finish()
    assert result.ok, result.reason
    return h


@pytest.mark.parametrize("k", [40, 7])
def test_blocks_write_the_same_file_as_ticks(k: int) -> None:
    """The same seeded Run, delivered in blocks and per tick, is one file byte for byte."""
    blocks = _seeded_run(k)
    ticks = _seeded_run(1)
    assert blocks.core.blocks_stamped > 332 // k  # every tick went out in a block
    assert ticks.core.blocks_stamped == 0
    assert blocks.wiring.worker is not None
    assert blocks.wiring.worker._runs.runs >= blocks.core.blocks_stamped
    assert len(blocks.data()) > 50_000
    assert blocks.data() == ticks.data()


@pytest.mark.parametrize("policy", ["fail_run", "drop_newest", "drop_oldest", "degrade_recording"])
def test_record_opts_in_only_with_a_fail_run_numeric_lane(policy: str) -> None:
    """fail_run subscribes with max_block BLOCK_CAP (240) and gets blocks; a lossy lane with 1, and none."""
    config = make_config(observations="explicit", include={"joints": ("robot.c000", False)},
                         numeric=(2048, 1 << 30, policy))
    h = Harness.started(config, max_block=40)
    h.run_ticks(100, control=False)
    lossy = policy != "fail_run"
    assert ("observations", 1 if lossy else BLOCK_CAP) in h.core.subscribe_blocks
    assert (h.core.blocks_stamped == 0) is lossy
    assert h.finish().ok


def test_a_fail_run_numeric_lane_opts_in_below_its_pressure_mark() -> None:
    """The default lane (fail_run, 2,048 items) takes BLOCK_CAP (240); a 64-item lane 8, its pressure mark."""
    assert ("observations", BLOCK_CAP) in Harness.started().core.subscribe_blocks
    h = Harness.started(make_config(numeric=(64, 1 << 30, "fail_run")), max_block=120)
    assert ("observations", 8) in h.core.subscribe_blocks
    h.run_ticks(20, control=False)
    assert h.core.blocks_stamped == 2
    assert h.finish().ok


def test_a_block_that_does_not_fit_latches_fatal_with_exact_accounting() -> None:
    """Stalled writer, flooded 64-item fail_run lane: FATAL once; enqueued == dequeued + depth + lost."""
    h = Harness.started(make_config(numeric=(64, 1 << 30, "fail_run"), batching=(2, 1 << 30, 1000.0)),
                        max_block=120)
    h.core.outputs.faults.stall = True
    h.run_ticks(8, control=False)  # one block of 8: written, and the write stalls
    assert h.core.outputs.stalled.wait(_WAIT)
    h.run_ticks(200, control=False)
    winner = h.core.wait_completion(_WAIT)
    assert winner is not None
    assert winner.kind is CompletionKind.FAILED
    assert "numeric lane overflow under fail_run" in winner.reason
    assert "block of 8 ticks" in winner.reason
    h.core.outputs.release_stall()
    result = h.finish()
    assert not result.ok
    numeric = summary_of(result)["lanes"]["numeric"]
    assert numeric["enqueued"] == numeric["dequeued"] + numeric["depth"] + numeric["lost"]
    assert numeric["lost"] == 0
    assert numeric["enqueued"] % 8 == 0
    assert 64 - 8 < numeric["enqueued"] <= 64 + 8
    assert numeric["failures"] == 200 + 8 - numeric["enqueued"]  # every refused tick, once
    assert "commit" not in h.core.outputs.steps()


class _NoBlocks:
    """A Core's services from before blocks: ``subscribe`` has no ``max_block`` keyword."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.calls: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def subscribe(self, source: str, sink: Any, *, from_sequence: int = 1, channels: Any = ()) -> Any:
        self.calls.append({"source": source, "sink": sink})
        return self._inner.subscribe(source, sink, from_sequence=from_sequence, channels=channels)


def test_a_core_without_the_keyword_gets_the_plain_subscription() -> None:
    """TypeError for max_block: one probe, then the per-tick subscription of the pump itself."""
    config = make_config()
    core = FakeCore(channels=numeric_channels(3), capture=plan_for(config, numeric_channels(3)), max_block=40)
    services = _NoBlocks(core.services_for("record"))
    plugin = create_plugin(FakePluginContext("record", config, services))  # type: ignore[arg-type]
    plugin.prepare()
    plugin.start()
    core.start_producers()
    observed = [call["sink"] for call in services.calls if call["source"] == "observations"]
    assert len(observed) == 1
    assert isinstance(observed[0], Pump)
    assert observed[0].max_block == 1
    assert ("observations", 1) in core.subscribe_blocks
    for _ in range(50):
        core.publish_tick()
    assert core.blocks_stamped == 0
    results = core.terminate()
    plugin.stop()
    plugin.close()
    assert results[0].ok, results[0].reason


def test_blocks_from_the_embedded_host_write_the_same_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the embedded host, a seeded Run (commands, events, resets) with and without blocks is one file."""
    received: list[int] = []
    blocks = Pump.blocks

    def counting(self: Pump, item: Any) -> None:
        payload = getattr(item, "payload", None)
        if isinstance(payload, ObservationBlock):
            received.append(len(payload))
        blocks(self, item)

    monkeypatch.setattr(Pump, "blocks", counting)
    with_blocks = _record(tmp_path, "blocks", reset_every_s=1.0)
    assert received, "the embedded host delivered no ObservationBlock"
    assert max(received) > 1
    monkeypatch.setattr(Lane, "block_limit", lambda self, record_bytes: 1)  # Record does not opt in
    received.clear()
    per_tick = _record(tmp_path, "ticks", reset_every_s=1.0)
    assert not received
    assert with_blocks == per_tick


def test_the_worker_counts_a_blocks_ticks_for_its_hole_guard() -> None:
    """Rule 7's count of pushed items counts a block's ticks, as the merge counts a run's: nothing is left 'held'."""
    h = _seeded_run(40)
    wiring = h.plugin.wiring
    assert wiring is not None
    assert wiring.worker is not None
    worker = wiring.worker
    assert worker._runs.runs > 0, "no block became a run"  # blocks really flowed
    assert worker._pushed == worker._merge.released_items  # with the carrier count it was fewer


def test_a_pressed_block_admission_yields_the_gil_once_and_a_plain_one_does_not() -> None:
    """A block admitted past the lane's pressure mark yields the GIL once (a waiting worker runs); below it, never."""
    from fastsim_record.pipeline import pumps

    yields: list[float] = []
    with mock.patch.object(pumps, "_yield_gil", yields.append):
        h = Harness.started(make_config(numeric=(2048, 1 << 30, "fail_run"), batching=(2, 1 << 30, 1000.0)),
                            max_block=120)
        h.core.outputs.faults.stall = True
        h.run_ticks(8, control=False)  # one block of 8, far below the pressure mark (2048 / 8 = 256 items)
        h.core.publish("events", {"event": "marker"})  # any other stamp delivers the pending block (BK2)
        assert h.core.outputs.stalled.wait(_WAIT)
        assert yields == []
        h.run_ticks(400, control=False)  # the writer is stalled: the lane fills past its mark
        pressed = len(yields)
        h.core.outputs.release_stall()
        h.finish()
    assert pressed >= 1
    assert set(yields) == {0}
