"""Finding the Gymnasium recorder of an installed FastSim host (``fastsim.hosts``: ``gymnasium``).

The plugin never imports a host: as ``fsr record`` finds ``fastsim.hosts`` entry points,
``fastsim_record.gym`` loads the entry point named ``gymnasium``.  Its object has
``Options`` (the recording options class) and ``open(...)`` (a recording with
``begin``/``step``/``end``/``fail``/``close``); ``fastsim_embedded.gymnasium_host.recorder``
is the embedded host's.
"""

from __future__ import annotations

from importlib.metadata import entry_points
from typing import Any

from fastsim_record.errors import RecordError

__all__ = ["ENTRY", "GymWrapError", "gym_host"]

HOSTS_GROUP = "fastsim.hosts"
ENTRY = "gymnasium"


class GymWrapError(RecordError, ValueError):
    """The env cannot be recorded as asked (one line: the space path, option or file)."""


def gym_host() -> Any:
    """The installed host's Gymnasium recorder; ``GymWrapError`` when none loads."""
    found = [ep for ep in entry_points(group=HOSTS_GROUP) if ep.name == ENTRY]
    if not found:
        raise GymWrapError(
            f"no FastSim host with Gymnasium support is installed (entry point {ENTRY!r} in group {HOSTS_GROUP}); "
            "pip install 'fastsim-plugin-record[gym]'"
        )
    try:
        return found[0].load()
    except Exception as exc:  # a broken host install is one line, not a traceback
        raise GymWrapError(f"{found[0].value}: {type(exc).__name__}: {exc}".splitlines()[0]) from None
