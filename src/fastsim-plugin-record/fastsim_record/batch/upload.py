"""Verified, idempotent upload of committed FSR files to object storage (``fsr upload``).

One job per file (``upload_job``), run by the executor port; the index beside the
objects is written once at the end (``fastsim_record.batch.index``).

    | # | step              | rule                                                           |
    |---|-------------------|----------------------------------------------------------------|
    | 1 | select            | only sealed files: never ``*.incomplete``, nothing under      |
    |   |                   | ``.quarantine/``, no hidden temporary file                     |
    | 2 | validate          | ``crc`` where the file has payload CRCs, else ``structural``  |
    |   |                   | (the command says how many files had none); an invalid file   |
    |   |                   | is not uploaded (the batch fails, naming it)                   |
    | 3 | skip              | an object of the same size whose index row has the same ETag  |
    |   |                   | and SHA-256 is skipped unread; one of the same size without    |
    |   |                   | such a row is re-read: the same SHA-256 is skipped too         |
    | 4 | put               | ``put_file``; on a local (``file://``) store into             |
    |   |                   | ``.NAME.uploading-PID`` and renamed (an S3 PUT or multipart    |
    |   |                   | upload only appears when complete)                             |
    | 5 | verify            | the object's size, then its SHA-256 re-read from the store;   |
    |   |                   | a mismatch deletes the object and fails the file               |
    | 6 | a put that failed | the object is looked for: one that appeared anyway (a         |
    |   |                   | multipart upload the store completed late) is kept only if it  |
    |   |                   | verifies (step 5), else deleted; the file is reported by what  |
    |   |                   | is actually there                                              |

Resuming after an interruption is running the same command again: every object already
verified is skipped by rule 3, a half-written one never became visible (rule 4).  The
store's ETag is not trusted as a content hash (a multipart ETag is an MD5 of MD5s and
SSE-KMS ETags are opaque), so verification always re-reads.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import attrs

from fastsim_record.batch.jobs import Outcome, payload_receipt, row_of, sha256_file
from fastsim_record.batch.sources import (
    Entry,
    etag_of,
    filesystem,
    is_local_fs,
    skipped,
    store_error,
)
from fastsim_recording_format import FormatError, FsrReader

__all__ = ["UploadTask", "object_sha256", "upload_job"]

_CHUNK = 1 << 20


@attrs.frozen
class UploadTask:
    """One local file, the object URL it goes to, and what the old index knows of it."""

    path: str
    url: str
    known_etag: str | None = None
    known_sha256: str | None = None


def object_sha256(fs: Any, path: str) -> str:
    """The SHA-256 of an object, re-read from the store."""
    digest = hashlib.sha256()
    with fs.open(path, "rb", block_size=_CHUNK, cache_type="none") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _put(fs: Any, local: str, remote: str) -> None:
    """Rule 4."""
    if is_local_fs(fs):
        folder, name = os.path.split(remote)
        fs.makedirs(folder, exist_ok=True)
        tmp = f"{folder}/.{name}.uploading-{os.getpid()}"
        try:
            fs.put_file(local, tmp)
            fs.mv(tmp, remote)
        finally:
            if fs.exists(tmp):
                fs.rm_file(tmp)
        return
    fs.put_file(local, remote)


def _info(fs: Any, remote: str) -> dict[str, Any] | None:
    fs.invalidate_cache()
    try:
        info: dict[str, Any] = fs.info(remote)
    except FileNotFoundError:
        return None
    return info


def _appeared(fs: Any, remote: str, before: dict[str, Any] | None) -> bool:
    """Whether an object is at ``remote`` that was not there (or was another) before the put."""
    after = _info(fs, remote)
    return after is not None and (before is None or etag_of(after) != etag_of(before)
                                  or after.get("size") != before.get("size"))


def _verified(fs: Any, remote: str, size: int, digest: str) -> str | None:
    """``None`` when the object is exactly the file (size, then SHA-256 re-read), else why not."""
    current = _info(fs, remote)
    got = None if current is None else int(current.get("size") or -1)
    if got != size:
        return f"size {got} != {size}"
    return None if object_sha256(fs, remote) == digest else "SHA-256 differs"


def upload_job(task: UploadTask) -> Outcome:
    """Steps 1-5 for one file; ``data`` is its index row (``status``: uploaded or skipped)."""
    if skipped(task.path):
        return Outcome(task.path, 1, "not a committed file (.incomplete, .quarantine or temporary); not uploaded")
    try:
        receipt = payload_receipt(task.path).to_json()
        with FsrReader(task.path) as reader:
            from fastsim_record.cli.info import summary

            info = summary(reader)
        digest = sha256_file(task.path)
        size = os.path.getsize(task.path)
    except FormatError as exc:
        return Outcome(task.path, 1, f"invalid: {exc}; not uploaded")
    except OSError as exc:
        return Outcome(task.path, 2, f"cannot read: {exc.strerror or exc}")
    try:
        fs, remote = filesystem(task.url)
        current = _info(fs, remote)
        status = "uploaded"
        if current is not None and int(current.get("size") or -1) == size:
            etag = etag_of(current)
            if (etag is not None and etag == task.known_etag and digest == task.known_sha256) \
                    or object_sha256(fs, remote) == digest:
                status = "skipped"
        if status == "uploaded":
            before = current
            try:
                _put(fs, task.path, remote)
            except Exception as exc:  # the store may still complete it (a multipart upload that finished late)
                if not _appeared(fs, remote, before):
                    raise
                if _verified(fs, remote, size, digest) is not None:
                    fs.rm_file(remote)
                    return Outcome(task.path, 2, f"{store_error(task.url, exc)}; the object the failed "
                                                 "upload left was deleted")
            why = _verified(fs, remote, size, digest)
            current = _info(fs, remote)
            if why is not None:
                fs.rm_file(remote)
                return Outcome(task.path, 1, f"verification failed for {task.url} ({why}); the object was deleted")
    except Exception as exc:  # the store's own errors (credentials, connection, permission)
        return Outcome(task.path, 2, str(store_error(task.url, exc)))
    entry = Entry(url=task.url, size=size, etag=None if current is None else etag_of(current),
                  mtime_ns=None if current is None or not is_local_fs(fs) else os.stat(remote).st_mtime_ns)
    row = row_of(entry, info, receipt, receipt["profile"], digest, None)
    return Outcome(task.path, 0, None, {"status": status, "row": row, "payload_crc": receipt["profile"] == "crc"})
