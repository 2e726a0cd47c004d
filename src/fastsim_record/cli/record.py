"""``fsr record``: delegate to the installed FastSim host (``fastsim.hosts`` entry point).

The plugin never imports a host; the embedded host registers itself as
``fastsim.hosts`` / ``embedded`` (any other installed host serves when it is absent).
Without any host installed the command explains that and exits 2.  Exit codes are the
host's: 0 committed, 1 failed, 2 config.
"""

from __future__ import annotations

from fastsim_record.cli._host import HOSTS_GROUP, HostCommand

__all__ = ["add_arguments", "run"]

PREFERRED = "embedded"

_COMMAND = HostCommand(
    command="record",
    entry=PREFERRED,
    missing=f"no FastSim host is installed (entry point group {HOSTS_GROUP})",
    placeholders=(("run", "RUN.yaml"),),
    any_host=True,
)

add_arguments = _COMMAND.add_arguments
run = _COMMAND.run
