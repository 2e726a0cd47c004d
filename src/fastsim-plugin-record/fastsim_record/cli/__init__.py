"""The ``fsr`` command: one dispatcher, one module per subcommand.

Each subcommand lives in ``fastsim_record.cli.<name>`` and exposes
``add_arguments(parser)`` and ``run(args) -> int``.  Exit codes are shared:
0 success, 1 invalid input or failed run, 2 usage or config error (including an
output refused because it exists), 3 partial: a recovery that dropped a torn tail, or
a recording stopped by a signal and committed with ``completion: stopped``; 128+N an
offline command stopped by signal N (130 SIGINT, 143 SIGTERM), its staging removed
(``cli._signals``).  No subcommand lets a traceback reach the user.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import NoReturn

from fastsim_record.cli import _signals

__all__ = ["COMMANDS", "main"]

#: subcommand name (its module: ``fastsim_record.cli.<name>``) -> one-line help
COMMANDS: dict[str, str] = {
    "info": "summarise an FSR file",
    "validate": "validate an FSR file and print its receipt",
    "cat": "print records as JSON lines",
    "recover": "recover an unsealed .incomplete file",
    "synth": "write a synthetic FSR file",
    "check": "compile a Run and print the effective Record config",
    "channels": "list the channels a Run's scene declares",
    "record": "record a Run on the embedded host",
    "frames": "write a camera's decoded frames as PNG files",
    "replay": "render a recorded render.state into a new FSR",
    "export": "export FSR files to LeRobot, MCAP (Foxglove) or Rerun",
    "index": "write the episode index (Parquet) of many FSR files",
    "upload": "upload committed, validated FSR files to object storage",
}


def _load(name: str) -> ModuleType | None:
    module = f"fastsim_record.cli.{name}"
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            return None
        raise


class _Parser(argparse.ArgumentParser):
    """A bad option is one line naming it (``fsr record: argument --duration: ...``),
    exit 2, without the usage block (``--help`` still prints it)."""

    def error(self, message: str) -> NoReturn:
        """Print one line and exit 2."""
        self.exit(2, f"{self.prog}: {message}\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``fsr`` console script."""
    if argv is None:  # the console script owns the process: catch stop signals before any heavy import
        _signals.install()
    try:
        code = _main(argv)
    except _signals.Interrupted as exc:  # before a command ran, or from one that let it through
        exc.handled()
        print(f"fsr: interrupted by {exc.name}", file=sys.stderr)
        code = exc.exit_code
    if argv is None:
        _leave(code)
    return code


def _leave(code: int) -> NoReturn:
    """End the console script with ``code`` once its outcome is decided, as the interpreter
    would (stdio flushed, non-daemon threads joined, ``atexit`` handlers run: Rerun's flush,
    logging's), but without the native libraries' static destructors: Arrow's thread pools
    can abort the process there ("terminate called without an active exception",
    apache/arrow#34314), which turned a written index into exit -6 in CI."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    shutdown = getattr(threading, "_shutdown", None)  # what Py_FinalizeEx runs first
    if shutdown is not None:
        shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _main(argv: Sequence[str] | None) -> int:
    parser = _Parser(prog="fsr", description="FSR 1.2 recordings: record, inspect, validate.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    modules: dict[str, ModuleType] = {}
    for name, help_text in COMMANDS.items():
        module = _load(name)
        if module is None:
            continue
        modules[name] = module
        module.add_arguments(sub.add_parser(name, help=help_text, description=help_text))
    args = parser.parse_args(argv)
    args.owns_process = argv is None  # the console script: a command may keep its signal handlers
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    try:
        _signals.check()  # a signal dropped while the imports ran (row 6 of _signals)
        code: int = modules[args.command].run(args)
    except _signals.Interrupted as exc:
        exc.handled()
        print(f"fsr {args.command}: interrupted by {exc.name}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print(f"fsr {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `fsr info FILE | head`: the reader left; no traceback
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush stays quiet
        return 141
    if args.owns_process:
        _ignore_stop_signals()
    return code


def _ignore_stop_signals() -> None:
    """The command is done and its outcome decided: a late SIGINT/SIGTERM/SIGHUP must not
    kill the process while the interpreter shuts down (CPython resets Python-level
    handlers to the default there, so a second Ctrl-C would end it with -SIGINT although
    the file is committed).  ``SIG_IGN`` is left alone by that reset."""
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        with contextlib.suppress(ValueError, OSError, AttributeError):  # not the main thread
            signal.signal(getattr(signal, name), signal.SIG_IGN)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
