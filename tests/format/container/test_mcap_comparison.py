"""Where FSR does better than MCAP: the same defects, MCAP's Python reader vs FSR.

Each test first shows the MCAP behaviour the format doc names (so the claim stays true
for the installed ``mcap``), then that FSR rejects or recovers the equivalent file.
"""

from __future__ import annotations

import io
import struct
from pathlib import Path

import pytest
from mcap.exceptions import McapError
from mcap.reader import make_reader
from mcap.writer import CompressionType, Writer

from fastsim_recording_format import FormatError, FsrReader, RecordIn, recover, validate
from fastsim_recording_format._layout import TRAILER, crc

from .helpers import STREAMS, regions, small_file, write_bytes

FOOTER_AND_MAGIC = 1 + 8 + 8 + 8 + 4 + 8  # footer record (opcode, length, 2 offsets, crc) + magic


def _mcap(messages: int = 30) -> bytes:
    """A chunked, uncompressed MCAP file with several chunks, messages 0..n-1."""
    buf = io.BytesIO()
    writer = Writer(buf, chunk_size=2000, compression=CompressionType.NONE)
    writer.start(profile="", library="fsr-tests")
    schema = writer.register_schema(name="s", encoding="raw", data=b"")
    channel = writer.register_channel("obs", "raw", schema)
    for k in range(messages):
        writer.add_message(channel, log_time=k, data=bytes([k]) * 200, publish_time=k, sequence=k)
    writer.finish()  # type: ignore[no-untyped-call]
    return buf.getvalue()


def _summary_start(data: bytes) -> int:
    return int(struct.unpack_from("<Q", data, len(data) - FOOTER_AND_MAGIC + 9)[0])


def _mcap_sequences(data: bytes) -> list[int]:
    reader = make_reader(io.BytesIO(data), validate_crcs=True)
    return [message.sequence for _, _, message in reader.iter_messages()]


def test_an_index_entry_pointing_at_the_wrong_batch_mcap_accepts_fsr_rejects() -> None:
    """MCAP silently reads the wrong chunk through a forged chunk index; FSR names the bad entry."""
    data = bytearray(_mcap())
    offsets = [c.chunk_start_offset for c in make_reader(io.BytesIO(bytes(data))).get_summary().chunk_indexes]  # type: ignore[union-attr]
    at = bytes(data).index(struct.pack("<Q", offsets[1]), _summary_start(bytes(data)))
    data[at:at + 8] = struct.pack("<Q", offsets[0])
    assert _mcap_sequences(bytes(data)) != list(range(30))  # no error: chunk 0 is read twice

    fsr = bytearray(small_file("structural"))
    index = next(a for a, _, name in regions(bytes(fsr)) if name == "index")
    fsr[index + 64:index + 72] = fsr[index:index + 8]  # entry 1 -> batch 0
    with pytest.raises(FormatError, match="batch index CRC mismatch"):
        validate(io.BytesIO(bytes(fsr)))
    t = len(fsr) - TRAILER.size  # even with the index and trailer CRCs recomputed:
    i_len = int.from_bytes(fsr[t + 8:t + 16], "little")
    fsr[t + 48:t + 52] = crc(bytes(fsr[index:index + i_len])).to_bytes(4, "little")
    fsr[t + 60:t + 64] = crc(bytes(fsr[t:t + 60])).to_bytes(4, "little")
    with pytest.raises(FormatError, match="index entry offset is not the end of the previous batch"):
        FsrReader(io.BytesIO(bytes(fsr)))


def test_a_corrupt_summary_mcap_accepts_fsr_rejects() -> None:
    """MCAP never checks its summary CRC (a lying message count is believed); FSR checks index and footer CRCs."""
    data = bytearray(_mcap())
    count = struct.pack("<Q", 30)
    at = bytes(data).index(count, _summary_start(bytes(data)))
    data[at:at + 8] = struct.pack("<Q", 31)
    stats = make_reader(io.BytesIO(bytes(data)), validate_crcs=True).get_summary().statistics  # type: ignore[union-attr]
    assert stats is not None
    assert stats.message_count == 31

    fsr = small_file("structural")
    for name in ("index", "projections", "footer"):
        start = next(a for a, _, region in regions(fsr) if region == name)
        flipped = bytearray(fsr)
        flipped[start] ^= 0x01
        with pytest.raises(FormatError, match="CRC mismatch"):
            FsrReader(io.BytesIO(bytes(flipped)))


def test_a_truncated_file_mcap_python_cannot_open_fsr_recovers(tmp_path: Path) -> None:
    """MCAP's Python seeking reader fails on a cut file; FSR recovers it up to the last whole batch in Python."""
    data = _mcap()
    with pytest.raises(McapError):
        make_reader(io.BytesIO(data[: len(data) // 2])).get_summary()

    batches = [[RecordIn.data(1, g, g, 0, g, b"x" * 50)] for g in range(1, 6)]
    unsealed = write_bytes(STREAMS, batches, seal=False)
    cut = tmp_path / "cut.fsr.incomplete"
    cut.write_bytes(unsealed[:-30])
    report = recover(cut, tmp_path / "cut.fsr")
    assert (report.records_kept, report.records_dropped) == (4, 1)
    validate(tmp_path / "cut.fsr")
