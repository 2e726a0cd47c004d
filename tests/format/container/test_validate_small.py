"""A small file's validation (issue 23): a one-batch file goes batch by batch at once, and the
footer totals built without numpy calls per stream equal the per-stream reference."""

from __future__ import annotations

import importlib
import io
from typing import Any

import numpy as np
import pytest

from fastsim_recording_format import FormatError, StreamSpec, validate
from fastsim_recording_format._batch import Accumulator
from fastsim_recording_format._sections import read_head, read_tail
from fastsim_recording_format._source import open_source
from fastsim_recording_format.validate import _check_batches

from .helpers import STREAMS, regions, write_bytes
from .test_validate_chunks import _records

fsr_validate = importlib.import_module("fastsim_recording_format.validate")
#: a declared stream that never gets a record
SILENT = StreamSpec(11, "silent", "event", {}, {})


def _reference_totals(acc: Accumulator) -> list[dict[str, Any]]:
    """The per-stream footer totals as ``footer_totals`` built them before issue 23."""
    proj = acc.projection_array()
    streams = []
    for k, sid in enumerate(acc.stream_ids.tolist()):
        lo, hi = np.searchsorted(proj["stream_id"], [sid, sid + 1])
        rows = proj[lo:hi]
        data, gap, barrier = (int(x) for x in acc.kind_counts[k])
        streams.append({
            "stream_id": sid, "records": data + gap + barrier, "data": data, "gap": gap, "barrier": barrier,
            "payload_bytes": int(acc.payload[k]),
            "first_stream_sequence": int(rows[0]["first_stream_sequence"]) if len(rows) else None,
            "last_stream_sequence": int(rows[-1]["last_stream_sequence"]) if len(rows) else None,
            "generations": sorted(set(rows["generation"].tolist())),
        })
    return streams


def _accumulated(data: bytes) -> Accumulator:
    src = open_source(io.BytesIO(data))
    head = read_head(src)
    return _check_batches(src, head, read_tail(src, head), "structural")


@pytest.mark.parametrize("batches", [1, 2, 11, 15])
def test_footer_stream_totals_equal_the_per_stream_reference(batches: int) -> None:
    """Records, kinds, payload bytes, first/last sequence and generations per stream (a silent one too)."""
    data = write_bytes([*STREAMS, SILENT], _records()[:batches], "structural")
    acc = _accumulated(data)
    streams = acc.footer_totals()["streams"]
    assert streams == _reference_totals(acc)
    assert [type(v) for s in streams for v in s.values()] == [
        type(v) for s in _reference_totals(acc) for v in s.values()
    ]
    assert streams[-1]["first_stream_sequence"] is None
    assert streams[-1]["generations"] == []
    assert {g for s in streams for g in s["generations"]} == ({0, 1} if batches > 10 else {0})
    validate(io.BytesIO(data))


def test_a_one_batch_file_is_checked_batch_by_batch_without_the_chunk_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """One batch: no ``check_file`` (its numpy calls cost more than they save); two: the chunk path."""
    calls: list[int] = []
    check_file = fsr_validate.check_file

    def spy(src: Any, head: Any, tail: Any) -> Any:
        calls.append(len(tail.index))
        return check_file(src, head, tail)

    monkeypatch.setattr(fsr_validate, "check_file", spy)
    one = write_bytes(STREAMS, _records()[:1], "structural")
    two = write_bytes(STREAMS, _records()[:2], "structural")
    assert validate(io.BytesIO(one)).validated_bytes == len(one)
    assert calls == []
    validate(io.BytesIO(two))
    assert calls == [2]
    ((header, _), (table, _)) = [(a, b) for a, b, name in regions(one) if name in ("batch header", "record table")]
    broken = bytearray(one)
    broken[table + 8] ^= 0x01  # the first record's global sequence: the table CRC names it
    with pytest.raises(FormatError, match="record table CRC mismatch") as caught:
        validate(io.BytesIO(bytes(broken)))
    assert caught.value.offset == header + 112  # the header's table-CRC field
