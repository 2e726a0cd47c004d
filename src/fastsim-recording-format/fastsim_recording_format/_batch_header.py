"""The 120-byte batch header (``docs/fsr-format.md``): its layout, stated once.

Every reader and writer of a batch header goes through :class:`BatchHeader`: the writer
packs one (:meth:`BatchHeader.pack` fills in the header CRC), and the parser (``_batch``),
recovery and the reading API's record tables read one (:meth:`BatchHeader.read`).

    | offset | size | field            | offset | size | field          |
    |--------|------|------------------|--------|------|----------------|
    | 0      | 4    | magic ``FSRB``   | 56     | 4    | generation_min |
    | 4      | 4    | flags            | 60     | 4    | generation_max |
    | 8      | 8    | ordinal          | 64     | 8    | sim_time_min   |
    | 16     | 4    | record_count     | 72     | 8    | sim_time_max   |
    | 20     | 4    | payload_crc32c   | 80     | 32   | payload_sha256 |
    | 24     | 8    | metadata_length  | 112    | 4    | table_crc      |
    | 32     | 8    | payload_length   | 116    | 4    | header_crc     |
    | 40     | 8    | first_global     |        |      |                |
    | 48     | 8    | last_global      |        |      |                |
"""

from __future__ import annotations

from typing import NamedTuple

from fastsim_recording_format._layout import BATCH_HEADER, BATCH_MAGIC, crc

__all__ = ["BatchHeader", "CRC_AT", "SIZE", "crc_ok"]

#: header bytes
SIZE = BATCH_HEADER.size
#: offset of the header CRC, which covers the bytes before it
CRC_AT = 116
_unpack = BATCH_HEADER.unpack
_pack = BATCH_HEADER.pack


class BatchHeader(NamedTuple):
    """One batch header's fields, in stored order (a tuple: reading one is one ``unpack``)."""

    magic: bytes
    flags: int
    ordinal: int
    record_count: int
    payload_crc32c: int  # zero unless the batch carries FLAG_PAYLOAD_CRC32C
    metadata_length: int
    payload_length: int
    first_global: int
    last_global: int
    generation_min: int
    generation_max: int
    sim_time_min: int
    sim_time_max: int
    payload_sha256: bytes
    table_crc: int
    header_crc: int

    @classmethod
    def read(cls, raw: bytes | memoryview) -> BatchHeader:
        """The header in the first :data:`SIZE` bytes of ``raw`` (nothing is checked)."""
        return cls._make(_unpack(raw[:SIZE]))

    @property
    def intact(self) -> bool:
        """Whether the magic is right (the CRC needs the raw bytes: :func:`crc_ok`)."""
        return self.magic == BATCH_MAGIC

    def pack(self) -> bytes:
        """The stored bytes, the header CRC computed over the first 116 (``header_crc`` is ignored)."""
        raw = _pack(*self[:-1], 0)
        return raw[:CRC_AT] + crc(raw[:CRC_AT]).to_bytes(4, "little")


def crc_ok(raw: bytes | memoryview, header: BatchHeader) -> bool:
    """Whether ``header`` (read from ``raw``) matches its stored CRC-32C."""
    return crc(raw[:CRC_AT]) == header.header_crc
