"""What a sealed FSR file says about itself and its Run, derived once.

``summary(reader)`` is the ``fsr info --json`` object; the episode index's row and the
batch jobs are made from it, so the three never disagree.  ``run_facts(reader)`` is the
one rule for the Run's own facts (``Recording.info`` states the same rule):

    | # | fact                 | from                                                     | type, else |
    |---|----------------------|----------------------------------------------------------|------------|
    | 1 | ``name``, ``backend``| the run metadata's ``attributes.run`` (a file without    | str, None  |
    |   |                      | one: the attributes themselves), else the ``run.created``|            |
    |   |                      | lifecycle record among the first four                    |            |
    | 2 | ``seed``, ``episode``| ``attributes.run`` (as above)                            | int, None  |
    | 3 | completion           | the footer's terminal fence: ``kind``, ``reason``,        | str, None  |
    |   |                      | ``requested_by``                                          |            |
    | 4 | ``wall_time_s``      | ``run.started`` to ``run.stopping`` lifecycle records    | float, None|
    | 5 | ``task``             | the last ``task.result`` event of a Run whose metadata   | see below  |
    |   |                      | declares a ``task``: ``task`` str, ``success`` and       |            |
    |   |                      | ``failure`` bool, ``return`` float, ``steps`` int (each  |            |
    |   |                      | None when of another type); None without a task or a     |            |
    |   |                      | result                                                   |            |
    | 6 | ``gym``              | a Gymnasium recording (``scene.backend.source`` is       | see below  |
    |   |                      | ``gymnasium``): ``env_id`` (the spec's id) and the last  |            |
    |   |                      | ``gym.episode_end`` event's ``terminated``,              |            |
    |   |                      | ``truncated`` bool, ``return`` float, ``steps`` int;     |            |
    |   |                      | None for any other recording                             |            |

A value of the wrong type in the file (``name: 5``, ``seed: "abc"``, ``success: "yes"``)
is ``None``: the metadata is the host's, and a reader never passes its type errors on.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fastsim_recording_format import FormatError, FsrReader, names
from fastsim_recording_format.reading._codecs import image_codec
from fastsim_recording_format.reading._errors import BadRecording

__all__ = ["completion", "gym_episode", "lost_records", "run_facts", "summary", "task_result", "wall_time_s"]

#: lifecycle records read for ``run.created`` (it is the first a host writes)
_CREATED_WITHIN = 4


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _float(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _bool(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def completion(footer: Mapping[str, Any]) -> dict[str, str | None]:
    """Rule 3: how the Run ended, from the footer's terminal fence."""
    fence = footer.get("terminal_fence")
    fence = fence if isinstance(fence, Mapping) else {}
    return {
        "kind": _text(fence.get("completion")),
        "reason": _text(fence.get("completion_reason")),
        "requested_by": _text(fence.get("completion_by")),
    }


def _lifecycle(reader: FsrReader, limit: int) -> list[dict[str, Any]]:
    """Up to ``limit`` small JSON-object lifecycle records, in order; what a damaged
    stream leaves unread is left out."""
    out: list[dict[str, Any]] = []
    if not any(spec.name == "lifecycle" for spec in reader.streams):
        return out
    try:
        for count, record in enumerate(reader.records("lifecycle")):
            if count >= limit:  # lifecycle is a handful of records; never scan a hostile flood
                break
            if record.payload_length > 65536:
                continue
            data = json.loads(record.payload)
            if isinstance(data, dict):
                out.append(data)
    except Exception:  # a damaged lifecycle stream only loses what it would have said
        pass
    return out


def run_facts(reader: FsrReader) -> dict[str, Any]:
    """Rules 1-2: ``name``, ``backend``, ``seed`` and ``episode`` of the Run."""
    attributes = reader.run.attributes if isinstance(reader.run.attributes, Mapping) else {}
    run = attributes.get("run")
    facts: Mapping[str, Any] = run if isinstance(run, Mapping) else attributes
    out = {
        "name": _text(facts.get("name")), "backend": _text(facts.get("backend")),
        "seed": _int(facts.get("seed")), "episode": _int(facts.get("episode")),
    }
    if not ("name" in facts and "backend" in facts):
        for data in _lifecycle(reader, _CREATED_WITHIN):
            if data.get("event") == "run.created":
                for key in ("name", "backend"):
                    if key not in facts:
                        out[key] = _text(data.get(key))
                break
    return out


def wall_time_s(reader: FsrReader) -> float | None:
    """Rule 4: seconds from ``run.started`` to ``run.stopping`` (their ``wall_time_unix_ns``)."""
    marks: dict[str, int] = {}
    for data in _lifecycle(reader, 10_000):
        stamp = _int(data.get("wall_time_unix_ns"))
        if stamp is not None:
            marks.setdefault(str(data.get("event")), stamp)
    if "run.started" not in marks or "run.stopping" not in marks:
        return None
    return max(0.0, (marks["run.stopping"] - marks["run.started"]) / 1e9)


def _last_event(reader: FsrReader, name: str) -> dict[str, Any] | None:
    """The ``data`` of the last ``name`` event in the events stream (None: none, or damaged)."""
    if not any(s.name == "events" for s in reader.streams):
        return None
    found = None
    try:
        for count, record in enumerate(reader.records("events")):
            if count >= 1_000_000:  # never scan a hostile flood
                break
            if record.payload_length > 65536:
                continue
            data = json.loads(record.payload)
            if isinstance(data, dict) and data.get("event") == name and isinstance(data.get("data"), dict):
                found = data["data"]
    except Exception:  # a damaged events stream only loses the result, never the summary
        return None
    return found


def task_result(reader: FsrReader) -> dict[str, Any] | None:
    """Rule 5: the last ``task.result`` event of a Run with a task (its metadata's ``task``)."""
    attributes = reader.run.attributes if isinstance(reader.run.attributes, Mapping) else {}
    if not isinstance(attributes.get("task"), Mapping):
        return None
    found = _last_event(reader, "task.result")
    if found is None:
        return None
    return {"task": _text(found.get("task")), "success": _bool(found.get("success")),
            "failure": _bool(found.get("failure")), "return": _float(found.get("return")),
            "steps": _int(found.get("steps"))}


def gym_episode(reader: FsrReader) -> dict[str, Any] | None:
    """Rule 6: a Gymnasium recording's env id and how its episode ended."""
    attributes = reader.run.attributes if isinstance(reader.run.attributes, Mapping) else {}
    scene = attributes.get("scene")
    backend = scene.get("backend") if isinstance(scene, Mapping) else None
    if not isinstance(backend, Mapping) or backend.get("source") != "gymnasium":
        return None
    spec = backend.get("spec")
    end = _last_event(reader, "gym.episode_end") or {}
    return {"env_id": _text(spec.get("id")) if isinstance(spec, Mapping) else None,
            "terminated": _bool(end.get("terminated")), "truncated": _bool(end.get("truncated")),
            "return": _float(end.get("return")), "steps": _int(end.get("steps"))}


def _cameras(reader: FsrReader) -> dict[str, Any]:
    """Per camera alias: the renderer of its first intrinsics record's calibration profile."""
    out: dict[str, Any] = {}
    for spec in reader.streams:
        attributes = spec.attributes if isinstance(spec.attributes, dict) else {}
        if attributes.get("role") != "intrinsics":
            continue
        renderer, facts = None, {"model": None, "width": None, "height": None}
        try:
            for count, record in enumerate(reader.records(spec.stream_id)):
                profile = record.metadata.get("calibration_profile") if isinstance(record.metadata, dict) else None
                if isinstance(profile, dict):
                    found = profile.get("renderer")
                    renderer = found if isinstance(found, dict) else None
                    facts = {k: profile.get(k) for k in facts}  # pinhole, or uncalibrated (no K, no pose)
                    break
                if count >= 16:  # gaps first at most; never scan a hostile flood
                    break
        except FormatError:
            renderer = None
        alias = str(attributes.get("camera", spec.name))
        out[alias] = {"renderer": renderer, **facts, "channels": _channels(reader, alias)}
    return out


def _channels(reader: FsrReader, alias: str) -> int | None:
    """The channels of a camera's image stream (descriptor ``channels``, absent: 3), else null:
    null too where a reader refuses the descriptor (``channels`` [1], 3.0, or 1 with jpeg)."""
    image = next((s for s in reader.streams if s.name == names.rgb_stream(alias)), None)
    if image is None or not isinstance(image.codec, Mapping):
        return None
    try:
        return image_codec(image).channels
    except BadRecording:
        return None


def lost_records(totals: Mapping[str, Any]) -> int:
    """Records of a stream that its GAP records stand in for.

    A GAP record covers a run of lost records (rule G5), and a stream's records tile its
    stream sequences, so what its gaps cover is its span less its DATA and BARRIER records.
    """
    if not totals["gap"]:
        return 0
    values = [totals.get(k) for k in ("first_stream_sequence", "last_stream_sequence", "data", "barrier")]
    if not all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        return int(totals["gap"]) if isinstance(totals["gap"], int) else 0  # a footer without a span
    first, last, data, barrier = (int(v) for v in values if isinstance(v, int))
    return last - first + 1 - data - barrier


def summary(reader: FsrReader) -> dict[str, Any]:
    """The JSON summary of an open file (the keys ``fsr info --json`` documents)."""
    footer = reader.footer
    proj = reader.projections
    index = reader.batch_index
    totals = {s["stream_id"]: s for s in footer["streams"]}
    streams = []
    for spec in reader.streams:
        rows = proj[proj["stream_id"] == spec.stream_id]
        t = totals[spec.stream_id]
        streams.append({
            "name": spec.name,
            "stream_id": spec.stream_id,
            "kind": spec.kind,
            "records": t["records"],
            "data": t["data"],
            "gap": t["gap"],
            "lost": lost_records(t),
            "barrier": t["barrier"],
            "payload_bytes": t["payload_bytes"],
            "codec": spec.codec,
            "generations": t["generations"],
            "sim_time_ns": {
                "min": int(rows["sim_time_first"].min()) if len(rows) else None,
                "max": int(rows["sim_time_last"].max()) if len(rows) else None,
            },
        })
    return {
        "streams": streams,
        "records": footer["records"],
        "batches": footer["batches"],
        "payload_bytes": footer["payload_bytes"],
        "size": reader.size,
        "degraded": footer["degraded"],
        "recovered": footer["recovered"],
        "integrity": footer["integrity"],
        "mode": footer["mode"],
        "source_sha256": footer["source_sha256"],
        "run_id": reader.run.run_id,
        "completion_id": footer["completion_id"],
        "global_sequence": footer["global_sequence"],
        "sim_time_ns": {
            "min": int(index["sim_time_min"].min()) if len(index) else None,
            "max": int(index["sim_time_max"].max()) if len(index) else None,
        },
        "completion": completion(footer),
        "run": run_facts(reader),
        "wall_time_s": wall_time_s(reader),
        "task": task_result(reader),
        "gym": gym_episode(reader),
        "cameras": _cameras(reader),
    }
