"""The episode index's columns: one Parquet row per FSR file (one episode).

    | group      | columns                                                                   |
    |------------|---------------------------------------------------------------------------|
    | where      | ``path`` (relative to the index's folder when the file lies below it, so   |
    |            | the folder can be moved; else absolute or a URL), ``size``, ``mtime_ns``   |
    |            | or ``etag``                                                               |
    | Run        | ``run_id``, ``run_name``, ``backend``, ``seed``, ``episode`` (the sweep's  |
    |            | episode number)                                                            |
    | ending     | ``completion`` (normal, stopped, ...), ``completion_reason``, ``degraded``, |
    |            | ``recovered``                                                             |
    | time       | ``segments`` (Runtime generations in the file; ``generations`` is the old  |
    |            | name, kept for one release), ``sim_time_start_s``, ``sim_time_end_s``,     |
    |            | ``sim_duration_s``, ``wall_duration_s``                                    |
    | content    | ``records``, ``records_by_kind``, ``cameras``, ``codecs``, ``lost``,       |
    |            | ``lost_by_stream``                                                        |
    | trust      | ``integrity``, ``profile``, ``footer_identity``, ``completion_identity``,  |
    |            | ``sha256`` (with ``--sha256``), ``error`` (the one-line reason the file    |
    |            | failed validation; its other Run columns are then null)                    |
    | outcome    | see below; null where the file does not say                               |

The outcome columns (``outcome_columns``), from ``reading.summary``:

    | # | column        | a Run with a task (``task.result``)   | a Gymnasium recording           |
    |---|---------------|---------------------------------------|---------------------------------|
    | 1 | ``task``      | the task (``reach``, ``pick``)        | null                            |
    | 2 | ``success``   | the result's ``success``              | null                            |
    | 3 | ``return``    | the result's return                   | ``gym.episode_end``'s return    |
    | 4 | ``terminated``| success or failure                    | ``gym.episode_end``             |
    | 5 | ``truncated`` | not terminated and completion normal  | ``gym.episode_end``             |
    |   |               | (the Run's duration or ``max_steps``) |                                 |
    | 6 | ``env_id``    | null                                  | the env spec's id               |

So ``success == True`` selects the episodes that worked, and ``env_id == 'Hopper-v5'``
one env's episodes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fastsim_recording_format.reading._sources import INDEX_KEY

__all__ = ["INDEX_KEY", "LATER_COLUMNS", "outcome_columns", "schema"]

#: columns added after the first index layout: an index without them is valid, and its
#: rows are not reused (``index.reusable``), so the next run fills them in
LATER_COLUMNS = frozenset({"task", "success", "return", "segments", "terminated", "truncated", "env_id"})


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
        ("segments", pa.int64()), ("generations", pa.int64()),
        ("sim_time_start_s", pa.float64()), ("sim_time_end_s", pa.float64()),
        ("sim_duration_s", pa.float64()), ("wall_duration_s", pa.float64()),
        ("records", pa.int64()), ("records_by_kind", counts),
        ("cameras", pa.list_(pa.string())), ("codecs", pa.list_(pa.string())),
        ("lost", pa.int64()), ("lost_by_stream", counts),
        ("integrity", pa.string()), ("profile", pa.string()),
        ("footer_identity", pa.string()), ("completion_identity", pa.string()),
        ("sha256", pa.string()), ("error", pa.string()),
        ("task", pa.string()), ("success", pa.bool_()), ("return", pa.float64()),
        ("terminated", pa.bool_()), ("truncated", pa.bool_()), ("env_id", pa.string()),
    ], metadata={INDEX_KEY: b"1"})


def outcome_columns(info: Mapping[str, Any]) -> dict[str, Any]:
    """Rules 1-6 from a file's summary (``reading.summary.summary``)."""
    task = info.get("task") or {}
    gym = info.get("gym") or {}
    terminated, truncated = gym.get("terminated"), gym.get("truncated")
    if task:
        success, failure = task.get("success"), task.get("failure")
        terminated = True if success is True or failure is True else (
            False if success is False and failure is False else None)
        completion = (info.get("completion") or {}).get("kind")
        truncated = None if terminated is None else (not terminated and completion == "normal")
    return {
        "task": task.get("task"), "success": task.get("success"),
        "return": task.get("return") if task else gym.get("return"),
        "terminated": terminated, "truncated": truncated, "env_id": gym.get("env_id"),
    }
