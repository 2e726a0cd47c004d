"""``fsr export SOURCES... --to lerobot|mcap|rerun -o OUT [--overwrite] [--where F] [--include R]``.

SOURCES are FSR files, folders (every ``*.fsr`` below, sorted), URLs (``s3://``,
``gs://``, ``file://``; each object, or every ``*.fsr`` under a prefix, is read from a
temporary local copy) or episode indexes (``fsr index``'s ``*.parquet``, whose rows
``--where`` filters).  By default only episodes that completed normally and are not
degraded are exported; ``--include stopped,degraded`` opts in, and the summary line says
how many were left out and why (``cli._selection``).  Every source is validated first (``--jobs J`` processes, or
``--ray [ADDR]`` Ray tasks, when given); each invalid one is named.  OUT may be a URL:
the export is made locally, then uploaded.  Missing parent folders of OUT are
created.  The export is written
to a temporary ``.OUT.exporting-<pid>`` next to OUT and renamed to OUT only when it is
complete, so OUT is never half-written; an existing OUT is replaced only with
``--overwrite`` (and only after the new export is complete).  OUT is never a source, nor
a folder holding one, even with ``--overwrite`` (``fastsim_recording_format.overlap``).
Staging left by a dead export is removed first (``cli._staging``).  Every source is
validated with its payload CRC-32Cs when it has them (a flipped payload byte is refused,
never exported as a wrong value); a source without them is validated structurally.

    | # | outcome                                                   | output              | exit |
    |---|-----------------------------------------------------------|---------------------|------|
    | 1 | exported                                                  | one summary line    | 0    |
    | 2 | a source is not a valid FSR file, its payload fails its   | one line naming the | 1    |
    |   | CRC, or it cannot be exported to the target (e.g.         | file and the field  |      |
    |   | LeRobot: cameras at different rates); the disk is full    | (ENOSPC: one line)  |      |
    | 3 | a SOURCE does not exist or a folder holds no FSR file; a  | one line            | 2    |
    |   | bad ``--where``/``--include`` or index; every episode was |                     |      |
    |   | left out by the filters;                                  |                     |      |
    |   | OUT exists (without ``--overwrite``); OUT is a source or  | (names the          |      |
    |   | holds one; the target's extra is not installed; a live    | ``pip install``)    |      |
    |   | export's staging is in the way                           |                     |      |
    | 4 | SIGINT / SIGTERM / SIGHUP                                 | one line; staging   | 128+N|
    |   |                                                           | removed             |      |

Never a traceback.  A progress bar (records exported) is drawn on stderr when it is a
terminal.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from fastsim_contract.progress import TerminalProgress
from fastsim_record.cli import _signals
from fastsim_record.cli._staging import clear_stale, publish, remove, staging
from fastsim_recording_format.files import EXPORTING_TAG
from fastsim_recording_format.overlap import OutputOverlapsInput, refuse_overlap

__all__ = ["add_arguments", "run"]

TARGET_NAMES = ("lerobot", "mcap", "rerun")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Declare ``fsr export``'s arguments."""
    parser.add_argument("sources", nargs="+", metavar="SOURCE",
                        help="FSR files, folders of them, URLs, or episode indexes (fsr index)")
    parser.add_argument("--to", required=True, choices=TARGET_NAMES, help="the target format")
    parser.add_argument("-o", "--output", required=True, metavar="OUT",
                        help="output: a LeRobot dataset folder, or an .mcap / .rrd file "
                             "(a folder of them for several sources)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing OUT")
    parser.add_argument("--task", default=None, help="LeRobot: the task text (default: the Run's name)")
    parser.add_argument("--video-codec", choices=("av1", "h264"), default="av1",
                        help="LeRobot: av1 (libsvtav1 with LeRobot's defaults, the default) or h264")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    from fastsim_record.cli._batch import add_executor_arguments
    from fastsim_record.cli._selection import add_filter_arguments

    add_filter_arguments(parser)
    add_executor_arguments(parser)
    parser.epilog = (
        "exit codes: 0 exported; 1 a source is invalid or cannot be exported to the target; "
        "2 a SOURCE is missing, a bad --where/--include, every episode left out, OUT exists (without "
        "--overwrite), or the target's extra is not installed"
    )


def _fail(code: int, message: str) -> int:
    print(message, file=sys.stderr)
    return code


class _Bar(TerminalProgress):
    """A rich progress bar on stderr, or nothing when stderr is not a terminal.  ``full``
    (when given) says whether a native SDK has logged a full disk: the export then stops at
    the next progress step instead of encoding the rest for a sink that cannot write it."""

    def __init__(self, label: str, show: bool, terminal: Any = None,
                 full: Callable[[], bool] | None = None) -> None:
        self._full = full
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

            self.progress = Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                                     console=Console(file=terminal, stderr=terminal is None), transient=True)
            self._task = self.progress.add_task(label, total=None)

    def total(self, records: int) -> None:
        """Set the bar's total."""
        _signals.reinstall()
        if self.progress is not None:
            self.progress.update(self._task, total=records)

    def advance(self, records: int) -> None:
        """Move the bar (and, between records, take SIGINT back from a native SDK)."""
        _signals.reinstall()
        if self._full is not None and self._full():
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if self.progress is not None:
            self.progress.advance(self._task, records)


_NO_SPACE = (b"No space left on device", b"os error 28", b"StorageFull", b"ENOSPC")


@contextlib.contextmanager
def _native_logs(said: list[bytes]) -> Iterator[Any]:
    """The export's file descriptor 2 goes to a temporary file while the exporter runs: a
    native SDK (Foxglove, Rerun) logs each failed write there, not hundreds of lines (with
    ANSI colours) on the terminal.  Yields a stream on the real stderr (for the progress
    bar) and a check whether what was logged so far names a full disk; ``said`` receives the
    first MiB of what was logged."""
    sys.stderr.flush()
    saved = os.dup(2)
    terminal = os.fdopen(os.dup(saved), "w", encoding="utf-8", errors="replace")
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 2)
        checked = [0]

        def full() -> bool:
            size = min(os.fstat(log.fileno()).st_size, 1 << 20)
            if size == checked[0]:
                return False
            checked[0] = size
            return _out_of_space([os.pread(log.fileno(), size, 0)])

        try:
            yield terminal, full
        finally:
            with contextlib.suppress(Exception):
                sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            terminal.close()
            log.seek(0)
            said.append(log.read(1 << 20))


def _quiet_stderr() -> None:
    sys.stderr.flush()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


def _no_free_block(folder: Path) -> bool:
    """Whether the device of ``folder`` has no free block left.  A native SDK writing in the
    background (Rerun) may say that its writes failed only when it is flushed at the end."""
    try:
        st = os.statvfs(folder)
    except OSError:
        return False
    return (st.f_bfree if os.geteuid() == 0 else st.f_bavail) == 0


def _out_of_space(said: list[bytes]) -> bool:
    """Whether the native logs name a full disk (ENOSPC)."""
    return any(mark in text for text in said for mark in _NO_SPACE)


def _failure(exc: Exception, out: Path) -> tuple[int, str]:
    """The exit code and the one line of a failed export (the staging is already gone)."""
    from fastsim_record.export import ExportError, MissingExtra
    from fastsim_recording_format import FormatError
    from fastsim_recording_format.reading import ReadError

    if isinstance(exc, ExportError | ReadError | FormatError):
        return 1, f"fsr export: {exc}"
    if isinstance(exc, MissingExtra):
        return 2, f"fsr export: {exc}"
    if isinstance(exc, OSError):
        if exc.errno == errno.ENOSPC:
            return 1, f"fsr export: no space left on the device of {out} (ENOSPC); nothing was written"
        if isinstance(exc, FileExistsError):
            return 2, f"fsr export: {exc.filename or out} {exc.strerror}"
        return 1, f"fsr export: {exc.strerror or exc}: {exc.filename or out}"
    return 1, f"fsr export: internal error: {type(exc).__name__}: {exc}".splitlines()[0]


def _checked(args: argparse.Namespace, sources: list[Path]) -> int:
    """Validate every source (in this process, or on the executor asked for); name each
    invalid one; the worst exit code."""
    from fastsim_record.export._source import receipt
    from fastsim_recording_format import FormatError

    if args.jobs is not None or args.ray is not None:
        from fastsim_record.batch.jobs import CRC_IF_PRESENT, CheckTask, validate_job
        from fastsim_record.batch.sources import Entry
        from fastsim_record.cli._batch import run_all

        tasks = [CheckTask(Entry(str(p), 0), CRC_IF_PRESENT) for p in sources]
        outcomes = run_all("fsr export", args, validate_job, tasks)
        if isinstance(outcomes, int):
            return outcomes
        for o in outcomes:
            if o.code == 1:
                print(f"invalid: {o.url}: {(o.error or '').removeprefix('invalid: ')}", file=sys.stderr)
            elif o.code:
                print(f"fsr export: cannot read {o.url}: {o.error}", file=sys.stderr)
        return _refused(len(sources), [o.code for o in outcomes])
    codes = []
    for path in sources:
        try:
            receipt(path)
            codes.append(0)
        except FormatError as exc:
            print(f"invalid: {path}: {exc}", file=sys.stderr)
            codes.append(1)
        except OSError as exc:
            print(f"fsr export: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
            codes.append(2)
    return _refused(len(sources), codes)


def _refused(count: int, codes: list[int]) -> int:
    """The worst code; a failure among several sources adds the summary line (one source
    keeps its one line)."""
    from fastsim_record.cli._batch import files

    failed = sum(1 for c in codes if c)
    if failed and count > 1:
        print(f"fsr export: {failed} of {files(count)} failed validation; nothing was exported",
              file=sys.stderr)
    return max(codes, default=0)


def run(args: argparse.Namespace) -> int:
    """Export; see the module's outcome table."""
    from fastsim_record.batch.sources import SourceError, is_url
    from fastsim_record.cli._selection import selected_sources
    from fastsim_recording_format.reading import ReadError

    with contextlib.ExitStack() as stack:
        try:
            local, left_out = selected_sources(args, stack)
        except (SourceError, ReadError) as exc:
            return _fail(2, f"fsr export: {exc}")
        except ImportError as exc:  # an index SOURCE without pyarrow: the line names the extra
            return _fail(2, f"fsr export: {exc}".splitlines()[0])
        except OSError as exc:
            return _fail(2, f"fsr export: {type(exc).__name__}: {exc}".splitlines()[0])
        if not local:
            return _fail(2, f"fsr export: nothing to export: {left_out.line('--include')}")
        note = left_out.line("--include")
        if not is_url(args.output):
            return _export(args, local, args.output, note)
        return _export_to_url(args, local, stack, note)


def _export_to_url(args: argparse.Namespace, local: list[str], stack: contextlib.ExitStack, note: str) -> int:
    """Export into a temporary folder, then put it at the URL (refused if it exists)."""
    import tempfile

    from fastsim_record.batch.sources import SourceError, filesystem, store_error

    try:
        fs, remote = filesystem(args.output)
        if fs.exists(remote) and not args.overwrite:
            return _fail(2, f"fsr export: {args.output} exists; pass --overwrite to replace it")
    except SourceError as exc:
        return _fail(2, f"fsr export: {exc}".splitlines()[0])
    except Exception as exc:  # the store's own errors (credentials, connection)
        return _fail(2, f"fsr export: {store_error(args.output, exc)}")
    folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="fsr-export-"))
    staged = str(Path(folder) / Path(remote).name)
    code = _export(args, local, staged, note)
    if code:
        return code
    try:
        fs.put(staged, remote, recursive=Path(staged).is_dir())
    except Exception as exc:  # the store's own errors (credentials, connection)
        return _fail(2, f"fsr export: upload: {store_error(args.output, exc)}")
    print(f"uploaded the export to {args.output}")
    return 0


def _export(args: argparse.Namespace, raw_sources: list[str], output: str, note: str) -> int:
    """Export local FSR files to a local OUT; ``note`` says what the filters left out."""
    from fastsim_record.batch.sources import is_url
    from fastsim_record.export import ExportOptions, MissingExtra, collect_sources, exporter

    try:
        sources = collect_sources(raw_sources)
    except FileNotFoundError as exc:
        return _fail(2, f"fsr export: {exc}")
    out = Path(output)
    named = [s for s in args.sources if not is_url(s)]  # an index SOURCE is read too
    try:  # never replace or remove a file this command reads, even with --overwrite
        refuse_overlap(out, [*named, *raw_sources, *sources])
    except OutputOverlapsInput as exc:
        return _fail(2, f"fsr export: {exc}")
    if os.path.lexists(out) and not args.overwrite:
        return _fail(2, f"fsr export: {out} exists; pass --overwrite to replace it")
    try:  # missing parent folders are made (after the overlap check: nothing read is in the way)
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return _fail(2, f"fsr export: cannot make the folder {out.parent} for OUT: {exc.strerror or exc}")
    busy = clear_stale(out, (EXPORTING_TAG,))
    if busy:
        return _fail(2, f"fsr export: {busy[0]} belongs to a running export (its PID is alive); "
                        "wait for it, or remove it if that process is not an export")
    try:
        target = exporter(args.to)
    except MissingExtra as exc:
        return _fail(2, f"fsr export: {exc}")
    _signals.reinstall(0.0)  # a native SDK imported above may have taken SIGINT
    code = _checked(args, sources)
    if code:
        return code
    tmp = staging(out, EXPORTING_TAG)
    options = ExportOptions(task=args.task, video_codec=args.video_codec)
    show = not args.quiet and sys.stderr.isatty()
    logs: list[bytes] = []
    try:
        with _native_logs(logs) as (terminal, logged_full), _Bar(
                f"export {args.to}", show, terminal, lambda: logged_full() or _no_free_block(tmp.parent)) as bar:
            summary = target.export(sources, tmp, options, bar)
        if _out_of_space(logs):  # an SDK that logged a failed write and went on
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out))
        publish(tmp, out, args.overwrite)
    except BaseException as exc:
        with _signals.deferred():
            remove(tmp)
        if isinstance(exc, Exception):
            if _out_of_space(logs) and not (isinstance(exc, OSError) and exc.errno == errno.ENOSPC):
                exc = OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out))
            code = _fail(*_failure(exc, out))
            if _signals.installed():  # the console script: an SDK's logs at interpreter exit stay quiet too
                _quiet_stderr()
            return code
        raise
    total = sum(summary.counts.values())
    unit = {"lerobot": "frames", "mcap": "messages", "rerun": "rows"}.get(args.to, "items")
    # an episode is one file; a segment one Runtime generation in it (a LeRobot episode)
    print(f"exported {len(sources)} episode(s) ({summary.segments} segment(s), {total} {unit}) to {out} ({args.to}); "
          f"{note}")
    return 0
