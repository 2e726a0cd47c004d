"""Byte layout of FSR binary 1.2 (see ``docs/fsr-format.md``): structs, dtypes, CRC, JSON.

Every fixed-size structure of the format is defined here once, so the writer, the reader,
the validator and recovery cannot disagree on a width or an offset.
"""

from __future__ import annotations

import struct

import crc32c as _crc32c
import numpy as np

from fastsim_recording_format.encoding import canonical_json, pad8

__all__ = [
    "BATCH_HEADER",
    "BATCH_MAGIC",
    "FILE_HEADER",
    "FILE_MAGIC",
    "FILE_FLAG_PAYLOAD_CRC32C",
    "FLAG_PAYLOAD_CRC32C",
    "FLAG_PAYLOAD_SHA256",
    "MAX_FOOTER_BYTES",
    "MAX_JSON_ITEMS",
    "MAX_METADATA_BYTES",
    "MAX_RECORD_METADATA_BYTES",
    "MAX_STREAMS",
    "INDEX_DTYPE",
    "PROJECTION_DTYPE",
    "RECORD_DTYPE",
    "TRAILER",
    "TRAILER_MAGIC",
    "VERSION",
    "canonical_json",
    "crc",
    "pad8",
]

VERSION = (1, 2)
FILE_MAGIC = b"\x89FSR\r\n\x1a\n"
BATCH_MAGIC = b"FSRB"
TRAILER_MAGIC = b"FSREND\r\n"
FLAG_PAYLOAD_SHA256 = 1
#: batch flag bit 1: the u32 at batch header offset 20 is the payload area's CRC-32C
FLAG_PAYLOAD_CRC32C = 2
#: file header flag bit 0: every batch carries FLAG_PAYLOAD_CRC32C
FILE_FLAG_PAYLOAD_CRC32C = 1

# Decoding bounds (docs/fsr-format.md section 9), checked before anything is parsed, so
# no header field can make a reader allocate more than a few times the file's size.
#: run metadata JSON bytes (the file header's metadata_length)
MAX_METADATA_BYTES = 2 << 20
#: entries of the stream table
MAX_STREAMS = 2048
#: footer JSON bytes (the trailer's footer_length)
MAX_FOOTER_BYTES = 4 << 20
#: one record's metadata JSON bytes
MAX_RECORD_METADATA_BYTES = 1 << 20
#: structural bytes (``,`` ``:`` ``[`` ``{``) in any one JSON text of the file
MAX_JSON_ITEMS = 1 << 17

#: magic, version_major, version_minor, flags, metadata_length, metadata_crc, header_crc
FILE_HEADER = struct.Struct("<8sHHIQII")
#: magic, flags, ordinal, record_count, payload_crc32c (reserved before the payload-CRC
#: flag), metadata_length, payload_length,
#: first_global, last_global, generation_min, generation_max, sim_time_min, sim_time_max,
#: payload_sha256, table_crc, header_crc
BATCH_HEADER = struct.Struct("<4sIQIIQQQQIIqq32sII")
#: index_offset, index_length, projection_offset, projection_length, footer_offset,
#: footer_length, index_crc, projection_crc, footer_crc, trailer_crc, magic
TRAILER = struct.Struct("<QQQQQQIIII8s")

RECORD_DTYPE = np.dtype(
    [
        ("stream_id", "<u4"),
        ("kind", "<u2"),
        ("flags", "<u2"),
        ("global_sequence", "<u8"),
        ("global_last", "<u8"),
        ("stream_sequence", "<u8"),
        ("stream_last", "<u8"),
        ("generation", "<u4"),
        ("metadata_length", "<u4"),
        ("sim_time_ns", "<i8"),
        ("metadata_offset", "<u8"),
        ("payload_offset", "<u8"),
        ("payload_length", "<u8"),
    ]
)
INDEX_DTYPE = np.dtype(
    [
        ("offset", "<u8"),
        ("length", "<u8"),
        ("record_count", "<u4"),
        ("flags", "<u4"),
        ("first_global", "<u8"),
        ("last_global", "<u8"),
        ("generation_min", "<u4"),
        ("generation_max", "<u4"),
        ("sim_time_min", "<i8"),
        ("sim_time_max", "<i8"),
    ]
)
PROJECTION_DTYPE = np.dtype(
    [
        ("stream_id", "<u4"),
        ("generation", "<u4"),
        ("batch_ordinal", "<u4"),
        ("record_count", "<u4"),
        ("first_stream_sequence", "<u8"),
        ("last_stream_sequence", "<u8"),
        ("sim_time_first", "<i8"),
        ("sim_time_last", "<i8"),
    ]
)

if (FILE_HEADER.size, BATCH_HEADER.size, TRAILER.size) != (32, 120, 72) or (
    RECORD_DTYPE.itemsize,
    INDEX_DTYPE.itemsize,
    PROJECTION_DTYPE.itemsize,
) != (80, 64, 48):  # pragma: no cover - guards the spec tables
    raise ImportError("FSR layout does not match docs/fsr-format.md")


def crc(data: bytes | bytearray | memoryview) -> int:
    """CRC-32C (Castagnoli) of ``data``."""
    return int(_crc32c.crc32c(data))
