"""The atomic numeric tick record: one layout whatever form Core hands the tick in."""

from __future__ import annotations

import numpy as np
import pytest

from fastsim_contract.values import (
    ChannelDescriptor,
    ChannelSample,
    ObservationTick,
    PackedLayout,
    PackedValues,
    RowViews,
    SampleBlock,
)
from fastsim_record.adapters.payloads import NumericTickEncoder
from fastsim_record.errors import DescriptorDriftError

_CHANNELS = (
    ChannelDescriptor("a.q", "numeric", "float64", (3,), ("rad",) * 3, "a"),
    ChannelDescriptor("a.pose", "numeric", "float64", (7,), ("m",) * 7, "a"),
    ChannelDescriptor("b.count", "numeric", "int32", (), ("1",), "b"),
)
_NAMES = tuple(c.name for c in _CHANNELS)


def _frozen(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def _values() -> tuple[np.ndarray, ...]:
    return (
        _frozen(np.arange(3.0)),
        _frozen(np.linspace(0.0, 1.0, 7)),
        _frozen(np.array(5, dtype=np.int32)),
    )


def _packed(values: tuple[np.ndarray, ...]) -> PackedValues:
    layout = PackedLayout(tuple((v.dtype.str, v.shape) for v in values))
    return PackedValues(_frozen(np.frombuffer(b"".join(v.tobytes() for v in values), np.uint8).copy()), layout)


def test_every_tick_form_encodes_to_the_same_record() -> None:
    """Tuple samples, a SampleBlock, RowViews and one packed buffer give identical record bytes."""
    encoder = NumericTickEncoder("observations", _CHANNELS)
    values = _values()
    expected = b"".join(v.tobytes() for v in values)
    assert encoder.record_bytes == len(expected) == 3 * 8 + 7 * 8 + 4
    blocks = (_frozen(np.stack([values[0], values[0] + 1])),)
    forms = [
        tuple(ChannelSample(n, v, 1) for n, v in zip(_NAMES, values)),
        SampleBlock(_NAMES, values, 1),
        SampleBlock(_NAMES, _packed(values), 1),
    ]
    for samples in forms:
        assert encoder.encode(ObservationTick(1, samples)) == expected
    rows = NumericTickEncoder("observations", _CHANNELS[:1])
    assert rows.encode(ObservationTick(1, SampleBlock(_NAMES[:1], RowViews(blocks, ((0, 1),)), 1))) == (
        (values[0] + 1).tobytes()
    )
    layout = encoder.attributes["channels"]
    assert isinstance(layout, list)
    assert [c["offset"] for c in layout] == [0, 24, 80]


def test_a_packed_tick_with_a_drifted_layout_is_drift() -> None:
    """A packed buffer whose dtype or shape differs from the descriptors is refused with the channel named."""
    encoder = NumericTickEncoder("observations", _CHANNELS)
    values = _values()
    drifted = (values[0].astype(np.float32), values[1], values[2])
    with pytest.raises(DescriptorDriftError, match=r"a\.q: expected float64\[3\], got float32\[3\]"):
        encoder.encode(ObservationTick(1, SampleBlock(_NAMES, _packed(drifted), 1)))
    big_endian = (values[0].astype(">f8"), values[1], values[2])  # same values, other byte order
    assert encoder.encode(ObservationTick(2, SampleBlock(_NAMES, _packed(big_endian), 1))) == b"".join(
        v.tobytes() for v in values
    )


def test_a_tick_missing_or_adding_a_channel_is_drift() -> None:
    """A tick lacking a declared channel or carrying an unselected one fails naming the difference."""
    encoder = NumericTickEncoder("observations", _CHANNELS)
    values = _values()
    with pytest.raises(DescriptorDriftError, match=r"missing \['b.count'\]"):
        encoder.encode(ObservationTick(1, SampleBlock(_NAMES[:2], values[:2], 1)))
    extra = (*_NAMES, "c.x")
    with pytest.raises(DescriptorDriftError, match=r"unexpected \['c.x'\]"):
        encoder.encode(ObservationTick(1, SampleBlock(extra, (*values, values[0]), 1)))
