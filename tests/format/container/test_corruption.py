"""Hostile input: truncation, byte flips, forged fields and random bytes give only FormatError."""

from __future__ import annotations

import contextlib
import io
import json
import random
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastsim_record.cli import info as info_cli
from fastsim_recording_format import FormatError, FsrReader, validate
from fastsim_recording_format._layout import BATCH_HEADER, TRAILER, crc
from fastsim_recording_format.reading.summary import summary
from fastsim_recording_format.synth import write_synthetic

from .helpers import footer_parts as _footer_parts
from .helpers import regions, small_file, with_footer

DATA = small_file("strong")
STRUCTURAL = small_file("structural")

#: region -> the reasons a single flipped byte there may produce
FLIP_REASONS = {
    "file header": ("bad file magic", "file header CRC mismatch"),
    "run metadata": ("run metadata CRC mismatch",),
    "metadata padding": ("non-zero padding after run metadata",),
    "batch header": ("bad batch magic", "batch header CRC mismatch"),
    "record table": ("record table CRC mismatch",),
    "record metadata": ("record table CRC mismatch",),
    "record metadata padding": ("record table CRC mismatch",),
    "payload padding": ("non-zero padding after payload",),
    "index": ("batch index CRC mismatch",),
    "projections": ("stream projection CRC mismatch",),
    "footer": ("footer CRC mismatch",),
    "footer padding": ("non-zero padding after footer",),
    "trailer": ("trailer CRC mismatch", "bad trailing magic"),
}


def _exercise(data: bytes) -> None:
    """Open, validate (all profiles), iterate and read every payload."""
    validate(io.BytesIO(data), "strong", "sha256")
    with FsrReader(io.BytesIO(data)) as reader:
        for rec in reader.records():
            assert len(rec.payload) == rec.payload_length


def test_truncation_at_every_offset_is_rejected() -> None:
    """A small file cut at any byte offset fails validation with a FormatError."""
    for cut in range(len(DATA)):
        with pytest.raises(FormatError):
            validate(io.BytesIO(DATA[:cut]))


def test_truncation_of_a_large_file_at_random_offsets_is_rejected() -> None:
    """A multi-batch file cut at a few hundred random offsets is always rejected."""
    buf = io.BytesIO()
    write_synthetic(buf, 2000, 300, camera_every=10, camera_bytes=5000, metadata=True, batch_items=64)
    data = buf.getvalue()
    rng = random.Random(1)
    for cut in rng.sample(range(len(data)), 300):
        with pytest.raises(FormatError):
            validate(io.BytesIO(data[:cut]))


def test_flipping_any_structural_byte_is_rejected_with_the_right_reason() -> None:
    """Each byte of every structural region, flipped, is rejected with that region's reason."""
    seen = set()
    for start, end, name in regions(DATA):
        if name == "payload":
            continue
        seen.add(name)
        for at in range(start, end):
            flipped = bytearray(DATA)
            flipped[at] ^= 0x01
            with pytest.raises(FormatError) as info:
                validate(io.BytesIO(bytes(flipped)))
            assert info.value.reason.startswith(FLIP_REASONS[name]), (name, at, str(info.value))
    assert seen >= set(FLIP_REASONS) - {"payload padding", "footer padding", "record metadata padding"}


def test_the_error_names_the_offset() -> None:
    """str(FormatError) is '<reason> at offset <n>'."""
    flipped = bytearray(DATA)
    flipped[0] ^= 0xFF
    with pytest.raises(FormatError, match=r"^bad file magic: not an FSR file at offset 0$"):
        validate(io.BytesIO(bytes(flipped)))


# -- forged files: the bytes are changed and every CRC is recomputed -------------------


def _refresh(data: bytearray) -> bytes:
    """Recompute every CRC of a forged copy of STRUCTURAL (same lengths, same layout)."""
    for h in [s for s, _, n in regions(STRUCTURAL) if n == "batch header"]:
        fields = BATCH_HEADER.unpack_from(STRUCTURAL, h)
        count, mlen = fields[3], fields[5]
        body_len = 80 * count + ((mlen + 7) & ~7)
        body = bytes(data[h + 120:h + 120 + body_len])
        data[h + 112:h + 116] = crc(body).to_bytes(4, "little")
        data[h + 116:h + 120] = crc(bytes(data[h:h + 116])).to_bytes(4, "little")
    t = len(data) - TRAILER.size
    i_off, i_len, p_off, p_len, f_off, f_len = TRAILER.unpack_from(STRUCTURAL, t)[:6]
    for field, (a, n) in zip((48, 52, 56), ((i_off, i_len), (p_off, p_len), (f_off, f_len))):
        data[t + field:t + field + 4] = crc(bytes(data[a:a + n])).to_bytes(4, "little")
    data[t + 60:t + 64] = crc(bytes(data[t:t + 60])).to_bytes(4, "little")
    return bytes(data)


def _region(name: str, k: int = 0) -> int:
    return [s for s, _, n in regions(STRUCTURAL) if n == name][k]


def _poke(at: int, value: int, width: int) -> Callable[[bytearray], None]:
    def edit(data: bytearray) -> None:
        data[at:at + width] = value.to_bytes(width, "little", signed=value < 0)
    return edit


def _pokes(*edits: tuple[int, int, int]) -> Callable[[bytearray], None]:
    def edit(data: bytearray) -> None:
        for at, value, width in edits:
            _poke(at, value, width)(data)
    return edit


FORGERIES = [
    ("index entry points at another batch", lambda: _poke(_region("index") + 64, _region("batch header"), 8),
     "index entry offset is not the end of the previous batch"),
    ("index entry points at the wrong batch", lambda: _poke(_region("index") + 64 + 24, 1, 8),
     "index entry first_global disagrees with the batch header"),
    ("batch header time span lies", lambda: _poke(_region("batch header") + 72, 99, 8),
     "batch header maximum simulation time disagrees with its records"),
    ("record kind unknown", lambda: _poke(_region("record table") + 4, 5, 2), "unknown record kind 5"),
    ("record stream undeclared", lambda: _poke(_region("record table"), 3, 4), "record names undeclared stream 3"),
    ("payload offset overlaps", lambda: _poke(_region("record table") + 80 + 64, 1, 8),
     "record payload offset does not tile the payload area"),
    ("stream sequence skips", lambda: _pokes((_region("record table", 1) + 24, 3, 8), (_region("record table", 1) + 32, 3, 8)),
     "stream sequence hole or overlap"),
    ("time runs backwards", lambda: _pokes((_region("record table", 1) + 48, -5, 8), (_region("batch header", 1) + 64, -5, 8),
                                           (_region("index") + 64 + 48, -5, 8)),
     "stream generation or simulation time goes backwards"),
    ("projection count lies", lambda: _poke(_region("projections") + 12, 7, 4),
     "stream projections disagree with the records"),
    ("DATA record claims a range", lambda: _poke(_region("record table") + 16, 9, 8),
     "DATA or BARRIER record covers more than one sequence"),
]


@pytest.mark.parametrize(("label", "make", "reason"), FORGERIES, ids=[f[0] for f in FORGERIES])
def test_forged_fields_with_valid_crcs_are_rejected(label: str, make: Callable[[], Callable[[bytearray], None]], reason: str) -> None:
    """Semantic checks catch what a recomputed CRC would hide."""
    data = bytearray(STRUCTURAL)
    make()(data)
    with pytest.raises(FormatError) as info:
        validate(io.BytesIO(_refresh(data)))
    assert info.value.reason.startswith(reason), str(info.value)


def test_huge_length_fields_never_allocate_beyond_the_file() -> None:
    """Forged giant lengths and counts are rejected without allocating their size."""
    forged = []
    for at, value, width in (
        (16, 2**62, 8),  # run metadata length
        (_region("batch header") + 16, 2**32 - 1, 4),  # record count
        (_region("batch header") + 32, 2**63, 8),  # payload length
        (len(STRUCTURAL) - TRAILER.size + 8, 2**40 * 64, 8),  # index length
        (len(STRUCTURAL) - TRAILER.size + 40, 2**50, 8),  # footer length
    ):
        data = bytearray(STRUCTURAL)
        _poke(at, value, width)(data)
        if at == 16:
            data[28:32] = crc(bytes(data[:28])).to_bytes(4, "little")
            forged.append(bytes(data))
        else:
            forged.append(_refresh(data))
    tracemalloc.start()
    try:
        for blob in forged:
            with pytest.raises(FormatError):
                validate(io.BytesIO(blob))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * len(STRUCTURAL) + (1 << 20)


@given(st.binary(max_size=600))
def test_random_bytes_give_only_format_errors(blob: bytes) -> None:
    """Arbitrary bytes (with or without the FSR magic) are rejected with FormatError."""
    for data in (blob, DATA[:32] + blob, DATA[:200] + blob):
        with pytest.raises(FormatError):
            validate(io.BytesIO(data))


@given(st.lists(st.tuples(st.integers(0, len(DATA) - 1), st.integers(0, 255)), min_size=1, max_size=6),
       st.integers(0, 3))
def test_random_mutations_give_only_format_errors(edits: list[tuple[int, int]], how: int) -> None:
    """Random edits, insertions and deletions of a valid file never crash the reader."""
    data = bytearray(DATA)
    for at, value in edits:
        if how == 0:
            data[at % len(data)] = value
        elif how == 1:
            data.insert(at % (len(data) + 1), value)
        elif how == 2 and len(data) > 1:
            del data[at % len(data)]
        else:
            data[at % len(data)] ^= 1 << (value % 8)
    tracemalloc.start()
    try:
        with contextlib.suppress(FormatError):
            _exercise(bytes(data))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * len(data) + (1 << 20)


def test_empty_record_metadata_must_have_length_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """Two bytes '{}' for empty record metadata are non-canonical and rejected."""
    from fastsim_recording_format import RecordIn
    from fastsim_recording_format import writer as writer_module

    from .helpers import STREAMS, write_bytes

    monkeypatch.setattr(writer_module, "canonical_json", lambda v: b"{}" if v == {"x": 1} else b'{"y":2}')
    data = write_bytes(STREAMS, [[RecordIn.data(1, 1, 1, 0, 0, b"", {"x": 1})]])
    monkeypatch.undo()
    with pytest.raises(FormatError, match="empty record metadata must be stored with length 0"):
        validate(io.BytesIO(data))


# -- forged footers and fields with valid CRCs: still only FormatError ---------------

_WEIRD_JSON: st.SearchStrategy[Any] = st.sampled_from(
    [None, True, 0, -1, 2**70, 1.5, "x", [], [1], {}, {"a": 1}, [{}], [{"stream_id": 1}], {"gap": "x"}]
)


def _read_everything(data: bytes) -> None:
    """Open, summarise as `fsr info` does, seek and read every record and payload."""
    with FsrReader(io.BytesIO(data)) as reader:
        info_cli.table(summary(reader)["streams"])
        for spec in reader.streams:
            list(reader.seek(spec.stream_id, 0, 0))
        for rec in reader.records():
            assert len(rec.payload) == rec.payload_length


def _set(path: tuple[Any, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(footer: dict[str, Any]) -> None:
        obj: Any = footer
        for key in path[:-1]:
            obj = obj[key]
        if isinstance(obj, dict) != isinstance(path[-1], str):  # an earlier edit changed the container
            raise TypeError(path)
        obj[path[-1]] = value
    return edit


FORGED_FOOTERS = [
    ("streams is not a list", ("streams",), "abc", "footer: streams must list every declared stream"),
    ("a stream total lacks its id", ("streams", 0, "stream_id"), 99, "footer: stream 1: totals must have"),
    ("a stream count is a string", ("streams", 1, "records"), "3", "footer: stream 7: counts must be"),
    ("generations is a number", ("streams", 2, "generations"), 1, "footer: stream 9: generations must"),
    ("batch count lies", ("batches",), 2, "footer: batches disagrees with the batch index"),
    ("record count lies", ("records",), 10, "footer: records disagrees with the batch index"),
    ("kinds miss one", ("records_by_kind",), {"data": 9}, "footer: records_by_kind must map"),
    ("global span is a number", ("global_sequence",), 1, "footer: global_sequence must be"),
    ("gaps without degraded", ("degraded",), False, "footer: gap records present but degraded is false"),
]


@pytest.mark.parametrize(("label", "path", "value", "reason"), FORGED_FOOTERS, ids=[f[0] for f in FORGED_FOOTERS])
def test_a_forged_footer_is_rejected_when_the_reader_opens(label: str, path: tuple[Any, ...], value: Any, reason: str) -> None:
    """A footer with valid CRCs but the wrong shape or index totals is a FormatError at open."""
    data = with_footer(STRUCTURAL, _set(path, value))
    with pytest.raises(FormatError) as info:
        FsrReader(io.BytesIO(data))
    assert info.value.reason.startswith(reason), str(info.value)
    assert info.value.offset == _footer_parts(STRUCTURAL)[0] + 64 * 3 + 48 * len(_footer_parts(STRUCTURAL)[2])


def _footer_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(value, dict):
        for key, item in value.items():
            out += _footer_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for k, item in enumerate(value):
            out += _footer_paths(item, (*prefix, k))
    return out


FOOTER_PATHS = _footer_paths(_footer_parts(STRUCTURAL)[3])


@given(st.lists(st.tuples(st.sampled_from(FOOTER_PATHS), _WEIRD_JSON), min_size=1, max_size=3))
def test_footers_forged_with_valid_crcs_give_only_format_errors(edits: list[tuple[tuple[Any, ...], Any]]) -> None:
    """Any value of any footer key, re-sealed with valid CRCs, never crashes the reader or fsr info."""
    def edit(footer: dict[str, Any]) -> None:
        for path, value in edits:
            with contextlib.suppress(LookupError, TypeError):
                _set(path, json.loads(json.dumps(value)))(footer)

    with contextlib.suppress(FormatError):
        _read_everything(with_footer(STRUCTURAL, edit))


_STRUCTURAL_REGIONS = [
    (a, b) for a, b, name in regions(STRUCTURAL)
    if name in ("file header", "batch header", "record table", "index", "projections", "trailer")
]
_EDGE_VALUES = [0, 1, 2, 7, 8, 80, 120, 2**16 - 1, 2**31, 2**32 - 1, 2**32, 2**63 - 1, 2**63, 2**64 - 1]


@given(st.lists(
    st.tuples(st.sampled_from(_STRUCTURAL_REGIONS), st.integers(0, 10**6), st.sampled_from([1, 2, 4, 8]),
              st.one_of(st.sampled_from(_EDGE_VALUES), st.integers(0, 2**64 - 1))),
    min_size=1, max_size=3,
))
def test_fields_forged_with_valid_crcs_give_only_format_errors(
    edits: list[tuple[tuple[int, int], int, int, int]],
) -> None:
    """Any value in any header, table, index, projection or trailer field, CRCs recomputed, gives only FormatError."""
    data = bytearray(STRUCTURAL)
    for (a, b), pick, width, value in edits:
        at = a + width * (pick % max(1, (b - a) // width))
        data[at:at + width] = (value % 2 ** (8 * width)).to_bytes(width, "little")
    data[28:32] = crc(bytes(data[:28])).to_bytes(4, "little")
    blob = _refresh(data)
    tracemalloc.start()
    try:
        with contextlib.suppress(FormatError):
            validate(io.BytesIO(blob))
        with contextlib.suppress(FormatError):
            _read_everything(blob)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 * len(blob) + (1 << 20)
