"""Column-wise observation ticks: SampleBlock/RowViews/PackedValues equal the per-channel form."""

from __future__ import annotations

import operator
from pathlib import Path

import attrs
import numpy as np
import pytest

import fastsim_embedded.host.observations as observations
from fastsim_contract.arena import tick_arena_of
from fastsim_contract.values import (
    CapturePlan,
    ChannelSample,
    Envelope,
    ObservationTick,
    PackedLayout,
    PackedValues,
    RowViews,
    SampleBlock,
)
from fastsim_embedded.backends.base import BackendSpec
from fastsim_embedded.backends.synthetic import create_backend
from fastsim_embedded.host.core import EmbeddedHost


def _host(tmp_path: Path, names: tuple[str, ...]) -> tuple[EmbeddedHost, list[Envelope]]:
    plan = CapturePlan(sources=frozenset({"lifecycle", "observations"}), observation_channels=names)
    host = EmbeddedHost.create(capture=plan, output_dir=tmp_path)
    core = host.core_for("r")
    core.request_grant("observation")
    seen: list[Envelope] = []
    core.subscribe("observations", seen.append)
    return host, seen


def test_block_path_equals_the_mapping_path(tmp_path: Path) -> None:
    """Publishing row views of the blocks yields the same samples as the per-channel mapping."""
    backend = create_backend(BackendSpec(options={"numeric_channels": 8}))
    backend.reset(0)
    backend.step(3)
    names = tuple(reversed([c.name for c in backend.channels()][1:]))  # a subset, another order
    host, seen = _host(tmp_path, names)
    assert host.observations.bind_numeric_layout(backend.numeric_layout())
    host.observations.publish_observation(backend.sample_numeric())
    host.observations.publish_observation_blocks(backend.sample_numeric_blocks())
    by_mapping, by_blocks = (e.payload for e in seen)
    assert isinstance(by_mapping, ObservationTick)
    assert isinstance(by_blocks, ObservationTick)
    assert isinstance(by_blocks.samples, SampleBlock)
    assert isinstance(by_blocks.values, RowViews)
    assert by_blocks.channels == names
    for a, b in zip(by_mapping.samples, by_blocks.samples):
        assert a.channel == b.channel
        assert isinstance(b.value, np.ndarray)
        np.testing.assert_array_equal(a.value, b.value)
        assert not b.value.flags.writeable


def test_sample_block_is_an_immutable_sequence_of_channel_samples() -> None:
    """A SampleBlock equals the tuple of its ChannelSamples and refuses attribute writes."""
    values = ("v0", "v1")
    block = SampleBlock(("a", "b"), values, 4)
    expected = (ChannelSample("a", values[0], 4), ChannelSample("b", values[1], 4))
    assert len(block) == 2
    assert block == expected
    assert block[1] == expected[1]
    assert block[:1] == expected[:1]
    assert [s.channel for s in block] == ["a", "b"]
    assert ObservationTick(1, block).channels == ("a", "b")
    assert ObservationTick(1, expected).channels == ("a", "b")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        block.channels = ("x",)
    with pytest.raises(ValueError, match="2 channels but 1 values"):
        SampleBlock(("a", "b"), values[:1], 1)


def test_writeable_blocks_are_frozen_by_the_host(tmp_path: Path) -> None:
    """A backend handing writeable blocks gets them copied and frozen before publication."""
    host, seen = _host(tmp_path, ("x",))
    assert host.observations.bind_numeric_layout({"x": (0, 1)})
    block = np.arange(6.0).reshape(2, 3)
    host.observations.publish_observation_blocks((block,))
    block[1, 0] = 99.0
    payload = seen[0].payload
    assert isinstance(payload, ObservationTick)
    value = payload.samples[0].value
    assert isinstance(value, np.ndarray)
    assert value.tolist() == [3.0, 4.0, 5.0]
    assert not value.flags.writeable


def test_packed_path_equals_the_mapping_path_for_any_plan_order(tmp_path: Path) -> None:
    """A packed tick (zero-copy or gathered into another plan order) carries the mapping path's samples."""
    backend = create_backend(BackendSpec(options={"numeric_channels": 8, "dof": 3}))
    backend.reset(0)
    backend.step(3)
    declared = tuple(c.name for c in backend.channels())
    for names in (declared, tuple(reversed(declared[1:]))):
        host, seen = _host(tmp_path, names)
        assert host.observations.bind_numeric_packing(backend.numeric_packing())
        host.observations.publish_observation(backend.sample_numeric())
        host.observations.publish_observation_packed(backend.sample_numeric_packed())
        by_mapping, by_packed = (e.payload for e in seen)
        assert isinstance(by_mapping, ObservationTick)
        assert isinstance(by_packed, ObservationTick)
        values = by_packed.values
        assert isinstance(values, PackedValues)
        assert by_packed.channels == names
        assert values.buffer.tobytes() == b"".join(np.asarray(v).tobytes() for v in by_mapping.values)
        assert not values.buffer.flags.writeable
        for a, b in zip(by_mapping.samples, by_packed.samples):
            np.testing.assert_array_equal(a.value, b.value)
            assert isinstance(b.value, np.ndarray)
            assert not b.value.flags.writeable
        if names != declared:  # reordered: a gathered copy, not the backend's buffer
            assert values.buffer is not backend.sample_numeric_packed()


def test_full_plan_publishes_the_backend_buffer_without_a_copy(tmp_path: Path) -> None:
    """When the plan selects every packed channel in order, the tick carries the backend's own buffer."""
    backend = create_backend(BackendSpec(options={"numeric_channels": 90}))
    backend.reset(0)
    backend.step(1)
    host, seen = _host(tmp_path, tuple(c.name for c in backend.channels()))
    assert host.observations.bind_numeric_packing(backend.numeric_packing())
    host.observations.publish_observation_packed(backend.sample_numeric_packed())
    payload = seen[0].payload
    assert isinstance(payload, ObservationTick)
    assert isinstance(payload.values, PackedValues)
    assert payload.values.buffer is backend.sample_numeric_packed()
    assert payload.values.layout.nbytes == 90 * 7 * 8


def test_a_copied_packed_tick_is_the_next_arena_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tick the host must copy (a writable buffer) is copied into the next row of the
    Run's tick arena, its facts into the row's columns (issue 26); with no arena, into a
    private frozen copy as before."""
    backend = create_backend(BackendSpec(options={"numeric_channels": 90}))
    backend.reset(0)
    backend.step(1)
    names = tuple(c.name for c in backend.channels())
    host, seen = _host(tmp_path, names)
    assert host.observations.bind_numeric_packing(backend.numeric_packing())
    writable = np.array(backend.sample_numeric_packed())
    for k in range(2):
        host.observations.publish_observation_packed(writable + k)
    buffers = []
    for envelope in seen:
        payload = envelope.payload
        assert isinstance(payload, ObservationTick)
        assert isinstance(payload.values, PackedValues)
        buffers.append(payload.values.buffer)
    arena = tick_arena_of(buffers[0])
    assert arena is not None
    assert all(map(operator.is_, buffers, arena.slots[:2]))
    assert bytes(arena.payload(0, 2)) == writable.tobytes() + (writable + 1).tobytes()
    assert arena.global_sequence[:2] == [e.global_sequence for e in seen]
    assert arena.channel_sequence[:2] == [1, 2]
    monkeypatch.setattr(observations, "ARENA_ROWS", 0)
    host, seen = _host(tmp_path / "none", names)
    assert host.observations.bind_numeric_packing(backend.numeric_packing())
    host.observations.publish_observation_packed(writable)
    payload = seen[0].payload
    assert isinstance(payload, ObservationTick)
    assert isinstance(payload.values, PackedValues)
    assert tick_arena_of(payload.values.buffer) is None
    assert not payload.values.buffer.flags.writeable
    assert payload.values.buffer.tobytes() == writable.tobytes()


def test_writeable_packed_buffers_are_frozen_by_the_host(tmp_path: Path) -> None:
    """A backend handing a writeable packed buffer gets it copied and frozen before publication."""
    host, seen = _host(tmp_path, ("x", "y"))
    assert host.observations.bind_numeric_packing((("x", "float64", (2,)), ("y", "<f8", ())))
    buffer = np.arange(3.0)
    host.observations.publish_observation_packed(buffer)
    buffer[0] = 99.0
    payload = seen[0].payload
    assert isinstance(payload, ObservationTick)
    assert [np.asarray(v).tolist() for v in payload.values] == [[0.0, 1.0], 2.0]
    assert not host.observations.bind_numeric_packing((("x", "<f8", (2,)),))  # does not cover the plan


def test_packed_values_check_their_size_and_refuse_writes() -> None:
    """PackedValues needs exactly the layout's byte count and is immutable."""
    layout = PackedLayout((("<f8", (2,)), ("<i4", ())))
    assert (layout.offsets, layout.nbytes) == ((0, 16), 20)
    with pytest.raises(ValueError, match="19 bytes, layout 20"):
        PackedValues(np.zeros(19, np.uint8), layout)
    values = PackedValues(np.zeros(20, np.uint8), layout)
    assert len(values) == 2
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        values.buffer = None
