"""``fsr info FILE... [--json] [--jobs J|--ray [ADDR]]``: summarise sealed FSR files.

One local FILE: the outcome table below.  Many files, folders or URLs: ``--json`` prints
one JSON object per line (the keys below plus ``path``; a failed file is
``{"path", "code", "error"}``), text prints each file's summary under a ``== FILE``
header; then a summary line (stderr with ``--json``) and each failed file named; exit 0,
else the worst code.

    | # | outcome                     | stdout               | stderr                | exit |
    |---|-----------------------------|----------------------|-----------------------|------|
    | 1 | readable sealed file        | summary (or JSON)    | -                     | 0    |
    | 2 | not a valid FSR file        | -                    | ``invalid: <reason>`` | 1    |
    | 3 | unreadable path             | -                    | ``fsr info: <error>`` | 2    |

The JSON object has the keys ``streams`` (objects with ``name``, ``stream_id``, ``kind``,
``records``, ``data``, ``gap``, ``lost`` (records the gaps stand in for), ``barrier``,
``payload_bytes``, ``codec``, ``generations``, ``sim_time_ns``), ``records``, ``batches``, ``payload_bytes``, ``size``,
``degraded``, ``recovered``, ``integrity``, ``mode``, ``source_sha256``, ``run_id``,
``completion_id``, ``global_sequence`` and ``sim_time_ns``, and what the file says about
its Run: ``completion`` (``kind``: normal, stopped, failed or cancelled, ``reason``,
``requested_by``; from the terminal fence), ``run`` (``name``, ``backend``, ``seed``,
``episode``; from the run metadata a host recorded, else nulls), ``wall_time_s`` (from
the ``run.started`` to the ``run.stopping`` lifecycle record, else null), ``task``
(``task``, ``success``, ``return``, ``steps``: the episode's result, the ``task.result``
event of a Run whose scene declares a task, else null), and ``cameras``:
per camera alias, the ``renderer`` its first calibration profile names (``name``,
``version``, ``gl_backend``, ``msaa_samples``, ``shadow_map_size``), else null, and its
``model`` (``pinhole``, or ``uncalibrated``: no K, no pose), ``width`` and ``height``.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fastsim_recording_format import FormatError, FsrReader

__all__ = ["add_arguments", "run", "summary", "table"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr info``'s arguments."""
    parser.add_argument("files", nargs="+", metavar="FILE", help="sealed .fsr files, folders or URLs")
    parser.add_argument("--json", action="store_true", help="print one JSON object (one per line for many)")
    from fastsim_record.batch.runner import add_executor_arguments

    add_executor_arguments(parser)


_RUN_KEYS = ("name", "backend", "seed", "episode")


def _completion(footer: dict[str, Any]) -> dict[str, Any]:
    fence = footer.get("terminal_fence")
    fence = fence if isinstance(fence, dict) else {}
    return {
        "kind": fence.get("completion"),
        "reason": fence.get("completion_reason"),
        "requested_by": fence.get("completion_by"),
    }


def _run_facts(reader: FsrReader) -> dict[str, Any]:
    attributes = reader.run.attributes if isinstance(reader.run.attributes, dict) else {}
    run = attributes.get("run")
    run = run if isinstance(run, dict) else {}
    return {key: run.get(key) for key in _RUN_KEYS}


def _wall_time_s(reader: FsrReader) -> float | None:
    """Seconds from ``run.started`` to ``run.stopping`` (their ``wall_time_unix_ns``)."""
    marks: dict[str, int] = {}
    try:
        if not any(spec.name == "lifecycle" for spec in reader.streams):
            return None
        for count, record in enumerate(reader.records("lifecycle")):
            if count >= 10_000:  # lifecycle is a handful of records; never scan a hostile flood
                break
            if record.payload_length > 65536:
                continue
            data = json.loads(record.payload)
            if isinstance(data, dict) and isinstance(data.get("wall_time_unix_ns"), int):
                marks.setdefault(str(data.get("event")), data["wall_time_unix_ns"])
    except Exception:  # a damaged lifecycle stream only loses the wall time, never the summary
        return None
    if "run.started" not in marks or "run.stopping" not in marks:
        return None
    return max(0.0, (marks["run.stopping"] - marks["run.started"]) / 1e9)


def _task_result(reader: FsrReader) -> dict[str, Any] | None:
    """The last ``task.result`` event of a Run with a task (its metadata's ``task``)."""
    attributes = reader.run.attributes if isinstance(reader.run.attributes, dict) else {}
    if not isinstance(attributes.get("task"), dict) or not any(s.name == "events" for s in reader.streams):
        return None
    found = None
    try:
        for count, record in enumerate(reader.records("events")):
            if count >= 1_000_000:  # never scan a hostile flood
                break
            if record.payload_length > 65536:
                continue
            data = json.loads(record.payload)
            if isinstance(data, dict) and data.get("event") == "task.result" and isinstance(data.get("data"), dict):
                found = data["data"]
    except Exception:  # a damaged events stream only loses the result, never the summary
        return None
    if found is None:
        return None
    return {key: found.get(key) for key in ("task", "success", "return", "steps")}


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
        out[str(attributes.get("camera", spec.name))] = {"renderer": renderer, **facts}
    return out


def summary(reader: FsrReader) -> dict[str, Any]:
    """The JSON summary of an open file."""
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
        "completion": _completion(footer),
        "run": _run_facts(reader),
        "wall_time_s": _wall_time_s(reader),
        "task": _task_result(reader),
        "cameras": _cameras(reader),
    }


def lost_records(totals: dict[str, Any]) -> int:
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


def _cell(text: str) -> str:
    """``text`` as one table cell: control characters are shown escaped."""
    return text if text.isprintable() else json.dumps(text)[1:-1]


def _span(s: dict[str, Any]) -> str:
    lo, hi = s["min"], s["max"]
    return "-" if lo is None else f"{lo / 1e9:.3f}..{hi / 1e9:.3f} s"


def _generations(gens: list[int]) -> str:
    if not gens:
        return "-"
    if len(gens) <= 3:
        return ",".join(map(str, gens))
    return f"{gens[0]}..{gens[-1]} ({len(gens)})"


#: the stream table's columns: title, right-aligned
_COLUMNS = (("stream", False), ("records", True), ("gaps", True), ("lost", True), ("codec", False),
            ("generations", False), ("sim time", False))


def table(streams: list[dict[str, Any]]) -> list[str]:
    """The stream table as lines; every column is as wide as its widest cell."""
    rows = [[title for title, _ in _COLUMNS]]
    for s in streams:
        codec = s["codec"].get("codec") or s["codec"].get("media_type") or "-"
        rows.append([
            _cell(s["name"]), str(s["records"]), str(s["gap"]), str(s["lost"]), _cell(str(codec)),
            _generations(s["generations"]), _span(s["sim_time_ns"]),
        ])
    widths = [max(len(row[k]) for row in rows) for k in range(len(_COLUMNS))]
    lines = []
    for row in rows:
        cells = [
            cell.rjust(width) if right else cell.ljust(width)
            for cell, width, (_, right) in zip(row, widths, _COLUMNS)
        ]
        lines.append("  ".join(cells).rstrip())
    return lines


def _about(info: dict[str, Any]) -> list[str]:
    run, completion = info["run"], info["completion"]
    name = _cell(str(run["name"])) if run["name"] is not None else "-"
    facts = ", ".join(
        f"{key} {_cell(str(run[key]))}" for key in ("backend", "seed", "episode") if run[key] is not None
    )
    kind = completion["kind"] or "unknown"
    reason = f" ({_cell(str(completion['reason']))})" if completion["reason"] and kind != "normal" else ""
    wall = "-" if info["wall_time_s"] is None else f"{info['wall_time_s']:.3f} s"
    lines = [
        f"run {name}" + (f" ({facts})" if facts else ""),
        f"completion {kind}{reason}, wall time {wall}",
    ]
    task = info.get("task")
    if task:
        success = "-" if task["success"] is None else str(task["success"]).lower()
        total = task["return"]
        shown = f"{total:.3f}" if isinstance(total, int | float) else "-"
        lines.append(f"task {_cell(str(task['task']))}: success {success}, return {shown}, {task['steps']} steps")
    return lines


def _renderer(renderer: dict[str, Any] | None) -> str:
    if not renderer:
        return "renderer not recorded"
    gl = f" ({_cell(str(renderer['gl_backend']))})" if renderer.get("gl_backend") else ""
    return (
        f"rendered by {_cell(str(renderer.get('name')))} {_cell(str(renderer.get('version')))}{gl}, "
        f"MSAA {renderer.get('msaa_samples')} samples, shadow map {renderer.get('shadow_map_size')}"
    )


def _text(info: dict[str, Any]) -> str:
    lines = [
        *_about(info),
        f"records {info['records']} in {info['batches']} batches, {info['payload_bytes']} payload bytes, "
        f"{info['size']} bytes",
        f"mode {info['mode']}, integrity {info['integrity']}, degraded {str(info['degraded']).lower()}, "
        f"recovered {str(info['recovered']).lower()}",
        f"run {info['run_id']}, completion {info['completion_id']}, sim time {_span(info['sim_time_ns'])}",
    ]
    if info["source_sha256"]:
        lines.append(f"source sha256 {info['source_sha256']}")
    for alias, camera in info.get("cameras", {}).items():
        model = "uncalibrated (no K, no pose)" if camera.get("model") == "uncalibrated" else "pinhole K and pose"
        size = f", {camera['width']}x{camera['height']}, {model}" if camera.get("width") else ""
        lines.append(f"camera {_cell(alias)}: {_renderer(camera['renderer'])}{size}")
    return "\n".join(lines + table(info["streams"]))


def _batch(args: argparse.Namespace) -> int:
    """Many files: one summary each, then the batch's summary and failures."""
    from fastsim_record.batch.jobs import CheckTask, info_job
    from fastsim_record.batch.runner import failures, files, run_all
    from fastsim_record.batch.sources import SourceError, expand

    try:
        entries = expand(args.files)
    except SourceError as exc:
        print(f"fsr info: {exc}", file=sys.stderr)
        return 2
    outcomes = run_all("fsr info", args, info_job, [CheckTask(e) for e in entries])
    if isinstance(outcomes, int):
        return outcomes
    for o in outcomes:
        if args.json:
            data = {"path": o.url, **o.data} if o.data is not None else {"path": o.url, "code": o.code, "error": o.error}
            print(json.dumps(data, sort_keys=True))
        elif o.data is not None:
            print(f"== {o.url}\n{_text(o.data)}")
    bad = sum(1 for o in outcomes if o.code)
    print(f"summarised {files(len(outcomes))}: {len(outcomes) - bad} valid, {bad} failed",
          file=sys.stderr if args.json else sys.stdout)
    return failures("fsr info", outcomes)


def run(args: argparse.Namespace) -> int:
    """Print the summary; 0 valid, 1 invalid, 2 unreadable."""
    from fastsim_record.batch.sources import is_single_file

    if not is_single_file(args.files, args):
        return _batch(args)
    args.file = args.files[0]
    try:
        with FsrReader(args.file) as reader:
            info = summary(reader)
    except FormatError as exc:
        print(f"invalid: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"fsr info: {exc}", file=sys.stderr)
        return 2
    print(json.dumps(info, sort_keys=True) if args.json else _text(info))
    return 0
