"""The exporter port: what ``fsr export`` asks of every target format.

An exporter is an adapter behind :class:`Exporter`.  It opens recordings with the
reading API (``fastsim_record.open``: info, cameras, generations) and reads their records
through ``fastsim_record.export._stream``, which serves what that API does not yet: a
frame's recorded bytes, the geometry stream, and every stream one record at a time in
bounded memory.  It writes one output path and reports progress.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Protocol, runtime_checkable

import attrs

__all__ = [
    "ExportError",
    "ExportOptions",
    "ExportSummary",
    "Exporter",
    "MissingExtra",
    "Progress",
    "load_extra",
]


class ExportError(Exception):
    """A recording that cannot be exported: one line naming the file and the field."""


class MissingExtra(ImportError):
    """The target's optional dependencies are not installed: one line naming the pip install."""

    def __init__(self, target: str, extra: str, module: str) -> None:
        super().__init__(
            f"exporting to {target} needs {module}: pip install 'fastsim-plugin-record[{extra}]'"
        )


def load_extra(target: str, extra: str, *modules: str, package: str | None = None) -> list[ModuleType]:
    """Import a target's optional ``modules``, or raise :class:`MissingExtra` naming
    ``package`` (default: the module that is missing)."""
    try:
        return [importlib.import_module(name) for name in modules]
    except ImportError as exc:
        raise MissingExtra(target, extra, package or exc.name or " and ".join(modules)) from None


@attrs.frozen
class ExportOptions:
    """Options every exporter accepts; each ignores what does not apply to it."""

    task: str | None = None  # LeRobot: the task text (default: the Run's name)
    video_codec: str = "av1"  # LeRobot: av1 (libsvtav1, LeRobot's defaults) or h264


@attrs.frozen
class ExportSummary:
    """What an export wrote: the output, counts per kind of item, and the segments written."""

    output: Path
    segments: int
    counts: dict[str, int] = attrs.field(factory=dict)


class Progress(Protocol):
    """Where an exporter reports how far it got (``fsr export`` draws it as a bar)."""

    def total(self, records: int) -> None:
        """Declare how many records the export will go through."""

    def advance(self, records: int) -> None:
        """``records`` more records were exported."""


class NoProgress:
    """A :class:`Progress` that shows nothing (for library callers and tests)."""

    def total(self, records: int) -> None:
        """Ignore the total."""

    def advance(self, records: int) -> None:
        """Ignore progress."""


@runtime_checkable
class Exporter(Protocol):
    """One target format.  ``export`` writes ``out`` (a file, or a directory for LeRobot
    and for several sources; it does not exist yet) from ``sources`` (FSR files, in
    order) and raises
    :class:`ExportError` with one line for a recording it cannot export."""

    name: str  # the --to value
    extra: str  # the optional extra holding its dependencies

    def export(
        self,
        sources: Sequence[Path],
        out: Path,
        options: ExportOptions,
        progress: Progress,
    ) -> ExportSummary:
        """Write ``out`` from ``sources``."""
        ...
