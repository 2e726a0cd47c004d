"""``fsr replay SOURCE.fsr RUN.yaml``: delegate to the host's render Replay.

The plugin never imports a host: the embedded host registers its Replay command as the
``fastsim.hosts`` entry point ``embedded-replay``.  Without it the command explains that
and exits 2.  Exit codes are the host's: 0 committed, 1 failed, 2 invalid.
"""

from __future__ import annotations

from fastsim_record.cli._host import HOSTS_GROUP, HostCommand

__all__ = ["add_arguments", "run"]

ENTRY = "embedded-replay"

_MISSING = f"no FastSim host with render Replay is installed ({HOSTS_GROUP} / {ENTRY})"
_COMMAND = HostCommand("replay", ENTRY, _MISSING, (("source", "SOURCE.fsr"), ("run", "RUN.yaml")))
add_arguments, run = _COMMAND.add_arguments, _COMMAND.run
