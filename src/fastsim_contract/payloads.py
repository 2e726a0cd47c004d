"""Immutable envelope payloads and their producer-computed portable byte size (Core's side
of the contract; the embedded host and the fake Core both use it).

Event-like payloads (lifecycle, plugin events, control) are frozen into
:class:`FrozenDict` (a read-only ``dict`` subclass, so ``json.dumps`` still accepts it)
with tuples for sequences.  Their *portable size* is the byte length of the canonical
JSON text (sorted keys, compact separators, UTF-8): a fact Core computes once, on the
producer side, so Record can admit small events without charging the 1 MiB ceiling.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NoReturn

from fastsim_recording_format.encoding import canonical_json

__all__ = ["FrozenDict", "freeze", "portable_size"]


class FrozenDict(dict[str, Any]):
    """A read-only dict: every mutator raises ``TypeError``."""

    def _refuse(self, *_: object, **__: object) -> NoReturn:
        raise TypeError("envelope payloads are immutable")

    __setitem__ = _refuse
    __delitem__ = _refuse
    clear = _refuse
    pop = _refuse
    popitem = _refuse
    setdefault = _refuse
    update = _refuse
    __ior__ = _refuse

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=lambda kv: kv[0])))


_SCALARS = frozenset({str, int, float, bool, type(None)})


def freeze(value: object) -> Any:
    """A deep immutable copy of JSON-like data (mappings, lists, scalars)."""
    if type(value) in _SCALARS:
        return value
    if isinstance(value, Mapping):
        return FrozenDict(
            {str(k): v if type(v) in _SCALARS else freeze(v) for k, v in value.items()}
        )
    if isinstance(value, list | tuple):
        return tuple(freeze(v) for v in value)
    return value


def portable_size(payload: object) -> int:
    """Byte length of the canonical JSON encoding of ``payload``
    (``fastsim_recording_format.encoding.canonical_json``, the one every layer uses)."""
    return len(canonical_json(payload))
