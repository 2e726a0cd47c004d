"""fluid.audit: the embedded particle emitter and the fluid.emissions record encoder."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fastsim_contract.render_services import FluidEmissionBatch
from fastsim_embedded.render.fluid import ParticleEmitter, emitter_from_scene
from fastsim_record.adapters.fluid import FluidEmissionEncoder
from fastsim_record.errors import RecordError
from fastsim_recording_format.codecs.fluid import (
    BATCH_FIELDS,
    SCHEMA,
    FluidPayloadError,
    decode_fluid_batch,
)


def test_emitter_ids_are_contiguous_and_capacity_rejects() -> None:
    """Accepted particles get contiguous ids; beyond capacity they are rejected."""
    emitter = ParticleEmitter(rate_per_tick=4, capacity=10)
    batches = [emitter.step(0.01) for _ in range(4)]
    assert [b.first_particle for b in batches if b] == [0, 4, 8, 10]
    assert [(b.accepted, b.rejected) for b in batches if b] == [(4, 0), (4, 0), (2, 2), (0, 4)]
    assert emitter.positions().shape == (10, 3)
    assert emitter.positions().dtype == np.float32


def test_emitter_is_deterministic_and_falls_to_the_floor() -> None:
    """The same seed gives the same packed positions; particles rest on the floor."""
    a, b = ParticleEmitter(seed=3), ParticleEmitter(seed=3)
    for _ in range(200):
        a.step(1 / 60)
        b.step(1 / 60)
    assert a.positions().tobytes() == b.positions().tobytes()
    assert float(a.positions()[:, 2].min()) >= a.floor_z
    assert not a.positions().flags.writeable


def test_scene_without_fluid_has_no_emitter() -> None:
    """Only a scene that declares fluid gets an emitter."""
    assert emitter_from_scene({}) is None
    emitter = emitter_from_scene({"fluid": {"name": "oil", "rate_per_tick": 2}})
    assert emitter is not None
    assert emitter.name == "oil"


def test_encoder_writes_canonical_schema_json() -> None:
    """A batch encodes to canonical JSON with the fastsim-fluid-emission-batch/1 schema."""
    batch = ParticleEmitter(rate_per_tick=3).step(0.01)
    assert batch is not None
    payload = FluidEmissionEncoder().encode(batch)
    document = decode_fluid_batch(payload)
    assert document["schema"] == SCHEMA
    assert document["accepted"] == 3
    assert payload == json.dumps(document, sort_keys=True, separators=(",", ":")).encode()


def test_encoder_refuses_broken_particle_continuity() -> None:
    """A batch whose first particle skips ids is a recording error."""
    encoder = FluidEmissionEncoder()
    first = FluidEmissionBatch("w", 0, 0, 4, 0, (0, 0, 0), (0, 0, 0), 0.0)
    encoder.encode(first)
    with pytest.raises(FluidPayloadError, match="rule 4"):
        encoder.encode(FluidEmissionBatch("w", 1, 7, 4, 0, (0, 0, 0), (0, 0, 0), 0.0))
    with pytest.raises(FluidPayloadError, match="rule 3"):
        encoder.encode(FluidEmissionBatch("w", 0, 4, 4, 0, (0, 0, 0), (0, 0, 0), 0.0))
    with pytest.raises(FluidPayloadError, match="finite"):
        encoder.encode(FluidEmissionBatch("w", 2, 4, 1, 0, (float("nan"), 0, 0), (0, 0, 0), 0.0))


def test_the_formats_batch_fields_are_the_contracts_and_encode_errors_are_record_errors() -> None:
    """The format codec knows the contract's batch fields; a bad batch is also a RecordError."""
    import attrs

    assert {f.name for f in attrs.fields(FluidEmissionBatch)} == BATCH_FIELDS
    with pytest.raises(RecordError, match="batch keys differ"):
        FluidEmissionEncoder().encode({"emitter": "e"})
