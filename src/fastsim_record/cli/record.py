"""``fsr record``: delegate to the installed FastSim host (``fastsim.hosts`` entry point).

The plugin never imports a host; the embedded host registers itself as
``fastsim.hosts`` / ``embedded``.  Without any host installed the command explains that
and exits 2.
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import entry_points
from typing import Any

__all__ = ["add_arguments", "run"]

HOSTS_GROUP = "fastsim.hosts"
PREFERRED = "embedded"


_BROKEN: list[str] = []


def _host() -> Any | None:
    found = {ep.name: ep for ep in entry_points(group=HOSTS_GROUP)}
    ep = found.get(PREFERRED) or next(iter(found.values()), None)
    if ep is None:
        return None
    try:
        return ep.load()
    except Exception as exc:  # a broken host install is one line, not a traceback
        _BROKEN.append(f"{ep.value}: {type(exc).__name__}: {exc}".splitlines()[0])
        return None


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The host's options (or just the Run file when no host is installed)."""
    host = _host()
    if host is None:
        parser.add_argument("run", metavar="RUN.yaml")
        return
    host.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    """Record on the host; exit codes are the host's (0 committed, 1 failed, 2 config)."""
    host = _host()
    if host is None:
        why = _BROKEN[0] if _BROKEN else f"no FastSim host is installed (entry point group {HOSTS_GROUP})"
        print(f"fsr record: {why}", file=sys.stderr)
        return 2
    code: int = host.run(args)
    return code
