"""Hostile input: truncation, byte flips, forged fields and random bytes give only FormatError."""

from __future__ import annotations

import contextlib
import io
import random
import tracemalloc
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastsim_record.fsr import FormatError, FsrReader, validate
from fastsim_record.fsr._layout import BATCH_HEADER, TRAILER, crc
from fastsim_record.fsr.synth import write_synthetic

from .helpers import regions, small_file

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
    from fastsim_record.fsr import RecordIn
    from fastsim_record.fsr import writer as writer_module

    from .helpers import STREAMS, write_bytes

    monkeypatch.setattr(writer_module, "canonical_json", lambda v: b"{}" if v == {"x": 1} else b'{"y":2}')
    data = write_bytes(STREAMS, [[RecordIn.data(1, 1, 1, 0, 0, b"", {"x": 1})]])
    monkeypatch.undo()
    with pytest.raises(FormatError, match="empty record metadata must be stored with length 0"):
        validate(io.BytesIO(data))
