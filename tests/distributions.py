"""The repository's three distributions, as their own ``pyproject.toml`` files describe them."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

#: distribution name -> its folder under src/
FOLDERS = {
    "fastsim-recording-format": ROOT / "src" / "fastsim-recording-format",
    "fastsim-embedded": ROOT / "src" / "fastsim-embedded",
    "fastsim-plugin-record": ROOT / "src" / "fastsim-plugin-record",
}

#: distribution name -> the top-level packages it ships
PACKAGES = {
    "fastsim-recording-format": ("fastsim_recording_format",),
    "fastsim-embedded": ("fastsim_contract", "fastsim_embedded"),
    "fastsim-plugin-record": ("fastsim_record",),
}


def project(name: str) -> dict[str, Any]:
    """The ``[project]`` table of one distribution's pyproject.toml."""
    table: dict[str, Any] = tomllib.loads((FOLDERS[name] / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    return table


def source_path() -> str:
    """A PYTHONPATH that imports every package from the checkout (the three folders)."""
    return os.pathsep.join(str(folder) for folder in FOLDERS.values())
