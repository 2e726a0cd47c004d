"""Recovery of an unsealed (``.incomplete``) file up to its last complete batch.

Decision table: what recovery reports

| # | file state                                   | result                         |
|---|----------------------------------------------|--------------------------------|
| 1 | header or run metadata unreadable            | ``FormatError`` (nothing kept) |
| 2 | ends exactly after a complete batch          | complete, nothing dropped      |
| 3 | is a valid sealed file                       | complete, nothing dropped      |
| 4 | anything after the last complete batch       | torn tail dropped and counted  |
| 5 | only the header and run metadata (unsealed)  | a valid empty file, not lossless |

Files (never a file recovery did not create is overwritten or deleted):

| # | situation                                  | result                                          |
|---|--------------------------------------------|-------------------------------------------------|
| 0 | OUT is the input (a link to it, a folder above it) | ``OutputOverlapsInput``, even with overwrite |
| 1 | OUT exists (even as a symlink), no overwrite | ``FileExistsError`` before anything is read     |
| 2 | ``OUT.recovering`` exists                  | ``FileExistsError``; it is left alone           |
| 3 | ``OUT.recovering`` is created              | ``O_CREAT | O_EXCL | O_NOFOLLOW``, mode 0644     |
| 4 | publish without overwrite                  | ``link(tmp, OUT)`` (fails if OUT appeared), unlink tmp |
| 5 | publish with overwrite                     | ``rename(tmp, OUT)`` (replaces OUT itself, never a symlink's target) |
| 6 | any failure after 3                        | the temporary file (ours) is removed            |
"""

from __future__ import annotations

import contextlib
import errno
import os

import attrs

from fastsim_recording_format._batch import Accumulator, parse_batch
from fastsim_recording_format._batch_header import SIZE as HEADER_SIZE
from fastsim_recording_format._batch_header import BatchHeader, crc_ok
from fastsim_recording_format._sections import Head, encode_tail, read_head, read_tail
from fastsim_recording_format._source import Source, open_source
from fastsim_recording_format.errors import FormatError
from fastsim_recording_format.files import fsync_dir
from fastsim_recording_format.overlap import OutputOverlapsInput, refuse_overlap
from fastsim_recording_format.validate import check_payloads, check_record_metadata

__all__ = ["RecoveryReport", "recover"]

_COPY = 1 << 20


@attrs.frozen
class RecoveryReport:
    """What recovery kept and what it dropped."""

    batches_kept: int
    records_kept: int
    records_dropped: int
    bytes_dropped: int
    size: int
    reason: str | None  # why the tail was dropped, or None
    payload_crc: bool = False  # the kept batches' payloads were checked against their CRC-32Cs

    @property
    def lossless(self) -> bool:
        """Nothing was dropped (and the input was not a header without any batch)."""
        return self.records_dropped == 0 and self.bytes_dropped == 0 and self.reason is None


def _torn_records(src: Source, offset: int) -> int:
    """Record count of a torn batch whose header survived, else 0."""
    if src.size - offset < HEADER_SIZE:
        return 0
    raw = src.read_at(offset, HEADER_SIZE, "batch header")
    header = BatchHeader.read(raw)
    if not header.intact or not crc_ok(raw, header):
        return 0
    return int(header.record_count)


def _sealed_at(src: Source, head: Head, end: int) -> bool:
    try:
        tail = read_tail(src, head)
    except FormatError:
        return False
    return tail.index_offset == end


def recover(
    incomplete: str | os.PathLike[str], out: str | os.PathLike[str], *, overwrite: bool = False
) -> RecoveryReport:
    """Rebuild index, projections and footer from the complete batches of ``incomplete``.

    The result is marked ``recovered`` and ``degraded``.  Raises ``FormatError`` when not
    even the header and run metadata are intact, ``FileExistsError`` when ``out`` exists
    and ``overwrite`` is false (or when its temporary ``out.recovering`` exists).
    """
    if os.path.abspath(incomplete) == os.path.abspath(out):
        raise OutputOverlapsInput(f"{os.fspath(out)}: recovery output must differ from its input")
    refuse_overlap(out, [incomplete])  # a link to it, or a folder above it
    if not overwrite and os.path.lexists(out):
        raise FileExistsError(errno.EEXIST, "output exists (use --overwrite to replace it)", os.fspath(out))
    src = open_source(incomplete)
    try:
        head = read_head(src)
        strong = head.integrity == "strong"
        acc = Accumulator(head.stream_ids)
        pos, reason = head.data_start, None
        seen: set[bytes] = set()
        while pos < src.size:
            try:
                batch = parse_batch(src, pos, acc.batches, src.size, head.stream_ids, head.batch_flags)
                check_record_metadata(batch, seen)
                acc.check(batch.table, batch.facts, batch.offset)
                check_payloads(src, batch, crc=head.payload_crc, sha256=strong)
            except FormatError as exc:
                reason = str(exc)
                break
            acc.add(batch.offset, batch.length, batch.flags, batch.table, batch.facts)
            pos += batch.length
        dropped_records = dropped_bytes = 0
        if pos < src.size and not _sealed_at(src, head, pos):
            dropped_records = _torn_records(src, pos)
            dropped_bytes = src.size - pos
        elif pos == src.size and acc.batches == 0:
            reason = "the file holds only its header and run metadata: no batch was written"
        else:
            reason = None
        footer = acc.footer_totals()
        footer.update(
            integrity=head.integrity, mode=head.run.mode, source_sha256=head.run.source_sha256,
            completion_id=head.run.completion_id, degraded=True, recovered=True, terminal_fence=None,
        )
        tail = encode_tail(pos, acc.index_array(), acc.projection_array(), footer)
        size = _write(src, pos, tail, out, overwrite)
    finally:
        src.close()
    return RecoveryReport(
        acc.batches, int(acc.kind_counts.sum()), dropped_records, dropped_bytes, size, reason, head.payload_crc
    )


def _write(src: Source, end: int, tail: bytes, out: str | os.PathLike[str], overwrite: bool) -> int:
    """Copy bytes ``[0, end)`` then ``tail`` into ``out`` atomically (the file table above)."""
    tmp = f"{os.fspath(out)}.recovering"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        raise FileExistsError(
            errno.EEXIST, "temporary recovery file exists (left by another recovery?); not touched", tmp
        ) from None
    try:
        with os.fdopen(fd, "wb") as dst:
            pos = 0
            while pos < end:
                n = min(_COPY, end - pos)
                dst.write(src.read_at(pos, n, "batch bytes"))
                pos += n
            dst.write(tail)
            dst.flush()
            os.fsync(dst.fileno())
        if overwrite:
            os.replace(tmp, out)
        else:
            os.link(tmp, out)  # fails if OUT appeared meanwhile: never replaced unasked
            os.unlink(tmp)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)  # created above with O_EXCL: ours to remove
        raise
    fsync_dir(os.path.dirname(os.path.abspath(out)), best_effort=True)
    return end + len(tail)

