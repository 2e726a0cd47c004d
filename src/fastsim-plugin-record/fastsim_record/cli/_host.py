"""Delegation of an ``fsr`` subcommand to an installed FastSim host (``fastsim.hosts``).

The plugin never imports a host: a host registers each command it serves as an entry
point in the ``fastsim.hosts`` group, and ``fsr record`` / ``fsr replay`` hand over to it.

    | # | entry point                               | add_arguments         | run                          |
    |---|-------------------------------------------|-----------------------|------------------------------|
    | 1 | ``entry`` (else any host, if ``any_host``)| the host's            | the host's exit code         |
    | 2 | none installed                            | placeholder arguments | one line ``missing``, exit 2 |
    | 3 | installed but fails to load               | placeholder arguments | one line naming the error, 2 |
"""

from __future__ import annotations

import argparse
import sys
from importlib.metadata import entry_points
from typing import Any

import attrs

from fastsim_record.cli import _signals

__all__ = ["HOSTS_GROUP", "HostCommand", "load_host"]

HOSTS_GROUP = "fastsim.hosts"


@attrs.frozen
class HostCommand:
    """One ``fsr`` subcommand served by a host's ``fastsim.hosts`` entry point."""

    command: str
    entry: str
    missing: str
    placeholders: tuple[tuple[str, str], ...]
    any_host: bool = False

    def _load(self) -> tuple[Any | None, str]:
        found = {ep.name: ep for ep in entry_points(group=HOSTS_GROUP)}
        ep = found.get(self.entry)
        if ep is None and self.any_host:
            ep = next(iter(found.values()), None)
        if ep is None:
            return None, self.missing
        try:
            return ep.load(), ""
        except Exception as exc:  # a broken host install is one line, not a traceback
            return None, f"{ep.value}: {type(exc).__name__}: {exc}".splitlines()[0]

    def host(self) -> tuple[Any | None, str]:
        """The loaded host object, or ``None`` and why not."""
        return self._load()

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """The host's arguments, or the placeholder positionals when no host loads."""
        host, _ = self._load()
        if host is None:
            for dest, metavar in self.placeholders:
                parser.add_argument(dest, metavar=metavar)
            return
        host.add_arguments(parser)

    def run(self, args: argparse.Namespace) -> int:
        """Run on the host (its exit code), or say why there is none and exit 2."""
        host, why = self._load()
        if host is None:
            print(f"fsr {self.command}: {why}", file=sys.stderr)
            return 2
        _signals.check()  # a signal dropped while the host was imported: before it takes over
        code: int = host.run(args)
        return code


def load_host(entry: str = "embedded") -> tuple[Any | None, str]:
    """The ``fastsim.hosts`` entry ``entry`` (else any host), or ``None`` and why not."""
    return HostCommand(
        command="", entry=entry, missing=f"no FastSim host is installed (entry point group {HOSTS_GROUP})",
        placeholders=(), any_host=True,
    ).host()
