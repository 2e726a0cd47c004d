"""The source registry is the one table the bootstrap wires from."""

from __future__ import annotations

import attrs
import pytest

from fastsim_contract.values import SourceKind
from fastsim_record.bootstrap import barrier_json
from fastsim_record.core.captured import LaneName
from fastsim_record.ports.sources import SourceSpec
from fastsim_record.sources import SOURCES, StreamContext
from fastsim_record.testing.harness import Harness


def test_every_contract_source_kind_belongs_to_exactly_one_row() -> None:
    """Each contract kind but the barrier is carried by the row named after it, and by no other."""
    for kind in SourceKind:
        rows = [r.kind for r in SOURCES.values() if kind in r.contract_kinds]
        if kind is SourceKind.GENERATION_BARRIER:
            assert rows == [r.kind for r in SOURCES.values() if r.carries_barriers] == ["observations"]
        else:
            assert rows == [kind.value]


def test_rows_are_frozen_and_lanes_are_the_one_lane_type() -> None:
    """A row cannot be changed in place, and its lane is a ``LaneName``."""
    row = SOURCES["observations"]
    assert all(isinstance(r.lane, LaneName) for r in SOURCES.values())
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        row.lane = LaneName.MEDIA  # type: ignore[misc]


def test_each_rows_codec_is_the_one_its_encoder_declares() -> None:
    """The registry's codec column agrees with the payload codec every factory's encoder writes."""
    h = Harness.started()
    try:
        context = StreamContext(h.plugin.config, h.plugin.context.core.run, h.wiring.selection.numeric)  # type: ignore[union-attr]
        for row in SOURCES.values():
            if row.encoder is None:
                continue
            built = row.encoder(SourceSpec(row.kind, row.kind, row.lane), context)
            assert built.encoder.codec["payload_codec"] == row.codec, row.kind
    finally:
        h.plugin.close()


def test_the_bootstrap_wires_one_pump_and_stream_per_selected_source() -> None:
    """The default config selects the critical sources and observations, each on its row's lane."""
    h = Harness.started()
    try:
        selection = h.wiring.selection
        assert selection is not None
        kinds = [s.kind for s in selection.sources]
        assert kinds == ["lifecycle", "events", "control.audit", "control.result", "observations"]
        assert [p.name for p in h.wiring.pumps] == kinds
        assert all(s.lane is SOURCES[s.kind].lane for s in selection.sources)
        assert set(h.wiring.lanes) == {LaneName.CRITICAL, LaneName.NUMERIC}
        assert set(h.wiring.encoders) == set(kinds)
    finally:
        h.plugin.close()


def test_barrier_payloads_are_canonical_json() -> None:
    """A barrier's fields are written with sorted keys and no whitespace."""

    @attrs.frozen
    class Barrier:
        generation: int
        reason: str

    assert barrier_json(Barrier(2, "réset")) == '{"generation":2,"reason":"réset"}'.encode()
