"""The episode index: one Parquet row per FSR file (``fsr index``, ``fsr upload``).

Columns: ``fastsim_record.batch.index_schema``.  A row's ``path`` is stored relative to
OUT's folder when the file lies below it (rule 8), so a dataset folder can be moved or
copied with its index; every reader (this module, ``Dataset``, ``fsr export``) resolves
it against the index's own location.

    | # | rule                                                                        |
    |---|-----------------------------------------------------------------------------|
    | 1 | the schema metadata ``fsr-index: 1`` marks a file as an index              |
    | 2 | an existing OUT that is not an index is refused (exit 2) unless --overwrite |
    | 3 | a row is reused, its file not read, when path, size and ETag (else mtime)  |
    |   | are unchanged and it was made at the same profile, or any profile when   |
    |   | ``structural`` is asked (with a SHA-256 if asked); a row with an error    |
    |   | is never reused: that file is read again                                  |
    | 4 | written to a temporary name beside OUT and renamed over it (local files);  |
    |   | an object store's single PUT is atomic by itself                            |
    | 5 | rows are sorted by path, so the same files give the same index anywhere    |
    | 6 | concurrent writers never lose a row (``update_index``): locally an          |
    |   | exclusive ``flock`` on OUT's folder is held around read-merge-write; on S3  |
    |   | the PUT is conditional on the ETag that was read (``If-Match``, or          |
    |   | ``If-None-Match: *``) and retried after re-reading on a conflict            |
    | 7 | a file that is Parquet with the metadata but lacks a column, has a column  |
    |   | of another type, or a null ``path`` is not an index (``EpisodeIndexError``) |
    | 8 | a row's ``path`` below OUT's folder is written relative to it (local, or   |
    |   | under the same URL prefix); rows are keyed and merged by resolved path     |
"""

from __future__ import annotations

import errno
import fcntl
import os
import random
import time
from collections.abc import Callable, Iterable
from typing import Any

from fastsim_record.batch.index_schema import INDEX_KEY, LATER_COLUMNS, schema
from fastsim_record.batch.sources import Entry, etag_of, filesystem, is_url, store_error
from fastsim_recording_format.reading._sources import relative_path, resolve_path

__all__ = [
    "INDEX_KEY", "EpisodeIndexError", "merge_index", "read_index", "reusable", "schema", "update_index", "write_index",
]

LOCK_WAIT_S = 120.0  # the longest a local writer waits for another's read-merge-write
PUT_ATTEMPTS = 12  # conditional PUTs tried on an object store before giving up


class EpisodeIndexError(ValueError):
    """OUT exists and is not an index, or cannot be read or written (one line)."""


def _pairs(value: Any) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    return [{"name": name, "count": count} for name, count in value]


def _exists(out: str) -> bool:
    if is_url(out):
        fs, path = filesystem(out)
        try:
            return bool(fs.exists(path))
        except Exception as exc:  # the store's own errors (credentials, connection)
            raise store_error(out, exc) from None
    return os.path.lexists(out)


def _parse(table: Any, out: str, location: str) -> dict[str, dict[str, Any]]:
    """Rule 1 and the schema: every column of ``SCHEMA`` with its type, ``path`` never null."""
    if (table.schema.metadata or {}).get(INDEX_KEY) != b"1":
        raise EpisodeIndexError(f"{out}: exists and is not an episode index (no '{INDEX_KEY.decode()}' metadata)")
    names = set(table.schema.names)
    for field in schema():
        if field.name not in names:
            if field.name in LATER_COLUMNS:  # an older layout: its rows are read again (rule 3)
                continue
            raise EpisodeIndexError(f"{out}: not a valid episode index: column {field.name!r} is missing")
        got = table.schema.field(field.name).type
        if not got.equals(field.type):
            raise EpisodeIndexError(
                f"{out}: not a valid episode index: column {field.name!r} is {got}, not {field.type}")
    paths = table.column("path")
    if paths.null_count:
        row = next(k for k, v in enumerate(paths.to_pylist()) if v is None)
        raise EpisodeIndexError(f"{out}: not a valid episode index: row {row} has no 'path'")
    rows: dict[str, dict[str, Any]] = {}
    for row in table.select([f.name for f in schema() if f.name in names]).to_pylist():
        for key in ("records_by_kind", "lost_by_stream"):
            if row.get(key) is not None:
                row[key] = [(p["name"], p["count"]) for p in row[key] if p is not None]
        row["path"] = resolve_path(location, row["path"])  # rule 8
        rows[row["path"]] = row
    return rows


def _load(data: Any, out: str, location: str) -> dict[str, dict[str, Any]]:
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(data)
    except Exception as exc:  # not Parquet at all: refused like any non-index
        raise EpisodeIndexError(f"{out}: exists and is not an episode index ({type(exc).__name__})") from None
    return _parse(table, out, location)


def read_index(out: str, location: str | None = None) -> dict[str, dict[str, Any]] | None:
    """The rows of the index at ``out`` by (resolved) path; ``None`` when there is none.
    ``location``: the index's name as its relative paths are resolved (default ``out``)."""
    location = out if location is None else location
    if not _exists(out):
        return None
    try:
        if is_url(out) and not out.startswith("file://"):
            fs, path = filesystem(out)
            with fs.open(path, "rb") as handle:
                return _load(handle, out, location)
        with open(_local_path(out), "rb") as handle:  # one open: a concurrent replace never splits the read
            return _load(handle, out, location)
    except OSError as exc:
        raise EpisodeIndexError(f"{out}: cannot read the index: {exc.strerror or exc}") from None


def reusable(row: dict[str, Any] | None, entry: Entry, profile: str, sha256: bool) -> bool:
    """Rule 3: the file has not changed since ``row`` was made, and ``row`` holds no error
    (a failed read or validation is tried again on every run)."""
    if row is None or row.get("error") or row.get("size") != entry.size:
        return False
    if not row.keys() >= LATER_COLUMNS:  # made before a later column existed: read the file again
        return False
    if row.get("profile") != profile and profile != "structural":  # every profile checks the structure
        return False
    if sha256 and not row.get("sha256"):
        return False
    if entry.etag is not None:
        return bool(row.get("etag") == entry.etag)
    return entry.mtime_ns is not None and row.get("mtime_ns") == entry.mtime_ns


def _table(rows: Iterable[dict[str, Any]], out: str) -> Any:
    import pyarrow as pa

    sch = schema()
    ordered = sorted(({**r, "path": relative_path(out, r["path"])} for r in rows), key=lambda r: r["path"])
    columns = {}
    for field in sch:
        values = [r.get(field.name) for r in ordered]
        if field.name in ("records_by_kind", "lost_by_stream"):
            values = [_pairs(v) for v in values]
        columns[field.name] = pa.array(values, type=field.type)
    return pa.table(columns, schema=sch)


def _local_path(out: str) -> str:
    return os.path.abspath(out[len("file://"):] if out.startswith("file://") else out)


def _parquet(rows: Iterable[dict[str, Any]], out: str) -> tuple[bytes, int]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = _table(rows, out)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes(), int(table.num_rows)


Merge = Callable[[dict[str, dict[str, Any]] | None], Iterable[dict[str, Any]]]


def update_index(out: str, merge: Merge, *, replace_invalid: bool = False) -> int:
    """Rules 4 and 6: write ``merge(rows there now)`` as the index at ``out``; the number of rows.

    ``merge`` gets ``None`` when there is no index yet (or, with ``replace_invalid``, when
    OUT is not a valid index) and may be called more than once: every call sees the
    index as it is at that moment, so no other writer's rows are lost."""
    try:
        if is_url(out) and not out.startswith("file://"):
            return _update_remote(out, merge, replace_invalid)
        return _update_local(_local_path(out), out, merge, replace_invalid)
    except EpisodeIndexError:
        raise
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise EpisodeIndexError(f"{out}: cannot write the index: no space left on the device (ENOSPC)") from None
        raise EpisodeIndexError(f"{out}: cannot write the index: {exc.strerror or exc}") from None
    except Exception as exc:  # the store's own errors (credentials, connection)
        raise EpisodeIndexError(f"cannot write the index: {store_error(out, exc)}") from None


def _current(out: str, read: Callable[[], dict[str, dict[str, Any]] | None],
             replace_invalid: bool) -> dict[str, dict[str, Any]] | None:
    try:
        return read()
    except EpisodeIndexError:
        if replace_invalid:
            return None
        raise


def _update_local(local: str, out: str, merge: Merge, replace_invalid: bool) -> int:
    """Local files: an exclusive ``flock`` on OUT's folder around read-merge-write (the
    kernel drops it when a holder dies, and no lock file is left behind)."""
    folder, name = os.path.split(local)
    lock = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        deadline = time.monotonic() + LOCK_WAIT_S
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise EpisodeIndexError(
                        f"{out}: another writer held the index's folder lock for {LOCK_WAIT_S:.0f} s") from None
                time.sleep(0.02)
        current = _current(out, lambda: read_index(local, out), replace_invalid)
        data, count = _parquet(merge(current), out)
        tmp = os.path.join(folder, f".{name}.indexing-{os.getpid()}")
        try:
            with open(tmp, "wb") as handle:
                handle.write(data)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, local)
            os.fsync(lock)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
        return count
    finally:
        os.close(lock)  # releases the flock


def _update_remote(out: str, merge: Merge, replace_invalid: bool) -> int:
    """An object store: read the index and its ETag, merge, then PUT only if the ETag is
    unchanged (``If-Match``; ``If-None-Match: *`` when there was none); on a conflict,
    read again and retry.  A store without conditional PUTs (not S3) is written plainly."""
    fs, path = filesystem(out)
    conditional = "s3" in (fs.protocol if isinstance(fs.protocol, tuple | list) else (fs.protocol,))
    for attempt in range(PUT_ATTEMPTS):
        fs.invalidate_cache()
        try:
            etag = etag_of(fs.info(path))
        except FileNotFoundError:
            etag = None

        def read(tag: str | None = etag) -> dict[str, dict[str, Any]] | None:
            return None if tag is None else _load(_buffer(fs.cat_file(path)), out, out)

        data, count = _parquet(merge(_current(out, read, replace_invalid)), out)
        if not conditional:
            fs.pipe_file(path, data)
            return count
        bucket, key, _ = fs.split_path(path)
        condition = {"IfMatch": f'"{etag}"'} if etag is not None else {"IfNoneMatch": "*"}
        try:
            fs.call_s3("put_object", Bucket=bucket, Key=key, Body=data, **condition)
            return count
        except Exception as exc:
            if not _conflict(exc):
                raise
        time.sleep(min(2.0, 0.05 * 2 ** attempt) * (0.5 + random.random()))
    raise EpisodeIndexError(f"{out}: the index changed {PUT_ATTEMPTS} times while it was being written; run again")


def _buffer(data: bytes) -> Any:
    """Bytes as a pyarrow buffer reader (for ``pq.read_table``)."""
    import pyarrow as pa

    return pa.BufferReader(data)


def _conflict(exc: BaseException) -> bool:
    """An S3 412 PreconditionFailed or 409 ConditionalRequestConflict (s3fs wraps them)."""
    seen: BaseException | None = exc
    while seen is not None:
        response = getattr(seen, "response", None)
        code = (response or {}).get("Error", {}).get("Code") if isinstance(response, dict) else None
        if code in ("PreconditionFailed", "ConditionalRequestConflict", "412", "409"):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def merge_index(out: str, mine: dict[str, dict[str, Any]], *, prune: bool = False,
                replace_invalid: bool = False) -> dict[str, dict[str, Any]]:
    """This run's rows (by path) over the index at ``out`` as it is at the moment of
    writing, so no other writer's row is lost (rule 6); with ``prune``, only this run's
    rows.  The rows written, by path.  ``fsr index``, ``fsr upload`` and the sweep's
    upload all merge through here."""
    merged: dict[str, dict[str, Any]] = {}

    def merge(current: dict[str, dict[str, Any]] | None) -> list[dict[str, Any]]:
        rows = {} if prune or current is None else dict(current)
        rows.update(mine)
        merged.clear()  # a retried write (S3 conflict) reports what it last wrote
        merged.update(rows)
        return list(rows.values())

    update_index(out, merge, replace_invalid=replace_invalid)
    return merged


def write_index(out: str, rows: Iterable[dict[str, Any]]) -> int:
    """Write exactly ``rows`` as the index at ``out`` (replacing what is there); the count."""
    kept = list(rows)
    return update_index(out, lambda _: kept, replace_invalid=True)
