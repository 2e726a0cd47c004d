"""The record tables of many batches, read and checked together (``FileTables._load``).

One ``preadv`` per batch scatters its header into one array of headers and its record
table (with its metadata blob behind it) straight into one array of every table; the
header fields are then checked with numpy over all batches at once, and the two CRC-32Cs
of each batch (header; table + metadata) are computed on the bytes where they landed.
No table is joined or copied after its read.

This is the fast path only: :func:`scan_tables` returns ``None`` as soon as any batch
fails any check (or a read comes back short), and ``FileTables`` then reads the batches
again one check at a time, in order, to raise the first failure with its own message and
byte offset.  A damaged file is therefore refused exactly as before; a sound one is read
with a few C calls per batch.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from fastsim_recording_format import FormatError
from fastsim_recording_format._batch_header import CRC_AT
from fastsim_recording_format._batch_header import SIZE as _HDR
from fastsim_recording_format._layout import BATCH_HEADER, BATCH_MAGIC, RECORD_DTYPE, crc
from fastsim_recording_format.encoding import Array

__all__ = ["HEADER_DTYPE", "MAX_META_READ", "Scanned", "check_bounds", "scan_tables"]

#: the batch header (``_layout.BATCH_HEADER``) as a numpy record
HEADER_DTYPE = np.dtype(
    [
        ("magic", "S4"), ("flags", "<u4"), ("ordinal", "<u8"), ("record_count", "<u4"),
        ("payload_crc32c", "<u4"), ("metadata_length", "<u8"), ("payload_length", "<u8"),
        ("first_global", "<u8"), ("last_global", "<u8"), ("generation_min", "<u4"),
        ("generation_max", "<u4"), ("sim_time_min", "<i8"), ("sim_time_max", "<i8"),
        ("payload_sha256", "S32"), ("table_crc", "<u4"), ("header_crc", "<u4"),
    ]
)
if HEADER_DTYPE.itemsize != BATCH_HEADER.size or HEADER_DTYPE.fields["header_crc"][1] != CRC_AT:  # type: ignore[index]
    raise ImportError("reading._scan: the batch header dtype does not match _layout.BATCH_HEADER")  # pragma: no cover

MAX_META_READ = 1 << 16  # the most metadata bytes guessed into a batch's read
_REC = RECORD_DTYPE.itemsize
_BOUND = np.uint64(1 << 48)  # lengths above this are refused by the slow path, never padded here


class Scanned(NamedTuple):
    """The checked tables of the batches read together."""

    tables: Array  # every record (``RECORD_DTYPE``), batch after batch
    base: Array  # each record's batch payload area offset in the file (int64)
    counts: Array  # records per batch (int64)
    offsets: list[int]  # each batch's file offset
    payload_at: list[int]  # each batch's payload area offset
    limits: Array  # (batches, 2) uint64: metadata length, payload length
    payload_crc: list[int]  # each header's payload CRC-32C field


def _pad8(values: Array) -> Array:
    out: Array = (values + np.uint64(7)) & ~np.uint64(7)
    return out


def scan_tables(fd: int, size: int, index: Array, todo: list[int]) -> Scanned | None:
    """Read and check (checks 1-3 of ``_tables``) the batches ``todo``; ``None`` if any fails."""
    sel = np.asarray(todo, np.int64)
    entries = index[sel]
    offsets = entries["offset"].astype(np.int64)
    counts = entries["record_count"].astype(np.int64)
    lengths = entries["length"].astype(np.int64)
    table_lens = counts * _REC
    if len(sel) == 0 or bool(((lengths < _HDR + table_lens) | (offsets + lengths > size)).any()):
        return None
    ends = np.cumsum(table_lens)
    heads = np.empty((len(sel), _HDR), np.uint8)
    # each batch's metadata blob lands right after its table, where the next batch's
    # table will go: the CRC covers table and blob in one piece, taken before that read
    tables = np.empty(int(ends[-1]) + MAX_META_READ, np.uint8)
    hview, tview = heads.reshape(-1).data, tables.data
    preadv, read_len = os.preadv, int.from_bytes
    guess = 512  # grows to the largest blob seen (a steady stream's batches look alike)
    table_crcs: list[int] = []
    keep = table_crcs.append
    for head, off, start, end, room in zip(
        [hview[a:a + _HDR] for a in range(0, _HDR * len(sel), _HDR)], offsets.tolist(),
        (ends - table_lens).tolist(), ends.tolist(), (lengths - _HDR - table_lens).tolist(),
    ):
        meta_room = room if room < guess else guess
        if preadv(fd, [head, tview[start:end + meta_room]], off) != _HDR + end - start + meta_room:
            return None
        padded = (read_len(head[24:32], "little") + 7) & ~7
        if padded <= meta_room:
            keep(crc(tview[start:end + padded]))
        elif padded <= room:  # a blob above the guess: the table and blob read again, whole
            body = os.pread(fd, end - start + padded, off + _HDR)
            keep(crc(body) if len(body) == end - start + padded else -1)
        else:
            return None
        if padded + 64 > guess:
            guess = min(padded + 64, MAX_META_READ)
    h = _HDR * len(sel)
    hdr = heads.view(HEADER_DTYPE).reshape(-1)
    header_crcs = [crc(hview[a:a + CRC_AT]) for a in range(0, h, _HDR)]
    meta_lens, pay_lens = hdr["metadata_length"], hdr["payload_length"]
    ok = (hdr["magic"] == BATCH_MAGIC) & (hdr["header_crc"] == np.array(header_crcs, np.uint32))
    ok &= (hdr["ordinal"] == sel.astype(np.uint64)) & (hdr["record_count"] == counts.astype(np.uint32))
    ok &= (meta_lens < _BOUND) & (pay_lens < _BOUND)
    if not bool(ok.all()):
        return None
    body_lens = table_lens + _pad8(meta_lens).astype(np.int64)
    ok = (_HDR + body_lens + _pad8(pay_lens).astype(np.int64) == lengths)
    ok &= hdr["table_crc"] == np.array(table_crcs, np.int64)
    if not bool(ok.all()):
        return None
    payload_at = offsets + _HDR + body_lens
    limits = np.stack([meta_lens, pay_lens], axis=1)
    return Scanned(
        tables[:int(ends[-1])].view(RECORD_DTYPE), np.repeat(payload_at, counts), counts, offsets.tolist(),
        payload_at.tolist(), limits, hdr["payload_crc32c"].tolist(),
    )


def check_bounds(tables: Array, counts: Array, limits: Array, table_at: Array) -> None:
    """Check 4: every record's payload and metadata lie inside its batch's areas.

    ``limits`` holds each batch's metadata and payload lengths (uint64), ``table_at`` the
    file offset of each batch's record table (for the error's byte offset).  Each area's
    end is summed once (a sum that wraps past 2**64 is caught by its being smaller than
    its offset) and each batch's largest end is compared with its limit; only a file
    that fails is searched record by record for the first offender.
    """
    firsts = np.concatenate(([0], np.cumsum(counts)[:-1])).astype(np.intp)
    full = counts > 0
    ok = True
    for (start, length), limit in ((("payload_offset", "payload_length"), limits[:, 1]),
                                (("metadata_offset", "metadata_length"), limits[:, 0])):
        offset = tables[start]
        end = offset + tables[length].astype(np.uint64, copy=False)
        ok = ok and not bool((end < offset).any())
        if ok and len(end) and bool(full.any()):
            ok = bool((np.maximum.reduceat(end, firsts[full]) <= limit[full]).all())
    if ok:
        return
    meta_lim, pay_lim = np.repeat(limits[:, 0], counts), np.repeat(limits[:, 1], counts)
    plen, poff = tables["payload_length"], tables["payload_offset"]
    bad = (poff > pay_lim) | (plen > pay_lim - np.minimum(poff, pay_lim))
    mlen, moff = tables["metadata_length"].astype(np.uint64), tables["metadata_offset"]
    bad |= (moff > meta_lim) | (mlen > meta_lim - np.minimum(moff, meta_lim))
    if bool(bad.any()):
        k = int(bad.argmax())
        batch = int(np.searchsorted(np.cumsum(counts), k, side="right"))
        at = int(table_at[batch]) + _REC * (k - int(counts[:batch].sum()))
        raise FormatError(at, "record payload or metadata lies outside its batch")
