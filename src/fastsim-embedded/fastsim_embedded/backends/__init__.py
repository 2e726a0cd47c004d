"""Backends by name.  ``synthetic`` is built in; ``mujoco`` is imported only when chosen.

Entries are either factories or ``"module:attribute"`` strings resolved on first use, so
choosing ``synthetic`` never imports a simulator SDK.
"""

from __future__ import annotations

import difflib
import importlib

from fastsim_embedded.backends.base import Backend, BackendFactory, BackendSpec

__all__ = ["REAL_CORE_BACKENDS", "UnknownBackend", "backend_names", "create_backend", "register_backend"]

_REGISTRY: dict[str, BackendFactory | str] = {
    "synthetic": "fastsim_embedded.backends.synthetic:create_backend",
    "mujoco": "fastsim_embedded.backends.mujoco_backend:create_backend",
    "synthetic+cameras": "fastsim_embedded.backends.synthetic_cameras:create_backend",
    "mujoco-shapes": "fastsim_embedded.backends.mujoco_shapes:create_backend",
    "moderngl": "fastsim_embedded.backends.gl_replay.backend:create_backend",  # only under fsr replay --renderer
    "gymnasium": "fastsim_embedded.backends.gymnasium_scene:create_backend",  # Replay of fastsim_record.gym files
}


#: Backends of the real FastSim Core that this embedded host does not have (the plugin
#: README's own minimal Run uses ``isaaclab``): naming one says so instead of "unknown".
REAL_CORE_BACKENDS = frozenset({"isaaclab"})


class UnknownBackend(LookupError):
    """No backend is registered under the requested name."""


def register_backend(name: str, factory: BackendFactory | str) -> None:
    """Register (or replace) a backend factory under ``name``."""
    _REGISTRY[name] = factory


def backend_names() -> tuple[str, ...]:
    """The registered backend names, sorted."""
    return tuple(sorted(_REGISTRY))


def create_backend(name: str, spec: BackendSpec) -> Backend:
    """Build the backend registered as ``name`` for one Run."""
    try:
        entry = _REGISTRY[name]
    except KeyError:
        known = ", ".join(backend_names())
        if name in REAL_CORE_BACKENDS:
            raise UnknownBackend(
                f"backend: {name!r} needs the real FastSim Core; this embedded host has the "
                f"backends {known}"
            ) from None
        close = difflib.get_close_matches(name, backend_names(), n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise UnknownBackend(f"backend: unknown backend {name!r} (known: {known}){hint}") from None
    if isinstance(entry, str):
        module_name, _, attribute = entry.partition(":")
        factory: BackendFactory = getattr(importlib.import_module(module_name), attribute)
    else:
        factory = entry
    return factory(spec)
