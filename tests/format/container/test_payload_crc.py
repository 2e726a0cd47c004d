"""Payload CRC-32C: written for every batch, checked by ``--integrity crc``, never by structural."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fastsim_record.cli import main
from fastsim_recording_format import (
    FormatError,
    FsrReader,
    FsrWriter,
    ProfileUnsupportedError,
    RecordIn,
    recover,
    validate,
)
from fastsim_recording_format._layout import BATCH_HEADER, FILE_HEADER, crc

from .helpers import RUN, STREAMS, CountingFile, regions, small_batches, small_file

Capture = pytest.CaptureFixture[str]


def _file(payloads: list[bytes], batch: int, payload_crc: bool = True) -> bytes:
    buf = io.BytesIO()
    writer = FsrWriter(buf, RUN, STREAMS, payload_crc=payload_crc)
    records = [RecordIn.data(7, g + 1, g + 1, 0, g, p) for g, p in enumerate(payloads)]
    for k in range(0, len(records), batch):
        writer.write_batch(records[k:k + batch])
    writer.seal()
    return buf.getvalue()


def _payload_bytes(data: bytes) -> list[int]:
    return [i for a, b, name in regions(data) if name == "payload" for i in range(a, b)]


@given(
    st.lists(st.binary(min_size=1, max_size=300), min_size=1, max_size=12),
    st.integers(1, 5),
    st.integers(0, 2**32 - 1),
    st.integers(1, 255),
)
def test_crc_detects_every_single_byte_payload_flip(
    payloads: list[bytes], batch: int, where: int, xor: int
) -> None:
    """Any one payload byte changed (any position, any value) passes structural but fails crc."""
    data = _file(payloads, batch)
    validate(io.BytesIO(data), "crc")
    positions = _payload_bytes(data)
    at = positions[where % len(positions)]
    flipped = bytearray(data)
    flipped[at] ^= xor
    validate(io.BytesIO(bytes(flipped)))
    with pytest.raises(FormatError, match="payload CRC-32C mismatch") as info:
        validate(io.BytesIO(bytes(flipped)), "crc")
    batch_start = max(a for a, _, name in regions(data) if name == "batch header" and a < at)
    assert info.value.offset == batch_start + 20


def test_crc_is_the_crc32c_of_the_unpadded_payload_area() -> None:
    """The batch header's u32 at offset 20 is CRC-32C of the payload area; flags carry bit 1."""
    data = _file([b"abc", b"defgh"], 2)
    assert FILE_HEADER.unpack_from(data)[3] == 1
    header = next(a for a, _, name in regions(data) if name == "batch header")
    fields = BATCH_HEADER.unpack_from(data, header)
    assert (fields[1], fields[4]) == (2, crc(b"abcdefgh"))
    with FsrReader(io.BytesIO(data)) as reader:
        assert reader.payload_crc
        assert int(reader.batch_index[0]["flags"]) == 2


def test_files_without_crcs_read_as_before() -> None:
    """payload_crc=False writes the pre-CRC layout: header flags 0, reserved field 0, readable."""
    data = _file([b"abc"], 1, payload_crc=False)
    assert FILE_HEADER.unpack_from(data)[3] == 0
    header = next(a for a, _, name in regions(data) if name == "batch header")
    assert BATCH_HEADER.unpack_from(data, header)[1] == 0
    assert BATCH_HEADER.unpack_from(data, header)[4] == 0
    validate(io.BytesIO(data))
    with FsrReader(io.BytesIO(data)) as reader:
        assert not reader.payload_crc
        assert [r.payload for r in reader.records()] == [b"abc"]


def test_a_crc_without_the_file_flag_is_a_format_error() -> None:
    """A non-zero payload CRC field in a file without the flag is refused at offset 20."""
    data = bytearray(_file([b"abc"], 1, payload_crc=False))
    header = next(a for a, _, name in regions(bytes(data)) if name == "batch header")
    data[header + 20] = 1
    data[header + 116:header + 120] = crc(bytes(data[header:header + 116])).to_bytes(4, "little")
    with pytest.raises(FormatError, match="without the payload-CRC flag") as info:
        validate(io.BytesIO(bytes(data)))
    assert info.value.offset == header + 20


def test_crc_validation_reads_payloads_and_structural_still_reads_none() -> None:
    """--integrity crc reads every payload byte once; structural reads none (on a CRC file)."""
    data = small_file("structural")
    payload = [(a, b) for a, b, name in regions(data) if name == "payload"]
    structural, checked = CountingFile(data), CountingFile(data)
    validate(structural)  # type: ignore[arg-type]
    receipt = validate(checked, "crc")  # type: ignore[arg-type]
    assert (receipt.profile, receipt.content_sha256, receipt.policy_integrity) == ("crc", None, "none")
    for at, n in structural.reads:
        assert not any(at < b and a < at + n for a, b in payload)
    assert checked.bytes_read >= structural.bytes_read + sum(b - a for a, b in payload)


def test_crc_profile_on_a_file_without_crcs_is_a_usage_error() -> None:
    """crc on a pre-CRC file raises ProfileUnsupportedError naming structural and fast."""
    with pytest.raises(ProfileUnsupportedError, match=r"supports: structural, fast$"):
        validate(io.BytesIO(_file([b"x"], 1, payload_crc=False)), "crc")


def test_fsr_validate_profile_exit_codes(tmp_path: Path, capsys: Capture) -> None:
    """crc: 0 when intact, 1 on a flipped byte; an unsupported profile is exit 2 naming the supported ones."""
    good = tmp_path / "good.fsr"
    good.write_bytes(small_file("structural"))
    assert main(["validate", str(good), "--integrity", "crc"]) == 0
    assert "profile: crc" in capsys.readouterr().out
    assert main(["validate", str(good), "--integrity", "strong"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "invalid" not in err
    assert "This file supports: structural, crc, fast" in err
    data = bytearray(good.read_bytes())
    data[_payload_bytes(bytes(data))[0]] ^= 1
    bad = tmp_path / "bad.fsr"
    bad.write_bytes(bytes(data))
    assert main(["validate", str(bad)]) == 0
    assert main(["validate", str(bad), "--integrity", "crc"]) == 1
    assert "invalid: batch payload CRC-32C mismatch (streams obs.joints, cameras.front.rgb, events) at offset" in (
        capsys.readouterr().err)
    old = tmp_path / "old.fsr"
    old.write_bytes(_file([b"x"], 1, payload_crc=False))
    assert main(["validate", str(old), "--integrity", "crc"]) == 2
    assert "This file supports: structural, fast" in capsys.readouterr().err


def test_recovery_drops_a_batch_whose_payload_fails_its_crc(tmp_path: Path) -> None:
    """A last batch of full length whose payload did not reach the disk (zeros) is the torn tail."""
    buf = io.BytesIO()
    writer = FsrWriter(buf, RUN, STREAMS)
    for batch in small_batches():
        writer.write_batch(batch)
    data = bytearray(buf.getvalue())
    layout = regions(_sealed(small_batches()))
    last = max(a for a, _, name in layout if name == "batch header")
    start = next(a for a, _, name in layout if name == "payload" and a > last)
    data[start] ^= 0xFF
    src = tmp_path / "z.fsr.incomplete"
    src.write_bytes(bytes(data))
    report = recover(src, tmp_path / "z.fsr")
    assert not report.lossless
    assert report.reason is not None
    assert "CRC-32C" in report.reason
    validate(tmp_path / "z.fsr", "crc")


def _sealed(batches: list[list[RecordIn]]) -> bytes:
    buf = io.BytesIO()
    writer = FsrWriter(buf, RUN, STREAMS)
    for batch in batches:
        writer.write_batch(batch)
    writer.seal()
    return buf.getvalue()


def test_large_payloads_written_unjoined_carry_the_same_checks() -> None:
    """Frame-sized payloads (bytes, bytearray, a numpy memoryview) pass crc and strong and read back."""
    import numpy as np

    frames: list[bytes | bytearray | memoryview] = [
        bytes(range(256)) * 400,
        bytearray(b"\x07" * 90_000),
        np.arange(20_000, dtype=np.float64).data,
    ]
    buf = io.BytesIO()
    writer = FsrWriter(buf, RUN, STREAMS, "strong")
    writer.write_batch([RecordIn.data(7, g + 1, g + 1, 0, g, f) for g, f in enumerate(frames)])
    writer.seal()
    data = buf.getvalue()
    validate(io.BytesIO(data), "crc")
    validate(io.BytesIO(data), "strong", "sha256")
    with FsrReader(io.BytesIO(data)) as reader:
        assert [r.payload for r in reader.records()] == [bytes(memoryview(f).cast("B")) for f in frames]
    flipped = bytearray(data)
    flipped[_payload_bytes(data)[-1]] ^= 0x10
    with pytest.raises(FormatError, match="CRC-32C mismatch"):
        validate(io.BytesIO(bytes(flipped)), "crc")
