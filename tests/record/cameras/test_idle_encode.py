"""The worker's idle-priority encode lane (``pipeline.idle_encode``): same bytes, lowered thread, errors raised
on the caller, bounded thread life."""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from fastsim_record.adapters.codecs import JpegEncoder, PngEncoder, RawRgbEncoder
from fastsim_record.errors import DescriptorDriftError
from fastsim_record.pipeline import idle_encode
from fastsim_record.pipeline.idle_encode import IdleEncodeLane, OffloadedFrameEncoder
from fastsim_record.ports.encoders import FrameEncoder, ImageDescriptor, RgbFrame

LINUX_IDLE = hasattr(os, "SCHED_IDLE") and hasattr(os, "sched_getscheduler")


def _frames(n: int) -> list[RgbFrame]:
    rng = np.random.default_rng(7)
    return [rng.integers(0, 256, (48, 64, 3), dtype=np.uint8) for _ in range(n)]


def _encode_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "record-encode"]


class _Spy:
    """A frame encoder that notes the thread and its scheduling policy of every call."""

    def __init__(self, inner: FrameEncoder) -> None:
        self.inner = inner
        self.calls: list[tuple[str, int | None]] = []

    @property
    def descriptor(self) -> ImageDescriptor:
        return self.inner.descriptor

    def encode(self, frame: RgbFrame) -> bytes:
        policy = os.sched_getscheduler(0) if LINUX_IDLE else None
        self.calls.append((threading.current_thread().name, policy))
        return self.inner.encode(frame)


@pytest.fixture(autouse=True)
def _no_steals(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane's thread takes every frame however long a busy machine keeps it from running (rule 5 off)."""
    monkeypatch.setattr(idle_encode, "STEAL_AFTER_S", 3600.0)


@pytest.mark.parametrize("inner", [JpegEncoder(64, 48), PngEncoder(64, 48)])
def test_the_lane_returns_the_callers_bytes_encoded_on_a_lowered_thread(inner: FrameEncoder) -> None:
    """The payload is byte for byte the caller's encode, computed on a SCHED_IDLE thread; the caller keeps its priority."""
    lane = IdleEncodeLane("idle")
    spy = _Spy(inner)
    offloaded = OffloadedFrameEncoder(spy, lane)
    assert offloaded.descriptor == inner.descriptor
    frames = _frames(5)
    try:
        assert [offloaded.encode(f) for f in frames] == [inner.encode(f) for f in frames]
    finally:
        lane.close()
    if LINUX_IDLE:
        assert lane.lowered is True
        assert spy.calls == [("record-encode", os.SCHED_IDLE)] * 5
        assert os.sched_getscheduler(0) != os.SCHED_IDLE  # the caller keeps its priority


def test_nice_lowers_the_thread_to_nice_19() -> None:
    """Policy nice: the lane's thread runs at nice 19, the caller does not."""
    if not hasattr(os, "setpriority"):
        pytest.skip("no setpriority here")
    seen: list[int] = []

    class Nice(_Spy):
        def encode(self, frame: RgbFrame) -> bytes:
            seen.append(os.getpriority(os.PRIO_PROCESS, threading.get_native_id()))
            return self.inner.encode(frame)

    lane = IdleEncodeLane("nice")
    try:
        OffloadedFrameEncoder(Nice(JpegEncoder(64, 48)), lane).encode(_frames(1)[0])
    finally:
        lane.close()
    assert seen == [19]
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) != 19


def test_an_encoder_error_is_raised_on_the_caller_and_the_lane_goes_on() -> None:
    """An encoder's own error is raised on the caller, and the next frame encodes."""
    lane = IdleEncodeLane("idle")
    offloaded = OffloadedFrameEncoder(JpegEncoder(64, 48), lane)
    try:
        with pytest.raises(DescriptorDriftError, match="expected uint8 RGB of shape"):
            offloaded.encode(np.zeros((48, 64), dtype=np.uint8))
        frame = _frames(1)[0]
        assert offloaded.encode(frame) == JpegEncoder(64, 48).encode(frame)
    finally:
        lane.close()


def test_inline_encodes_on_the_caller_without_a_thread() -> None:
    """Policy inline: the caller encodes and no thread starts."""
    lane = IdleEncodeLane("inline")
    spy = _Spy(JpegEncoder(64, 48))
    before = _encode_threads()
    OffloadedFrameEncoder(spy, lane).encode(_frames(1)[0])
    assert spy.calls[0][0] == threading.current_thread().name
    assert _encode_threads() == before


def test_where_the_thread_cannot_be_lowered_encodes_run_on_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where the priority cannot be lowered, the first encode ends the thread and the rest run on the caller."""
    monkeypatch.setattr(idle_encode, "lower_thread_priority", lambda policy: False)
    lane = IdleEncodeLane("idle")
    spy = _Spy(JpegEncoder(64, 48))
    offloaded = OffloadedFrameEncoder(spy, lane)
    frames = _frames(3)
    assert [offloaded.encode(f) for f in frames] == [JpegEncoder(64, 48).encode(f) for f in frames]
    assert lane.offloaded is False
    me = threading.current_thread().name
    assert [c[0] for c in spy.calls] == ["record-encode", me, me]


def test_the_thread_ends_at_close_and_after_idling(monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread ends at close() and after IDLE_EXIT_S without work; a later encode starts a new one."""
    lane = IdleEncodeLane("idle")
    offloaded = OffloadedFrameEncoder(JpegEncoder(64, 48), lane)
    offloaded.encode(_frames(1)[0])
    thread = lane._thread
    assert thread is not None
    assert thread.is_alive()
    lane.close()
    thread.join(5)
    assert not thread.is_alive()
    monkeypatch.setattr(idle_encode, "IDLE_EXIT_S", 0.05)
    offloaded.encode(_frames(1)[0])  # a new thread for a later encode
    thread = lane._thread
    assert thread is not None
    thread.join(5)  # no close(): it ends by itself
    assert not thread.is_alive()
    frame = _frames(1)[0]
    assert offloaded.encode(frame) == JpegEncoder(64, 48).encode(frame)  # and starts again
    lane.close()


def test_a_legacy_raw_copy_is_not_offloaded() -> None:
    """The camera stage offloads JPEG/PNG codecs, not the legacy raw RGB copy."""
    from fastsim_record.adapters.camera_records import CameraRecordEncoder
    from fastsim_record.pipeline.camera_stage import CameraSetup, CameraStage

    stage = CameraStage(
        (CameraSetup("raw", {}, False, RawRgbEncoder(64, 48)), CameraSetup("jpg", {}, False, JpegEncoder(64, 48))),
        CameraRecordEncoder,
    )
    encoders = {alias: e.encoder for alias, e in stage._encoders.items()}  # type: ignore[attr-defined]
    assert isinstance(encoders["raw"], RawRgbEncoder)
    assert isinstance(encoders["jpg"], OffloadedFrameEncoder)
    stage.at_cut()


def test_the_caller_sleeps_while_the_lane_encodes() -> None:
    """The worker waits without holding the GIL: another Python thread runs meanwhile."""

    class Slow(_Spy):
        def encode(self, frame: RgbFrame) -> bytes:
            time.sleep(0.2)  # releases the GIL, as the codec does
            return self.inner.encode(frame)

    lane = IdleEncodeLane("idle")
    ticks = 0
    stop = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1
            time.sleep(0.001)

    other = threading.Thread(target=count)
    other.start()
    try:
        OffloadedFrameEncoder(Slow(JpegEncoder(64, 48)), lane).encode(_frames(1)[0])
    finally:
        stop.set()
        other.join()
        lane.close()
    assert ticks > 10


def test_a_starved_lane_has_its_frame_taken_back_by_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rule 5: a frame the lane's thread has not taken in time is encoded by the caller, so are the next ones, then the lane again."""
    real = idle_encode.lower_thread_priority
    go = threading.Event()

    def held_start(policy: str) -> bool:
        go.wait()  # the thread gets no CPU until the test says so (a machine without idle cycles)
        return real(policy)

    monkeypatch.setattr(idle_encode, "lower_thread_priority", held_start)
    monkeypatch.setattr(idle_encode, "STEAL_AFTER_S", 0.01)
    monkeypatch.setattr(idle_encode, "INLINE_AFTER_STEAL", 2)
    lane = IdleEncodeLane("idle")
    spy = _Spy(JpegEncoder(64, 48))
    offloaded = OffloadedFrameEncoder(spy, lane)
    frames = _frames(4)
    try:
        payloads = [offloaded.encode(f) for f in frames[:3]]
        go.set()
        monkeypatch.setattr(idle_encode, "STEAL_AFTER_S", 3600.0)  # now the lane takes it, whenever it runs
        payloads.append(offloaded.encode(frames[3]))
    finally:
        go.set()
        lane.close()
    assert payloads == [JpegEncoder(64, 48).encode(f) for f in frames]
    me = threading.current_thread().name
    assert [c[0] for c in spy.calls] == [me, me, me, "record-encode"]
    assert lane.steals == 1
