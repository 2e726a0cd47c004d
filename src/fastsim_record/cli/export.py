"""``fsr export SOURCES... --to lerobot|mcap|rerun -o OUT [--overwrite]``.

SOURCES are FSR files or folders (every ``*.fsr`` below, sorted).  The export is written
to a temporary ``.OUT.exporting-<pid>`` next to OUT and renamed to OUT only when it is
complete, so OUT is never half-written; an existing OUT is replaced only with
``--overwrite`` (and only after the new export is complete).

    | # | outcome                                                   | output              | exit |
    |---|-----------------------------------------------------------|---------------------|------|
    | 1 | exported                                                  | one summary line    | 0    |
    | 2 | a source is not a valid FSR file, or cannot be exported   | one line naming the | 1    |
    |   | to the target (e.g. LeRobot: cameras at different rates)  | file and the field  |      |
    | 3 | a SOURCE does not exist or a folder holds no FSR file;    | one line            | 2    |
    |   | OUT exists (without ``--overwrite``); the target's extra  | (names the          |      |
    |   | is not installed                                          | ``pip install``)    |      |

Never a traceback.  A progress bar (records exported) is drawn on stderr when it is a
terminal.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path
from typing import Any

__all__ = ["add_arguments", "run"]

TARGET_NAMES = ("lerobot", "mcap", "rerun")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr export``'s arguments."""
    parser.add_argument("sources", nargs="+", metavar="SOURCE", help="FSR files or folders of them")
    parser.add_argument("--to", required=True, choices=TARGET_NAMES, help="the target format")
    parser.add_argument("-o", "--output", required=True, metavar="OUT",
                        help="output: a LeRobot dataset folder, or an .mcap / .rrd file "
                             "(a folder of them for several sources)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    parser.add_argument("--task", default=None, help="LeRobot: the task text (default: the Run's name)")
    parser.add_argument("--video-codec", choices=("av1", "h264"), default="av1",
                        help="LeRobot: av1 (libsvtav1 with LeRobot's defaults, the default) or h264")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    parser.epilog = (
        "exit codes: 0 exported; 1 a source is invalid or cannot be exported to the target; "
        "2 a SOURCE is missing, OUT exists (without --overwrite), or the target's extra is not installed"
    )


def _fail(code: int, message: str) -> int:
    print(message, file=sys.stderr)
    return code


class _Bar:
    """A rich progress bar on stderr, or nothing when stderr is not a terminal."""

    def __init__(self, label: str, show: bool) -> None:
        self._bar: Any = None
        self._task: Any = None
        if show:
            from rich.console import Console
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )

            self._bar = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                 console=Console(stderr=True), transient=True)
            self._task = self._bar.add_task(label, total=None)

    def __enter__(self) -> _Bar:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def total(self, records: int) -> None:
        """Set the bar's total."""
        if self._bar is not None:
            self._bar.update(self._task, total=records)

    def advance(self, records: int) -> None:
        """Move the bar."""
        if self._bar is not None:
            self._bar.advance(self._task, records)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def run(args: argparse.Namespace) -> int:
    """Export; see the module's outcome table."""
    from fastsim_record.export import (
        ExportError,
        ExportOptions,
        MissingExtra,
        collect_sources,
        exporter,
    )
    from fastsim_record.export._source import receipt
    from fastsim_record.reading import ReadError
    from fastsim_recording_format import FormatError

    try:
        sources = collect_sources(args.sources)
    except FileNotFoundError as exc:
        return _fail(2, f"fsr export: {exc}")
    out = Path(args.output)
    if (out.exists() or out.is_symlink()) and not args.overwrite:
        return _fail(2, f"fsr export: {out} exists; pass --overwrite to replace it")
    if not out.parent.is_dir():
        return _fail(2, f"fsr export: {out.parent}: no such folder for OUT")
    try:
        target = exporter(args.to)
    except MissingExtra as exc:
        return _fail(2, f"fsr export: {exc}")
    for path in sources:
        try:
            receipt(path)
        except FormatError as exc:
            return _fail(1, f"invalid: {path}: {exc}")
        except OSError as exc:
            return _fail(2, f"fsr export: cannot read {path}: {exc.strerror or exc}")
    tmp = out.parent / f".{out.name}.exporting-{os.getpid()}"
    if tmp.exists() or tmp.is_symlink():
        return _fail(2, f"fsr export: {tmp} exists (another export?); remove it first")
    options = ExportOptions(task=args.task, video_codec=args.video_codec)
    try:
        with _Bar(f"export {args.to}", not args.quiet and sys.stderr.isatty()) as bar:
            summary = target.export(sources, tmp, options, bar)
    except (ExportError, ReadError, FormatError) as exc:
        _remove(tmp)
        return _fail(1, f"fsr export: {exc}")
    except MissingExtra as exc:
        _remove(tmp)
        return _fail(2, f"fsr export: {exc}")
    except OSError as exc:
        _remove(tmp)
        return _fail(1, f"fsr export: {exc.strerror or exc}: {exc.filename or out}")
    except Exception as exc:  # a defect of this program: still one line, never a traceback
        _remove(tmp)
        return _fail(1, f"fsr export: internal error: {type(exc).__name__}: {exc}")
    except BaseException:
        _remove(tmp)
        raise
    if out.exists() or out.is_symlink():  # only reached with --overwrite
        _remove(out)
    os.replace(tmp, out)
    total = sum(summary.counts.values())
    unit = {"lerobot": "frames", "mcap": "messages", "rerun": "rows"}.get(args.to, "items")
    print(f"exported {len(sources)} recording(s), {summary.episodes} episode(s), {total} {unit} to {out} ({args.to})")
    return 0
