"""Per-file jobs of the batch commands: module-level functions of one picklable item.

Each job reads one FSR file (a local copy for a URL) and returns an ``Outcome``; it never
raises for a bad file.  The executor (``fastsim_record.ports.executors``) decides where
it runs; the same job gives the same result in a process pool and on Ray.

    | # | job            | item            | ``Outcome.data``                               |
    |---|----------------|-----------------|------------------------------------------------|
    | 1 | ``validate_job``| ``CheckTask``  | the receipt (JSON)                             |
    | 2 | ``info_job``   | ``CheckTask``   | the ``fsr info --json`` summary                |
    | 3 | ``index_job``  | ``CheckTask``   | the index row (``fastsim_record.batch.index``) |

Codes: 0 ok; 1 invalid file (``error`` is ``invalid: <reason> at offset <n>``); 2
unreadable path or a profile the file cannot support.
"""

from __future__ import annotations

import contextlib
import hashlib
from typing import Any

import attrs

from fastsim_record.batch.index_schema import outcome_columns
from fastsim_record.batch.sources import Entry, readable
from fastsim_recording_format import (
    FormatError,
    FsrReader,
    IntegrityPolicyError,
    ProfileUnsupportedError,
    ValidationReceipt,
    validate,
)
from fastsim_recording_format.reading.summary import summary

__all__ = [
    "CRC_IF_PRESENT", "CheckTask", "Outcome", "index_job", "info_job", "payload_receipt", "row_of", "sha256_file",
    "validate_job",
]

_CHUNK = 1 << 20


@attrs.frozen
class CheckTask:
    """One file and how to check it."""

    entry: Entry
    integrity: str = "structural"
    policy: str = "none"
    sha256: bool = False


@attrs.frozen
class Outcome:
    """What one job found about one file."""

    url: str
    code: int
    error: str | None = None
    data: dict[str, Any] | None = None


def sha256_file(target: Any) -> str:
    """The SHA-256 of a whole file (a path, or a seekable binary file from its start),
    read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with contextlib.ExitStack() as stack:
        handle = stack.enter_context(open(target, "rb")) if isinstance(target, str) else target
        handle.seek(0)
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


#: ``CheckTask.integrity``: ``crc`` where the file has payload CRC-32Cs, else ``structural``
CRC_IF_PRESENT = "crc-if-present"


def payload_receipt(target: Any) -> ValidationReceipt:
    """The receipt of ``target`` checked with every payload CRC-32C when the file carries
    them (a flipped payload byte is a ``FormatError``), else structurally: what export and
    upload read before they pass bytes on."""
    try:
        return validate(target, "crc")
    except ProfileUnsupportedError:
        return validate(target, "structural")


def _check(task: CheckTask, path: Any) -> tuple[int, str | None, dict[str, Any] | None]:
    try:
        if task.integrity == CRC_IF_PRESENT:
            receipt = payload_receipt(path)
        else:
            receipt = validate(path, task.integrity, task.policy)
    except FormatError as exc:
        return 1, f"invalid: {exc}", None
    except (ProfileUnsupportedError, IntegrityPolicyError) as exc:
        return 2, str(exc).splitlines()[0], None
    except OSError as exc:
        return 2, f"{exc.strerror or exc}", None
    return 0, None, receipt.to_json()


def validate_job(task: CheckTask) -> Outcome:
    """Validate one file at ``task.integrity``."""
    try:
        with readable(task.entry.url) as path:
            code, error, receipt = _check(task, path)
    except (OSError, ValueError) as exc:
        return Outcome(task.entry.url, 2, f"cannot read: {exc}".splitlines()[0])
    return Outcome(task.entry.url, code, error, receipt)


def info_job(task: CheckTask) -> Outcome:
    """The ``fsr info --json`` summary of one file."""
    try:
        with readable(task.entry.url) as path, FsrReader(path) as reader:
            return Outcome(task.entry.url, 0, None, summary(reader))
    except FormatError as exc:
        return Outcome(task.entry.url, 1, f"invalid: {exc}")
    except (OSError, ValueError) as exc:
        return Outcome(task.entry.url, 2, f"cannot read: {exc}".splitlines()[0])


def row_of(entry: Entry, info: dict[str, Any] | None, receipt: dict[str, Any] | None,
           profile: str, sha256: str | None, error: str | None) -> dict[str, Any]:
    """One index row (the columns of ``fastsim_record.batch.index.SCHEMA``)."""
    row: dict[str, Any] = {
        "path": entry.url, "size": entry.size, "mtime_ns": entry.mtime_ns, "etag": entry.etag,
        "profile": profile, "sha256": sha256, "error": error,
    }
    if info is None:
        return row
    run, completion = info["run"], info["completion"]
    lo, hi = info["sim_time_ns"]["min"], info["sim_time_ns"]["max"]
    by_kind: dict[str, int] = {}
    lost: dict[str, int] = {}
    cameras, codecs, generations = set(), set(), set()
    for s in info["streams"]:
        by_kind[s["kind"]] = by_kind.get(s["kind"], 0) + int(s["records"])
        if s["gap"]:  # a GAP record covers a run of lost records (G5): count what they cover
            lost[s["name"]] = int(s["lost"])
        if str(s["kind"]).startswith("camera"):
            cameras.add(str(s["name"]).split(".")[1] if s["name"].count(".") > 1 else s["name"])
        label = s["codec"].get("payload_codec") or s["codec"].get("codec") or s["codec"].get("media_type")
        if label:
            codecs.add(str(label))
        generations.update(s["generations"])
    row.update({
        "run_id": info["run_id"], "run_name": run["name"], "backend": run["backend"],
        "seed": run["seed"], "episode": run["episode"],
        "completion": completion["kind"], "completion_reason": completion["reason"],
        "degraded": info["degraded"], "recovered": info["recovered"],
        "segments": len(generations), "generations": len(generations),  # generations: the old name, one release
        "sim_time_start_s": None if lo is None else lo / 1e9,
        "sim_time_end_s": None if hi is None else hi / 1e9,
        "sim_duration_s": None if lo is None else (hi - lo) / 1e9,
        "wall_duration_s": info["wall_time_s"],
        "records": info["records"], "records_by_kind": sorted(by_kind.items()),
        "cameras": sorted(cameras), "codecs": sorted(codecs),
        "lost": sum(lost.values()), "lost_by_stream": sorted(lost.items()),
        "integrity": info["integrity"],
    })
    row.update(outcome_columns(info))
    if receipt is not None:
        row["footer_identity"] = receipt["footer_identity"]
        row["completion_identity"] = receipt["completion_identity"]
    return row


def index_job(task: CheckTask) -> Outcome:
    """Validate one file, summarise it, and return its index row (an invalid file is a
    row with its one-line error)."""
    entry = task.entry
    try:
        with readable(entry.url) as path:
            code, error, receipt = _check(task, path)
            info = None
            if code == 0:
                with FsrReader(path) as reader:
                    info = summary(reader)
            digest = sha256_file(path) if task.sha256 else None
    except FormatError as exc:
        code, error, info, receipt, digest = 1, f"invalid: {exc}", None, None, None
    except (OSError, ValueError) as exc:
        code, error, info, receipt, digest = 2, f"cannot read: {exc}".splitlines()[0], None, None, None
    return Outcome(entry.url, code, error, row_of(entry, info, receipt, task.integrity, digest, error))
