"""Column-wise observation ticks: SampleBlock/RowViews equal the per-channel form."""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest

from fastsim_contract.values import (
    CapturePlan,
    ChannelSample,
    Envelope,
    ObservationTick,
    RowViews,
    SampleBlock,
)
from fastsim_embedded.backends.base import BackendSpec
from fastsim_embedded.backends.synthetic import create_backend
from fastsim_embedded.core import EmbeddedHost


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
    assert host.bind_numeric_layout(backend.numeric_layout())
    host.publish_observation(backend.sample_numeric())
    host.publish_observation_blocks(backend.sample_numeric_blocks())
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
    assert host.bind_numeric_layout({"x": (0, 1)})
    block = np.arange(6.0).reshape(2, 3)
    host.publish_observation_blocks((block,))
    block[1, 0] = 99.0
    payload = seen[0].payload
    assert isinstance(payload, ObservationTick)
    value = payload.samples[0].value
    assert isinstance(value, np.ndarray)
    assert value.tolist() == [3.0, 4.0, 5.0]
    assert not value.flags.writeable
