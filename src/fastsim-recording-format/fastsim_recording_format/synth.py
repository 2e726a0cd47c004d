"""Synthetic FSR files for the ``fsr synth`` tool, the benchmarks and the tests.

Records cycle over ``numeric_streams`` numeric streams (``obs.<i>``); with
``camera_every > 0`` every ``camera_every``-th record is instead a camera frame on
``cameras.overview.rgb``.  Batches close at ``batch_items`` records, at ``batch_bytes``
payload bytes, or at a generation change (the Record batching rules).  Payloads are
deterministic, so two runs with the same arguments write identical files.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import BinaryIO, Final, TypedDict, Unpack

import numpy as np
import numpy.typing as npt

from fastsim_recording_format import names
from fastsim_recording_format.model import RecordIn, RecordKind, RunMetadata, SealResult, StreamSpec
from fastsim_recording_format.writer import FsrWriter

__all__ = ["Shape", "scene_frame", "synth_records", "synth_streams", "write_synthetic"]

CAMERA_STREAM = 1000
TICK_NS = 8_333_333


def synth_streams(numeric_streams: int, camera: bool, camera_shape: tuple[int, int] = (480, 640)) -> list[StreamSpec]:
    """The stream table of a synthetic file."""
    out = [
        StreamSpec(i, f"obs.{i}", "observation", {"media_type": "application/x-float64", "dtype": "float64"}, {})
        for i in range(numeric_streams)
    ]
    if camera:
        h, w = camera_shape
        out.append(StreamSpec(
            CAMERA_STREAM, names.rgb_stream("overview"), "camera.rgb",
            {"media_type": "image/x-raw-rgb8", "codec": "raw", "height": h, "width": w, "lossy": False},
            {"camera": "overview"},
        ))
    return out


class Shape(TypedDict, total=False):
    """What a synthetic file holds besides its record count and payload size."""

    numeric_streams: int  # 4
    camera_every: int  # 0: no camera
    camera_bytes: int  # 640 * 480 * 3
    generations: int  # 1
    gap_every: int  # 0: no gaps
    metadata: bool  # False
    seed: int  # 0


_DEFAULTS: Final[Shape] = {
    "numeric_streams": 4, "camera_every": 0, "camera_bytes": 640 * 480 * 3, "generations": 1,
    "gap_every": 0, "metadata": False, "seed": 0,
}


def synth_records(records: int, payload_bytes: int, **shape: Unpack[Shape]) -> Iterator[RecordIn]:
    """The records of a synthetic file, in global order."""
    o: Shape = {**_DEFAULTS, **shape}
    numeric_streams, camera_every, camera_bytes = o["numeric_streams"], o["camera_every"], o["camera_bytes"]
    generations, gap_every, metadata = o["generations"], o["gap_every"], o["metadata"]
    rng = np.random.default_rng(o["seed"])
    numeric = [rng.integers(0, 256, payload_bytes, np.uint8).tobytes() for _ in range(16)]
    frames = [rng.integers(0, 256, camera_bytes, np.uint8).tobytes() for _ in range(4)] if camera_every else []
    stream_seq: dict[int, int] = {}
    per_gen = max(1, -(-records // max(1, generations)))
    for g in range(1, records + 1):
        gen = (g - 1) // per_gen
        tick = (g - 1) % per_gen
        if camera_every and g % camera_every == 0:
            sid, payload = CAMERA_STREAM, frames[g % len(frames)]
        else:
            sid, payload = (g % max(1, numeric_streams)), numeric[g % len(numeric)]
        seq = stream_seq.get(sid, 0) + 1
        stream_seq[sid] = seq
        meta = {"tick": tick, "gen": gen} if metadata else {}
        if gap_every and g % gap_every == 0:
            yield RecordIn(sid, RecordKind.GAP, g, seq, gen, tick * TICK_NS, b"", {"reason": "synthetic"})
        else:
            yield RecordIn(sid, RecordKind.DATA, g, seq, gen, tick * TICK_NS, payload, meta)


def write_synthetic(
    target: str | os.PathLike[str] | BinaryIO,
    records: int,
    payload_bytes: int,
    *,
    batch_items: int = 256,
    batch_bytes: int = 16 << 20,
    integrity: str = "structural",
    seal: bool = True,
    **shape: Unpack[Shape],
) -> SealResult | None:
    """Write a synthetic file; with ``seal=False`` leave it unsealed (like a crash would)."""
    o: Shape = {**_DEFAULTS, **shape}
    streams = synth_streams(o["numeric_streams"], o["camera_every"] > 0, (o["camera_bytes"] // 3 // 640 or 1, 640))
    run = RunMetadata("synthetic", "synthetic-1", {"name": "fsr synth"})
    writer = FsrWriter(target, run, streams, integrity)
    try:
        batch: list[RecordIn] = []
        size = 0
        for rec in synth_records(records, payload_bytes, **shape):
            if batch and rec.generation != batch[-1].generation:
                writer.write_batch(batch)
                batch, size = [], 0
            batch.append(rec)
            size += len(rec.payload)
            if len(batch) >= batch_items or size >= batch_bytes:
                writer.write_batch(batch)
                batch, size = [], 0
        if batch:
            writer.write_batch(batch)
        if not seal:
            writer.flush()
            return None
        return writer.seal({"last_global_sequence": records} if records else {})
    finally:
        writer.close()


def scene_frame(height: int, width: int, tick: int = 0, seed: int = 0) -> npt.NDArray[np.uint8]:
    """A rendered-looking RGB frame: smooth shading, a horizon, a few flat-coloured boxes
    (the boxes drift with ``tick``), for synthetic cameras and codec tests."""
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
