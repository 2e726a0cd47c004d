"""Deprecated import paths kept for one release: a package that re-exports another."""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Iterable
from typing import Any

__all__ = ["alias_package"]


def alias_package(old: str, new: str, submodules: Iterable[str]) -> dict[str, Any]:
    """Warn that ``old`` is deprecated, map ``old.<sub>`` to ``new.<sub>`` in
    ``sys.modules`` and return ``new``'s public names (for ``globals().update``)."""
    warnings.warn(f"{old} is deprecated; import {new} instead", DeprecationWarning, stacklevel=3)
    for name in submodules:
        sys.modules[f"{old}.{name}"] = importlib.import_module(f"{new}.{name}")
    target = importlib.import_module(new)
    return {name: getattr(target, name) for name in target.__all__}
