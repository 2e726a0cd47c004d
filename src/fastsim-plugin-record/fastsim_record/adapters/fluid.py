"""``fluid.emissions`` records from Core's emission batches (the plugin side of the codec).

Core publishes one :class:`~fastsim_contract.render_services.FluidEmissionBatch` per tick
that accepted (or refused) particles, only when it exposes the ``fluid.audit`` service.
The record rules 1-4 and the JSON document are the format's,
:mod:`fastsim_recording_format.codecs.fluid`; this adapter accepts the batch value (or its
mapping form) and raises the plugin's :class:`FluidPayloadError` (a ``RecordError``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs

from fastsim_contract.render_services import FluidEmissionBatch
from fastsim_record.errors import RecordError
from fastsim_recording_format.codecs import fluid as fmt
from fastsim_recording_format.codecs.fluid import (
    SCHEMA,
    STREAM_CODEC,
    STREAM_NAME,
    decode_fluid_batch,
)

__all__ = [
    "SCHEMA",
    "STREAM_CODEC",
    "STREAM_NAME",
    "FluidEmissionEncoder",
    "FluidPayloadError",
    "decode_fluid_batch",
]

_FIELDS: Final = frozenset(f.name for f in attrs.fields(FluidEmissionBatch))


class FluidPayloadError(fmt.FluidPayloadError, RecordError):
    """The format's fluid payload error, raised on the capture side (a ``RecordError``)."""


def _fields(payload: object) -> Mapping[str, Any]:
    if isinstance(payload, FluidEmissionBatch):
        return attrs.asdict(payload, recurse=False)
    if not isinstance(payload, Mapping):
        fmt.fail(f"expected a fluid emission batch, got {type(payload).__name__}")
    keys = set(payload)
    if keys != _FIELDS:
        fmt.fail(
            f"batch keys differ: missing {sorted(_FIELDS - keys)}, unexpected {sorted(keys - _FIELDS)}"
        )
    return {str(k): v for k, v in payload.items()}


@attrs.define(eq=False)
class FluidEmissionEncoder:
    """Encodes emission batches (rules 1-4); runs only in the writer worker."""

    codec: Mapping[str, object] = STREAM_CODEC
    _sequence: fmt.EmissionSequence = attrs.field(init=False, factory=fmt.EmissionSequence)

    def encode(self, payload: object) -> bytes:
        """One :class:`FluidEmissionBatch` (or its mapping form) -> canonical JSON bytes."""
        try:
            return self._sequence.encode(_fields(payload))
        except fmt.FluidPayloadError as exc:
            raise FluidPayloadError(exc.reason, **exc.fields) from None
