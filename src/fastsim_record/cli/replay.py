"""``fsr replay SOURCE.fsr RUN.yaml``: delegate to the host's render Replay.

The plugin never imports a host: the embedded host registers its Replay command as the
``fastsim.hosts`` entry point ``embedded-replay``.  Without it the command explains that
and exits 2.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import entry_points
from typing import Any

__all__ = ["add_arguments", "run"]

HOSTS_GROUP = "fastsim.hosts"
ENTRY = "embedded-replay"

_BROKEN: list[str] = []


def _host() -> Any | None:
    ep = next((e for e in entry_points(group=HOSTS_GROUP) if e.name == ENTRY), None)
    if ep is None:
        return None
    try:
        return ep.load()
    except Exception as exc:  # a broken host install is one line, not a traceback
        _BROKEN.append(f"{ep.value}: {type(exc).__name__}: {exc}".splitlines()[0])
        return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The host's options (or just SOURCE and RUN when no host is installed)."""
    host = _host()
    if host is None:
        parser.add_argument("source", metavar="SOURCE.fsr")
        parser.add_argument("run", metavar="RUN.yaml")
        return
    host.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Replay on the host; exit codes are the host's (0 committed, 1 failed, 2 invalid)."""
    host = _host()
    if host is None:
        why = _BROKEN[0] if _BROKEN else f"no FastSim host with render Replay is installed ({HOSTS_GROUP} / {ENTRY})"
        print(f"fsr replay: {why}", file=sys.stderr)
        return 2
    code: int = host.run(args)
    return code
