"""``fluid.emissions`` records: compact accepted-emission batches as canonical JSON.

Core publishes one :class:`~fastsim_contract.render_services.FluidEmissionBatch` per tick
that accepted (or refused) particles, only when it exposes the ``fluid.audit`` service.
The writer worker encodes each batch exactly once; the capture path never builds JSON.

Record rules (:class:`FluidEmissionEncoder`):

    | # | rule                                                                          |
    |---|-------------------------------------------------------------------------------|
    | 1 | the payload is canonical JSON with ``schema: fastsim-fluid-emission-batch/1`` |
    | 2 | counts are non-negative integers; origin/velocity are 3 finite numbers        |
    | 3 | per emitter, ``batch`` numbers strictly increase                              |
    | 4 | per emitter and generation-free, ``first_particle`` equals the previous       |
    |   | batch's ``first_particle + accepted`` unless the emitter was reset (it is 0)  |
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any, Final, NoReturn

import attrs

from fastsim_contract.render_services import FluidEmissionBatch
from fastsim_record.errors import RecordError

__all__ = [
    "SCHEMA",
    "STREAM_CODEC",
    "STREAM_NAME",
    "FluidEmissionEncoder",
    "FluidPayloadError",
    "decode_fluid_batch",
]

SCHEMA: Final = "fastsim-fluid-emission-batch/1"
STREAM_NAME: Final = "fluid.emissions"
MAX_PAYLOAD_BYTES: Final = 64 * 1024

STREAM_CODEC: Final[Mapping[str, object]] = {
    "payload_codec": "json",
    "media_type": "application/json",
    "canonical": True,
    "schema": SCHEMA,
    "service": "fluid.audit",
}


class FluidPayloadError(RecordError):
    """A fluid emission batch breaks the record rules."""


def _fail(message: str) -> NoReturn:
    raise FluidPayloadError(f"fluid.emissions: {message}")


def _count(value: object, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        _fail(f"{name} must be a non-negative integer, got {value!r}")
    return value


def _vec3(value: object, name: str) -> list[float]:
    try:
        out = [float(v) for v in value]  # type: ignore[attr-defined]
    except (TypeError, ValueError):
        _fail(f"{name} must be 3 numbers, got {value!r}")
    if len(out) != 3 or not all(math.isfinite(v) for v in out):
        _fail(f"{name} must be 3 finite numbers, got {value!r}")
    return out


def _document(batch: FluidEmissionBatch) -> dict[str, object]:
    spread = float(batch.spread)
    if not math.isfinite(spread) or spread < 0:
        _fail(f"spread must be a finite number >= 0, got {batch.spread!r}")
    return {
        "schema": SCHEMA,
        "emitter": str(batch.emitter),
        "batch": _count(batch.batch, "batch"),
        "first_particle": _count(batch.first_particle, "first_particle"),
        "accepted": _count(batch.accepted, "accepted"),
        "rejected": _count(batch.rejected, "rejected"),
        "origin": _vec3(batch.origin, "origin"),
        "velocity": _vec3(batch.velocity, "velocity"),
        "spread": spread,
    }


_FIELDS: Final = frozenset(f.name for f in attrs.fields(FluidEmissionBatch))


def _batch(payload: object) -> FluidEmissionBatch:
    if isinstance(payload, FluidEmissionBatch):
        return payload
    if not isinstance(payload, Mapping):
        _fail(f"expected a fluid emission batch, got {type(payload).__name__}")
    keys = set(payload)
    if keys != _FIELDS:
        _fail(f"batch keys differ: missing {sorted(_FIELDS - keys)}, unexpected {sorted(keys - _FIELDS)}")
    return FluidEmissionBatch(**{str(k): v for k, v in payload.items()})


def _canonical(value: object) -> bytes:
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    ).encode()


@attrs.define(eq=False)
class FluidEmissionEncoder:
    """Encodes emission batches (rules 1-4); runs only in the writer worker."""

    codec: Mapping[str, object] = STREAM_CODEC
    _last: dict[str, tuple[int, int]] = attrs.field(init=False, factory=dict)

    def encode(self, payload: object) -> bytes:
        """One :class:`FluidEmissionBatch` (or its mapping form) -> canonical JSON bytes."""
        payload = _batch(payload)
        document = _document(payload)
        previous = self._last.get(payload.emitter)
        if previous is not None:
            batch, next_particle = previous
            if payload.batch <= batch:
                _fail(f"emitter {payload.emitter!r}: batch {payload.batch} after {batch} (rule 3)")
            if payload.first_particle not in (next_particle, 0):
                _fail(
                    f"emitter {payload.emitter!r}: first_particle {payload.first_particle}, "
                    f"expected {next_particle} (rule 4)"
                )
        self._last[payload.emitter] = (payload.batch, payload.first_particle + payload.accepted)
        return _canonical(document)



def decode_fluid_batch(payload: bytes | memoryview) -> dict[str, Any]:
    """Parse one record back into its document (bounded, schema-checked)."""
    if len(payload) > MAX_PAYLOAD_BYTES:
        _fail(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD_BYTES}")
    try:
        document = json.loads(bytes(payload))
    except (ValueError, RecursionError) as exc:
        _fail(f"payload is not JSON: {exc}")
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        _fail(f"payload schema must be {SCHEMA!r}")
    return document
