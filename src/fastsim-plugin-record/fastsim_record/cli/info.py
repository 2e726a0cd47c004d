"""``fsr info FILE... [--json] [--verbose] [--jobs J|--ray [ADDR]]``: summarise sealed FSR files.

One local FILE: the outcome table below.  Many files, folders or URLs: ``--json`` prints
one JSON object per line (the keys below plus ``path``; a failed file is
``{"path", "code", "error"}``), text prints one line per file (completion, seed, sim
time, records, size, segments, degraded/recovered; ``--verbose``: each file's whole
summary under a ``== FILE`` header); then a summary line (stderr with ``--json``) and
each failed file named; exit 0, else the worst code.

    | # | outcome                     | stdout               | stderr                | exit |
    |---|-----------------------------|----------------------|-----------------------|------|
    | 1 | readable sealed file        | summary (or JSON)    | -                     | 0    |
    | 2 | not a valid FSR file        | -                    | ``invalid: <reason>`` | 1    |
    | 3 | unreadable path             | -                    | ``fsr info: <error>`` | 2    |

The JSON object has the keys ``streams`` (objects with ``name``, ``stream_id``, ``kind``,
``records``, ``data``, ``gap``, ``lost`` (records the gaps stand in for), ``barrier``,
``payload_bytes``, ``codec``, ``segments`` (the Runtime segments, reset to reset, its
records belong to; ``generations``, the same list under its old name, is kept for one
release), ``sim_time_ns``), ``records``, ``batches``, ``payload_bytes``, ``size``,
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
``model`` (``pinhole``, or ``uncalibrated``: no K, no pose), ``width``, ``height`` and
``channels`` (its image stream's: 3 RGB, 1 grey or 4 RGBA; docs/fsr-format.md 9.2).
The object is ``fastsim_recording_format.reading.summary.summary``: the episode index's
row and the batch jobs are made from the same one.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fastsim_recording_format import FormatError, FsrReader
from fastsim_recording_format.codecs.image import CHANNELS
from fastsim_recording_format.reading.summary import summary

__all__ = ["add_arguments", "run", "table"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr info``'s arguments."""
    parser.add_argument("files", nargs="+", metavar="FILE", help="sealed .fsr files, folders or URLs")
    parser.add_argument("--json", action="store_true", help="print one JSON object (one per line for many)")
    parser.add_argument("--verbose", action="store_true",
                        help="many files: print each file's whole summary, not one line per file")
    from fastsim_record.cli._batch import add_executor_arguments

    add_executor_arguments(parser)


def _cell(text: str) -> str:
    """``text`` as one table cell: control characters are shown escaped."""
    return text if text.isprintable() else json.dumps(text)[1:-1]


def _span(s: dict[str, Any]) -> str:
    lo, hi = s["min"], s["max"]
    return "-" if lo is None else f"{lo / 1e9:.3f}..{hi / 1e9:.3f} s"


def _segments(segments: list[int]) -> str:
    if not segments:
        return "-"
    if len(segments) <= 3:
        return ",".join(map(str, segments))
    return f"{segments[0]}..{segments[-1]} ({len(segments)})"


def _with_segments(info: dict[str, Any]) -> dict[str, Any]:
    """``info`` with each stream's ``segments`` (the summary's ``generations``, which stays
    for one release under its old name)."""
    streams = [{**s, "segments": s.get("segments", s["generations"])} for s in info["streams"]]
    return {**info, "streams": streams}


#: the stream table's columns: title, right-aligned
_COLUMNS = (("stream", False), ("records", True), ("gaps", True), ("lost", True), ("codec", False),
            ("segments", False), ("sim time", False))


def table(streams: list[dict[str, Any]]) -> list[str]:
    """The stream table as lines; every column is as wide as its widest cell."""
    rows = [[title for title, _ in _COLUMNS]]
    for s in streams:
        codec = s["codec"].get("codec") or s["codec"].get("media_type") or "-"
        rows.append([
            _cell(s["name"]), str(s["records"]), str(s["gap"]), str(s["lost"]), _cell(str(codec)),
            _segments(s.get("segments", s["generations"])), _span(s["sim_time_ns"]),
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
        channels = camera.get("channels")
        if channels in CHANNELS:
            size += f", {channels} channel{'' if channels == 1 else 's'} ({CHANNELS[channels]})"
        lines.append(f"camera {_cell(alias)}: {_renderer(camera['renderer'])}{size}")
    return "\n".join(lines + table(info["streams"]))


def _line(path: str, info: dict[str, Any]) -> str:
    """One file in one line: completion, seed, sim time, records, size, segments, flags."""
    completion = info["completion"]["kind"] or "unknown"
    seed = info["run"]["seed"]
    lo, hi = info["sim_time_ns"]["min"], info["sim_time_ns"]["max"]
    sim = "-" if lo is None else f"{(hi - lo) / 1e9:.2f} s"
    segments = {g for s in info["streams"] for g in s.get("segments", s["generations"])}
    flags = [flag for flag in ("degraded", "recovered") if info[flag]]
    task = info.get("task")
    if task and task.get("success") is not None:
        flags.append(f"success {str(task['success']).lower()}")
    return (f"{_cell(path)}  {completion}" + (f", seed {_cell(str(seed))}" if seed is not None else "")
            + f", {sim}, {info['records']} records, {info['size']} bytes, "
            + f"{len(segments)} segment{'' if len(segments) == 1 else 's'}"
            + "".join(f", {flag}" for flag in flags))


def _batch(args: argparse.Namespace) -> int:
    """Many files: one line each (``--verbose``: each whole summary), then the batch's
    summary and failures."""
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
    kinds: dict[str, int] = {}
    for o in outcomes:
        if args.json:
            data = ({"path": o.url, **_with_segments(o.data)} if o.data is not None
                    else {"path": o.url, "code": o.code, "error": o.error})
            print(json.dumps(data, sort_keys=True))
        elif o.data is not None:
            print(f"== {o.url}\n{_text(o.data)}" if args.verbose else _line(o.url, o.data))
        if o.data is not None:
            kind = o.data["completion"]["kind"] or "unknown"
            kinds[kind] = kinds.get(kind, 0) + 1
    bad = sum(1 for o in outcomes if o.code)
    completions = ", ".join(f"{count} {kind}" for kind, count in sorted(kinds.items()))
    print(f"summarised {files(len(outcomes))}: {len(outcomes) - bad} valid, {bad} invalid"
          + (f" (completion: {completions})" if completions else ""),
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
    print(json.dumps(_with_segments(info), sort_keys=True) if args.json else _text(info))
    return 0
