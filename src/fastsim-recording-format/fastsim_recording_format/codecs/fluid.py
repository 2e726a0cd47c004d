"""``fluid.emissions`` records: compact accepted-emission batches as canonical JSON.

Core publishes one :class:`~fastsim_contract.render_services.FluidEmissionBatch` per tick
that accepted (or refused) particles, only when it exposes the ``fluid.audit`` service.
The writer worker encodes each batch exactly once; the capture path never builds JSON.
This module is the byte level (plain values in, canonical JSON out, bounded decoding);
the plugin's ``fastsim_record.adapters.fluid`` hands it Core's batches.

Record rules (:class:`EmissionSequence`):

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
from typing import Any, Final

import attrs

from fastsim_recording_format.codecs._common import failing, finite_floats
from fastsim_recording_format.encoding import canonical_json
from fastsim_recording_format.errors import FluidPayloadError

__all__ = [
    "BATCH_FIELDS",
    "MAX_PAYLOAD_BYTES",
    "SCHEMA",
    "STREAM_CODEC",
    "STREAM_NAME",
    "EmissionSequence",
    "FluidPayloadError",
    "batch_document",
    "decode_fluid_batch",
]

SCHEMA: Final = "fastsim-fluid-emission-batch/1"
STREAM_NAME: Final = "fluid.emissions"
MAX_PAYLOAD_BYTES: Final = 64 * 1024
#: the fields of one batch, as Core's ``FluidEmissionBatch`` has them
BATCH_FIELDS: Final = frozenset(
    {"emitter", "batch", "first_particle", "accepted", "rejected", "origin", "velocity", "spread"}
)

STREAM_CODEC: Final[Mapping[str, object]] = {
    "payload_codec": "json",
    "media_type": "application/json",
    "canonical": True,
    "schema": SCHEMA,
    "service": "fluid.audit",
}


#: raise one :class:`FluidPayloadError` line
fail = failing(FluidPayloadError, "fluid.emissions")


def _count(value: object, name: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        fail(f"{name} must be a non-negative integer, got {value!r}")
    return value


def _vec3(value: object, name: str) -> list[float]:
    try:
        return finite_floats(value, 3)
    except ValueError as exc:
        fail(f"{name} must be {exc}, got {value!r}")


def batch_document(batch: Mapping[str, Any]) -> dict[str, object]:
    """The record document of one batch's fields (rules 1-2)."""
    spread = float(batch["spread"])
    if not math.isfinite(spread) or spread < 0:
        fail(f"spread must be a finite number >= 0, got {batch['spread']!r}")
    return {
        "schema": SCHEMA,
        "emitter": str(batch["emitter"]),
        "batch": _count(batch["batch"], "batch"),
        "first_particle": _count(batch["first_particle"], "first_particle"),
        "accepted": _count(batch["accepted"], "accepted"),
        "rejected": _count(batch["rejected"], "rejected"),
        "origin": _vec3(batch["origin"], "origin"),
        "velocity": _vec3(batch["velocity"], "velocity"),
        "spread": spread,
    }


@attrs.define(eq=False)
class EmissionSequence:
    """Encodes one stream's batches (rules 1-4): remembers each emitter's last batch."""

    _last: dict[str, tuple[int, int]] = attrs.field(init=False, factory=dict)

    def encode(self, batch: Mapping[str, Any]) -> bytes:
        """One batch's fields -> canonical JSON bytes, in order per emitter (rules 3-4)."""
        document = batch_document(batch)
        emitter, number = str(document["emitter"]), int(batch["batch"])
        first, accepted = int(batch["first_particle"]), int(batch["accepted"])
        previous = self._last.get(emitter)
        if previous is not None:
            last, next_particle = previous
            if number <= last:
                fail(f"emitter {emitter!r}: batch {number} after {last} (rule 3)")
            if first not in (next_particle, 0):
                fail(f"emitter {emitter!r}: first_particle {first}, expected {next_particle} (rule 4)")
        self._last[emitter] = (number, first + accepted)
        return canonical_json(document)


def decode_fluid_batch(payload: bytes | memoryview) -> dict[str, Any]:
    """Parse one record back into its document (bounded, schema-checked)."""
    if len(payload) > MAX_PAYLOAD_BYTES:
        fail(f"payload of {len(payload)} bytes exceeds {MAX_PAYLOAD_BYTES}")
    try:
        document = json.loads(bytes(payload))
    except (ValueError, RecursionError) as exc:
        fail(f"payload is not JSON: {exc}")
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        fail(f"payload schema must be {SCHEMA!r}")
    return document
