"""The episode index: one Parquet row per FSR file (``fsr index``, ``fsr upload``).

Columns (``SCHEMA``): where the file is and which version of it (``path``, ``size``,
``mtime_ns`` or ``etag``); the Run (``run_id``, ``run_name``, ``backend``, ``seed``,
``episode``); how it ended (``completion``, ``completion_reason``, ``degraded``,
``recovered``); time (``generations``, ``sim_time_start_s``, ``sim_time_end_s``,
``sim_duration_s``, ``wall_duration_s``); content (``records``, ``records_by_kind``,
``cameras``, ``codecs``, ``lost``, ``lost_by_stream``); trust (``integrity``, the file's
policy; ``profile``, the validation profile; ``footer_identity`` and
``completion_identity`` of the receipt; ``sha256`` with ``--sha256``); ``error``, the
one-line reason a file failed validation (its other Run columns are then null); and the
task's outcome (``task``, ``success``, ``return``: the episode's ``task.result``, null
for a Run without a task), so ``success == True`` selects the episodes that worked.

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
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

from fastsim_record.batch.sources import Entry, filesystem, is_url, store_error

__all__ = ["INDEX_KEY", "EpisodeIndexError", "read_index", "reusable", "schema", "write_index"]

INDEX_KEY = b"fsr-index"


class EpisodeIndexError(ValueError):
    """OUT exists and is not an index, or cannot be read or written (one line)."""


def schema() -> Any:
    """The index's pyarrow schema."""
    import pyarrow as pa

    counts = pa.list_(pa.struct([("name", pa.string()), ("count", pa.int64())]))
    return pa.schema([
        ("path", pa.string()), ("size", pa.int64()), ("mtime_ns", pa.int64()), ("etag", pa.string()),
        ("run_id", pa.string()), ("run_name", pa.string()), ("backend", pa.string()),
        ("seed", pa.int64()), ("episode", pa.int64()),
        ("completion", pa.string()), ("completion_reason", pa.string()),
        ("degraded", pa.bool_()), ("recovered", pa.bool_()),
        ("generations", pa.int64()), ("sim_time_start_s", pa.float64()), ("sim_time_end_s", pa.float64()),
        ("sim_duration_s", pa.float64()), ("wall_duration_s", pa.float64()),
        ("records", pa.int64()), ("records_by_kind", counts),
        ("cameras", pa.list_(pa.string())), ("codecs", pa.list_(pa.string())),
        ("lost", pa.int64()), ("lost_by_stream", counts),
        ("integrity", pa.string()), ("profile", pa.string()),
        ("footer_identity", pa.string()), ("completion_identity", pa.string()),
        ("sha256", pa.string()), ("error", pa.string()),
        ("task", pa.string()), ("success", pa.bool_()), ("return", pa.float64()),
    ], metadata={INDEX_KEY: b"1"})


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


def read_index(out: str) -> dict[str, dict[str, Any]] | None:
    """The rows of the index at ``out`` by path; ``None`` when there is none."""
    if not _exists(out):
        return None
    import pyarrow.parquet as pq

    try:
        if is_url(out):
            fs, path = filesystem(out)
            with fs.open(path, "rb") as handle:
                table = pq.read_table(handle)
        else:
            table = pq.read_table(out)
    except Exception as exc:  # not Parquet at all: refused like any non-index
        raise EpisodeIndexError(f"{out}: exists and is not an episode index ({type(exc).__name__})") from None
    if (table.schema.metadata or {}).get(INDEX_KEY) != b"1":
        raise EpisodeIndexError(f"{out}: exists and is not an episode index (no '{INDEX_KEY.decode()}' metadata)")
    rows: dict[str, dict[str, Any]] = {}
    for row in table.to_pylist():
        for key in ("records_by_kind", "lost_by_stream"):
            if row.get(key) is not None:
                row[key] = [(p["name"], p["count"]) for p in row[key]]
        rows[row["path"]] = row
    return rows


def reusable(row: dict[str, Any] | None, entry: Entry, profile: str, sha256: bool) -> bool:
    """Rule 3: the file has not changed since ``row`` was made, and ``row`` holds no error
    (a failed read or validation is tried again on every run)."""
    if row is None or row.get("error") or row.get("size") != entry.size:
        return False
    if "success" not in row:  # made before the task columns existed: read the file again
        return False
    if row.get("profile") != profile and profile != "structural":  # every profile checks the structure
        return False
    if sha256 and not row.get("sha256"):
        return False
    if entry.etag is not None:
        return bool(row.get("etag") == entry.etag)
    return entry.mtime_ns is not None and row.get("mtime_ns") == entry.mtime_ns


def _table(rows: Iterable[dict[str, Any]]) -> Any:
    import pyarrow as pa

    sch = schema()
    ordered = sorted(rows, key=lambda r: r["path"])
    columns = {}
    for field in sch:
        values = [r.get(field.name) for r in ordered]
        if field.name in ("records_by_kind", "lost_by_stream"):
            values = [_pairs(v) for v in values]
        columns[field.name] = pa.array(values, type=field.type)
    return pa.table(columns, schema=sch)


def write_index(out: str, rows: Iterable[dict[str, Any]]) -> int:
    """Write the rows atomically (rule 4); returns the number of rows."""
    import pyarrow.parquet as pq

    table = _table(rows)
    try:
        if is_url(out) and not out.startswith("file://"):
            fs, path = filesystem(out)
            with fs.open(path, "wb") as handle:
                pq.write_table(table, handle)
            return int(table.num_rows)
        local = out[len("file://"):] if out.startswith("file://") else out
        folder, name = os.path.split(os.path.abspath(local))
        tmp = os.path.join(folder, f".{name}.indexing-{os.getpid()}")
        try:
            pq.write_table(table, tmp)
            with open(tmp, "rb+") as handle:
                os.fsync(handle.fileno())
            os.replace(tmp, local)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)
    except OSError as exc:
        raise EpisodeIndexError(f"{out}: cannot write the index: {exc.strerror or exc}") from None
    except Exception as exc:  # the store's own errors (credentials, connection)
        raise EpisodeIndexError(f"cannot write the index: {store_error(out, exc)}") from None
    return int(table.num_rows)
