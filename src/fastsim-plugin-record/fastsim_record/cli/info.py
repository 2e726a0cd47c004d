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
``episode``; from the run metadata a host recorded, else the ``run.created`` record, else
nulls; a value of another type is null), ``wall_time_s`` (from
the ``run.started`` to the ``run.stopping`` lifecycle record, else null), ``task``
(``task``, ``success``, ``return``, ``steps``: the episode's result, the ``task.result``
event of a Run whose scene declares a task, else null), and ``cameras``:
per camera alias, the ``renderer`` its first calibration profile names (``name``,
``version``, ``gl_backend``, ``msaa_samples``, ``shadow_map_size``), else null, and its
``model`` (``pinhole``, or ``uncalibrated``: no K, no pose), ``width`` and ``height``.
The object is ``fastsim_recording_format.reading.summary.summary``: the episode index's
row and the batch jobs are made from the same one.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fastsim_recording_format import FormatError, FsrReader
from fastsim_recording_format.reading.summary import lost_records, summary

__all__ = ["add_arguments", "lost_records", "run", "summary", "table"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr info``'s arguments."""
    parser.add_argument("files", nargs="+", metavar="FILE", help="sealed .fsr files, folders or URLs")
    parser.add_argument("--json", action="store_true", help="print one JSON object (one per line for many)")
    from fastsim_record.cli._batch import add_executor_arguments

    add_executor_arguments(parser)


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
    from fastsim_record.batch.sources import SourceError, expand
    from fastsim_record.cli._batch import failures, files, run_all

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
