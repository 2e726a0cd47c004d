"""Block-shaped runs downstream of the capture (issue 26, wkblk): runs whose payload is one
column block each (a ``(k, record_bytes)`` block as a 1-D byte view, what a block carrier
becomes) go through ``BatchWriter`` and the FSR sink over the embedded write lease into the
same file, byte for byte, as the same ticks as tick-buffer runs and through the writer's
general path (``assemble``, no fast path) --
with commands and events between the blocks (the segment path), a generation change, and
with and without payload CRCs.  A steady batch of blocks goes to the lease in ONE vectored
write of its few large blocks (also when it has at most four)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.record.pipeline.test_tick_buffers import _counting

import fastsim_recording_format.writer as writer_module
from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_embedded.output.transaction import FileOutputService
from fastsim_record.adapters.fsr_sink import FsrSink
from fastsim_record.core.batching import BatchLimits, FlushReason
from fastsim_record.pipeline.batch_writer import BatchWriter
from fastsim_record.ports.sinks import OutRecord, RecordColumns, StreamDecl

SIZE = 5040  # one 90-channel tick: 630 float64
K = 40  # ticks per block
DT = 8_333_333
STREAMS = [
    StreamDecl("observations", "observations", {"dtype": "float64", "shape": [630]}),
    StreamDecl("events", "events", {"payload_codec": "json"}),
]


def _plan(seed: int, blocks: int) -> list[tuple[str, Any]]:
    """A seeded Run: blocks of K ticks (generation 0, then 1 after a third), with an event
    between some of them; each entry ``("block", (first_global, first_tick, generation,
    payload))`` or ``("event", (global, event_seq, generation, time))``."""
    rng = np.random.default_rng(seed)
    plan: list[tuple[str, Any]] = []
    g, tick, event = 1, 1, 1
    for b in range(blocks):
        generation = 0 if b < blocks // 3 else 1
        n = int(rng.integers(1, K + 1)) if rng.random() < 0.3 else K
        payload = rng.random((n, SIZE // 8)).view(np.uint8)
        payload.flags.writeable = False
        plan.append(("block", (g, tick, generation, payload)))
        g, tick = g + n, tick + n
        if rng.random() < 0.25:
            plan.append(("event", (g, event, generation, (tick - 1) * DT + 5)))
            g, event = g + 1, event + 1
    return plan


def _block_columns(first: int, tick: int, generation: int, payload: Any, *, tick_buffers: bool) -> RecordColumns:
    n = len(payload)
    g = np.arange(first, first + n, dtype=np.uint64)
    s = np.arange(tick, tick + n, dtype=np.uint64)
    body = tuple(payload) if tick_buffers else payload.reshape(-1)  # per-tick rows, or the block itself
    return RecordColumns("observations", generation, g, s, s.astype(np.int64) * DT, SIZE, body,
                         s.astype(np.int64), True)


def _write(tmp_path: Path, name: str, plan: list[tuple[str, Any]], shape: str, payload_crc: bool) -> bytes:
    """The committed file of ``plan`` fed as ``shape``: ``blocks`` or ``ticks`` (tick-buffer runs)."""
    outputs = FileOutputService(tmp_path / name, RunOutputPolicy(), "cid")
    sink = FsrSink(outputs, "episode.fsr", run_id="run", completion_id="cid", streams=STREAMS,
                   integrity="structural", policy_integrity="none", producer={"name": "test"}, payload_crc=payload_crc)
    writer = BatchWriter(sink, BatchLimits.from_config(10_000, 64 << 20, 1.0))
    generation = 0
    for kind, entry in plan:
        if kind == "event":
            g, seq, gen, t = entry
            writer.add(OutRecord("events", "data", g, seq, gen, t, b'{"event": %d}' % seq))
            continue
        first, tick, gen, payload = entry
        if gen != generation:
            writer.close_generation(gen)
            generation = gen
        writer.add(_block_columns(first, tick, gen, payload, tick_buffers=shape == "ticks"))
    writer.close(FlushReason.FINALIZE)
    facts = sink.finish(degraded=False, fence={"decision": "commit"})
    assert facts["committed_name"] == "episode.fsr"
    return (tmp_path / name / "episode.fsr").read_bytes()


@pytest.mark.parametrize("payload_crc", [False, True])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_block_runs_write_the_file_of_tick_buffers_and_of_the_general_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, payload_crc: bool
) -> None:
    """The same seeded ticks as block runs, as tick-buffer runs, and through the writer's general path: one file."""
    parts = _counting(monkeypatch)
    plan = _plan(seed, 24)
    blocks = _write(tmp_path, "blocks", plan, "blocks", payload_crc)
    # every batch is one vectored write of its few blocks (and rows), also those of at most
    # four parts: header, table + metadata, <= 4 payload parts, padding
    assert parts
    assert max(parts) <= 16
    assert min(parts) <= 1 + 1 + 4 + 1
    assert blocks == _write(tmp_path, "ticks", plan, "ticks", payload_crc)
    with monkeypatch.context() as general:  # the writer's general path (``assemble``), no fast path
        general.setattr(writer_module, "block_batch", lambda *a: None)
        general.setattr(writer_module, "segment_batch", lambda *a: None)
        assert blocks == _write(tmp_path, "general", plan, "blocks", payload_crc)
