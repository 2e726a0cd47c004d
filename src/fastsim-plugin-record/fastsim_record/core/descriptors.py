"""Descriptor drift: a stream's shape, dtype or codec description may never change.

| #  | rule                                                                              |
|----|-----------------------------------------------------------------------------------|
| D1 | the first descriptor seen for a stream is fixed for the whole recording           |
| D2 | any later, different descriptor is drift and fails closed (latched)               |

A descriptor is any hashable value the caller builds (for example
``("uint8", (480, 640, 3), "jpeg/q92/444")``); the core compares it only for equality.
"""

from __future__ import annotations

from collections.abc import Hashable

import attrs

__all__ = ["DescriptorDrift", "DescriptorTracker"]


@attrs.frozen
class DescriptorDrift:
    """Rule D2: ``stream`` changed its descriptor mid-stream."""

    stream: str
    expected: Hashable
    actual: Hashable
    reason: str


@attrs.define(eq=False, on_setattr=attrs.setters.NO_OP)
class DescriptorTracker:
    """The fixed descriptor of every stream seen (rules D1, D2)."""

    _fixed: dict[str, Hashable] = attrs.field(init=False, factory=dict)
    _drifts: list[DescriptorDrift] = attrs.field(init=False, factory=list)

    def observe(self, stream: str, descriptor: Hashable) -> DescriptorDrift | None:
        """Fix or check ``stream``'s descriptor; a ``DescriptorDrift`` when it changed."""
        fixed = self._fixed.setdefault(stream, descriptor)
        if fixed == descriptor:
            return None
        drift = DescriptorDrift(
            stream, fixed, descriptor, f"stream {stream!r} descriptor changed from {fixed!r} to {descriptor!r}"
        )
        self._drifts.append(drift)
        return drift

    @property
    def drifts(self) -> tuple[DescriptorDrift, ...]:
        """Every drift latched so far."""
        return tuple(self._drifts)
