"""A batch of a few large column blocks (issue 26, wkblk): a target with ``writev`` takes it in
ONE vectored call, its block buffers unjoined (no joined copy of the payload area, also when
a CRC or a digest is taken), and the file is the one a plain target and rows give."""

from __future__ import annotations

import io

import numpy as np
import pytest

from fastsim_recording_format import FsrWriter, RecordIn
from fastsim_recording_format.writer import RecordBlock

from .helpers import RUN, STREAMS
from .test_vectored_write import VectoredTarget, _file

SIZE = 56  # 7 float64, the helpers' obs.joints
K = 1000  # ticks per block: 56,000 bytes, above the writer's big-part size (16 KiB)


def _blocks(first: int, blocks: int, k: int = K) -> RecordBlock:
    """``blocks`` column blocks of ``k`` ticks each (1-D byte views, as a block carrier gives)."""
    rng = np.random.default_rng(first)
    parts = []
    for _ in range(blocks):
        block = rng.random((k, SIZE // 8)).view(np.uint8).reshape(-1)
        block.flags.writeable = False
        parts.append(block)
    n = blocks * k
    g = np.arange(first, first + n, dtype=np.uint64)
    return RecordBlock(1, 0, g, g, g.astype(np.int64) * 10, SIZE, parts[0], {0: {"channel_sequence": first}},
                       tuple(parts[1:]))


def _rows(block: RecordBlock) -> list[RecordIn]:
    """The same records one row each."""
    area = b"".join(np.asarray(p).tobytes() for p in (block.payload, *block.more))
    return [
        RecordIn.data(1, int(g), int(s), 0, int(t), area[k * SIZE:(k + 1) * SIZE], dict(block.metadata.get(k, {})))
        for k, (g, s, t) in enumerate(zip(block.global_sequence, block.stream_sequence, block.sim_time_ns, strict=True))
    ]


@pytest.mark.parametrize("integrity", ["structural", "strong"])
@pytest.mark.parametrize("payload_crc", [False, True])
def test_a_few_large_blocks_go_out_in_one_vectored_call(integrity: str, payload_crc: bool) -> None:
    """Three, then one, large block parts: one ``writev`` each, the plain target's bytes and the rows' bytes."""
    batches = [_blocks(1, 3), _blocks(1 + 3 * K, 1)]
    target = VectoredTarget()
    vectored = _file(target, [[b] for b in batches], integrity, payload_crc)
    assert target.calls == [1 + 1 + 3 + 1, 1 + 1 + 1 + 1]  # header, table+metadata, blocks, padding
    plain = _file(io.BytesIO(), [[b] for b in batches], integrity, payload_crc)
    rows = _file(io.BytesIO(), [_rows(b) for b in batches], integrity, payload_crc)
    assert vectored == plain == rows


def test_a_few_small_parts_are_not_vectored() -> None:
    """A few parts below the big-part size keep today's writes (the same bytes)."""
    target = VectoredTarget()
    batch = _blocks(1, 2, k=20)  # 1,120 bytes a part
    assert _file(target, [[batch]], "structural", True) == _file(io.BytesIO(), [[batch]], "structural", True)
    assert target.calls == []


def test_a_failed_vectored_block_write_fails_the_writer() -> None:
    """A short vectored write of a few large blocks: the writer is failed, nothing more is appended."""
    writer = FsrWriter(VectoredTarget(short=10), RUN, STREAMS)
    with pytest.raises(OSError, match="vectored write took 10 of"):
        writer.write_batch([_blocks(1, 2)])
    with pytest.raises(ValueError, match="failed"):
        writer.write_batch([_blocks(1 + 2 * K, 1)])


@pytest.mark.parametrize("payload_crc", [False, True])
def test_a_mixed_batch_of_large_blocks_and_a_few_rows_is_the_plain_file(payload_crc: bool) -> None:
    """The segment path (a row between two large blocks) through a ``writev`` target: one call, the same bytes."""
    from fastsim_recording_format.model import RecordKind, RecordRow

    first, second = _blocks(1, 1), _blocks(2 + K, 1)
    row = RecordRow(9, RecordKind.DATA, 1 + K, 1, 0, int(first.sim_time_ns[-1]) + 5, b'{"event": 1}', {"tick": 1},
                    1 + K, 1)
    second = RecordBlock(1, 0, second.global_sequence, second.global_sequence - np.uint64(1),
                         second.sim_time_ns, SIZE, second.payload, second.metadata, ())
    batch = [first, row, second]
    target = VectoredTarget()
    vectored = _file(target, [batch], "strong", payload_crc)
    assert target.calls == [1 + 1 + 3 + 1]  # header, table+metadata, block, row payload, block, padding
    assert vectored == _file(io.BytesIO(), [batch], "strong", payload_crc)
    assert vectored == _file(io.BytesIO(), [[*_rows(first), row, *_rows(second)]], "strong", payload_crc)
