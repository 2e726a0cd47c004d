"""``validate``'s whole-file fast path (``_file_rules``): same totals, same verdicts."""

from __future__ import annotations

import importlib
import io

import pytest

from fastsim_recording_format import FormatError, RecordIn, validate
from fastsim_recording_format._batch import Accumulator
from fastsim_recording_format._batch_header import CRC_AT
from fastsim_recording_format._file_rules import check_file
from fastsim_recording_format._json import canonical_record_metadata, decode_record_metadata
from fastsim_recording_format._layout import BATCH_HEADER, RECORD_DTYPE, crc, pad8
from fastsim_recording_format._sections import read_head, read_tail
from fastsim_recording_format._source import open_source
from fastsim_recording_format.validate import _check_batches

from .helpers import STREAMS, regions, small_file, write_bytes

_REC = RECORD_DTYPE.itemsize
fsr_validate = importlib.import_module("fastsim_recording_format.validate")


def _many_batches() -> bytes:
    """Twelve batches of interleaved streams, with metadata on some records."""
    batches, g = [], 0
    seq = {1: 0, 7: 0, 9: 0}
    for _ in range(12):
        batch = []
        for k in range(9):
            sid = (1, 7, 9)[k % 3]
            g += 1
            seq[sid] += 1
            meta = {"i": g} if k % 4 == 0 else None
            batch.append(RecordIn.data(sid, g, seq[sid], 0, 10 * g, bytes(k % 5), meta))
        batches.append(batch)
    return write_bytes(STREAMS, batches, "structural")


def _both(data: bytes) -> tuple[Accumulator | None, Accumulator]:
    src = open_source(io.BytesIO(data))
    head = read_head(src)
    tail = read_tail(src, head)
    return check_file(src, head, tail), _check_batches(src, head, tail, "structural")


@pytest.mark.parametrize("data", [small_file("structural"), small_file("strong"), _many_batches()])
def test_fast_path_builds_the_same_totals(data: bytes) -> None:
    """A sound file is accepted at once, with the totals batch-by-batch checking builds."""
    fast, slow = _both(data)
    assert fast is not None
    assert fast.projection_array().tobytes() == slow.projection_array().tobytes()
    assert fast.footer_totals() == slow.footer_totals()
    assert fast.index_rows == slow.index_rows
    assert fast.state == slow.state


def _verdict(data: bytes, fast: bool) -> tuple[int, str] | None:
    """``validate``'s verdict, with the fast path or (``fast=False``) batch by batch only."""
    with pytest.MonkeyPatch.context() as patch:
        if not fast:
            patch.setattr(fsr_validate, "check_file", lambda *_: None)
        try:
            validate(io.BytesIO(data))
        except FormatError as exc:
            return exc.offset, str(exc)
    return None


def _resealed(data: bytes, at: int, value: int) -> bytes:
    """``data`` with the byte at ``at`` (in a record table or blob) set, its batch's CRCs fixed."""
    out = bytearray(data)
    out[at] = value
    for start, end, name in _regions(data):
        if name == "batch header":
            fields = BATCH_HEADER.unpack_from(data, start)
            table_end = end + _REC * fields[3] + pad8(fields[5])
            if end <= at < table_end:
                out[start + 112:start + 116] = crc(bytes(out[end:table_end])).to_bytes(4, "little")
                out[start + CRC_AT:start + 120] = crc(bytes(out[start:start + CRC_AT])).to_bytes(4, "little")
    return bytes(out)


_REGIONS: dict[bytes, list[tuple[int, int, str]]] = {}


def _regions(data: bytes) -> list[tuple[int, int, str]]:
    if data not in _REGIONS:
        _REGIONS[data] = regions(data)
    return _REGIONS[data]


def test_damaged_tables_get_the_batch_by_batch_verdict() -> None:
    """Every record-table byte, changed (CRCs fixed so the table rules see it): the same error and offset."""
    data = _many_batches()
    tables = [(s, e) for s, e, name in regions(data) if name == "record table"]
    seen = 0
    for start, end in tables[:2] + tables[-1:]:
        for at in range(start, end):
            for value in (data[at] ^ 1, data[at] ^ 0x80)[at % 2:at % 2 + 1]:
                damaged = _resealed(data, at, value)
                expected = _verdict(damaged, fast=False)
                assert _verdict(damaged, fast=True) == expected, at
                seen += expected is not None
    assert seen > 300  # the edits do reach the table rules


def test_damaged_metadata_gets_the_batch_by_batch_verdict() -> None:
    """A non-canonical record metadata byte: the same error and offset as batch by batch."""
    data = _many_batches()
    blob = next(s for s, _, name in regions(data) if name == "record metadata")
    damaged = _resealed(data, blob + 1, ord(" "))
    expected = _verdict(damaged, fast=False)
    assert expected is not None
    assert _verdict(damaged, fast=True) == expected


def _one_by_one(parts: list[bytes]) -> bool:
    try:
        for part in parts:
            decode_record_metadata(part, 0)
    except FormatError:
        return False
    return True


@pytest.mark.parametrize("parts", [
    [b'{"a":1}', b'{"b":[1,2.5,"\xc3\xa9"]}'], [b'{"a":1},{', b'"b":2}'], [b'{"a":"},{"}', b'{"b":2}'],
    [b"{}"], [b'{"b":1,"a":2}'], [b"[1]"], [b'{"a":NaN}'], [b'{"a": 1}'], [b'{"a":1}', b""], [],
    [b'{"a":1.0}', b'{"a":1e5}'], [b'{"a":1}{"b":2}'],
    # the one-int form accepted on sight (writer44), and its near misses
    [b'{"channel_sequence":601}'], [b'{"channel_sequence":0}', b'{"n":-7}', b'{"_":123456789012345678}'],
    [b'{"n":-0}'], [b'{"n":01}'], [b'{"n":+1}'], [b'{"n":1 }'], [b'{"n" :1}'], [b'{"\\u006e":1}'],
    [b'{"n":1}', b'{"n":1.5}'], [b'{"n":1}', b'{}'], [b'{"n":1}', b'{"b":1,"a":2}'], [b'{"n":1234567890123456789}'],
    [b'{"1n":1}'], [b'{"\xc3\xa9":1}'], [b'{"n":1}\n'],
])
def test_metadata_checked_at_once_as_one_by_one(parts: list[bytes]) -> None:
    """One ``json.loads`` of all record metadata accepts exactly what decoding each part accepts."""
    assert canonical_record_metadata(parts) == _one_by_one(parts)


# files of many chunks (more tables than ``MAX_HELD``): test_validate_chunks.py
