"""Export FSR recordings to the tools users already have: LeRobot, MCAP (Foxglove), Rerun.

Each target is an adapter behind the :class:`Exporter` port, in its own module and its
own optional extra; :func:`exporter` is the one place that composes them.  Exporters
read only through the reading API.  See the README's "Exporting" section.
"""

from __future__ import annotations

import importlib

from fastsim_record.export._port import (
    Exporter,
    ExportError,
    ExportOptions,
    ExportSummary,
    MissingExtra,
    NoProgress,
    Progress,
)
from fastsim_record.export._source import collect_sources

__all__ = [
    "TARGETS",
    "exporter",
    "collect_sources",
    "Exporter",
    "ExportOptions",
    "ExportSummary",
    "ExportError",
    "MissingExtra",
    "Progress",
    "NoProgress",
]

#: --to value -> (adapter module, class, extra, the module the extra brings)
TARGETS: dict[str, tuple[str, str, str, str]] = {
    "lerobot": ("fastsim_record.export.to_lerobot", "LeRobotExporter", "lerobot", "pyarrow"),
    "mcap": ("fastsim_record.export.to_mcap", "McapExporter", "mcap", "foxglove"),
    "rerun": ("fastsim_record.export.to_rerun", "RerunExporter", "rerun", "rerun"),
}

_EXTRA_MODULES: dict[str, tuple[tuple[str, str], ...]] = {
    "lerobot": (("pyarrow", "pyarrow"), ("av", "av")),
    "mcap": (("foxglove", "foxglove-sdk"),),
    "rerun": (("rerun", "rerun-sdk"),),
}


def exporter(target: str) -> Exporter:
    """The exporter for ``target``; :class:`MissingExtra` (one line naming the pip install)
    when its extra is not installed, ``KeyError`` for an unknown target."""
    module_name, cls, extra, _ = TARGETS[target]
    for module, dist in _EXTRA_MODULES[extra]:
        try:
            importlib.import_module(module)
        except ImportError:
            raise MissingExtra(target, extra, dist) from None
    made: Exporter = getattr(importlib.import_module(module_name), cls)()
    return made
