"""The composition root's output: ``bootstrap.wire`` returns one frozen ``Wiring``."""

from __future__ import annotations

import attrs
import pytest

from fastsim_record.adapters.fsr_sink import FsrSink
from fastsim_record.bootstrap import create_plugin, wire
from fastsim_record.core.captured import LaneName
from fastsim_record.errors import ContractError
from fastsim_record.pipeline.pumps import Pump
from fastsim_record.pipeline.wiring import Wiring
from fastsim_record.sources import SOURCES
from fastsim_record.testing.fake_core import FakeCore, numeric_channels
from fastsim_record.testing.harness import Harness, make_config, plan_for


def test_a_wiring_built_for_the_default_config_holds_every_part() -> None:
    """Each selected source has its pump, lane and encoder; the worker writes through the sink."""
    h = Harness.started(channels=numeric_channels(2))
    try:
        wiring = h.wiring
        assert h.plugin.monitor is wiring.monitor
        selection = wiring.selection
        assert selection is not None
        names = [s.name for s in selection.sources]
        assert names == ["lifecycle", "events", "control.audit", "control.result", "observations"]
        assert [c.name for c in selection.numeric] == ["robot.c000", "robot.c001"]
        assert [p.name for p in wiring.pumps] == names
        assert all(isinstance(p, Pump) and p.subscription is not None for p in wiring.pumps)
        assert set(wiring.lanes) == {LaneName.CRITICAL, LaneName.NUMERIC}
        for spec in selection.sources:  # a pump feeds its row's lane
            assert spec.lane is SOURCES[spec.kind].lane
        assert set(wiring.encoders) == set(names)
        assert wiring.cameras is None
        assert isinstance(wiring.sink, FsrSink)
        assert wiring.worker is not None
        assert wiring.worker.thread.is_alive()
        assert wiring.finalizer is not None
        assert wiring.registration is not None
        assert h.core.grants == ["observation"]
        assert [call[0] for call in h.core.subscribe_calls] == names
    finally:
        h.plugin.close()


def test_a_wiring_is_frozen() -> None:
    """Nothing reassigns a part after wiring."""
    h = Harness.started()
    try:
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            h.wiring.sink = None  # type: ignore[misc]
    finally:
        h.plugin.close()


def test_without_numeric_channels_there_is_no_numeric_lane_and_no_grant() -> None:
    """A scene without numeric channels: critical sources only, and no observation grant."""
    config = make_config()
    core = FakeCore(channels=(), capture=plan_for(config, ()))
    plugin = create_plugin(core.context(config))
    wiring = wire(plugin)
    try:
        assert isinstance(wiring, Wiring)
        assert set(wiring.lanes) == {LaneName.CRITICAL}
        assert wiring.selection is not None
        assert wiring.selection.numeric == ()
        assert core.grants == []
    finally:
        wiring.undo()
    assert wiring.worker is not None
    assert not wiring.worker.thread.is_alive()
    assert core.outputs.steps() == ["open_write", "abort"]
    assert all(sub.closed for subs in core.subscribers.values() for sub in subs)
    assert not any(r.active for r in core.registrations)


def test_a_fault_part_way_undoes_the_partial_wiring() -> None:
    """A refused grant (step 7): the worker started at step 5 is stopped and the lease aborted."""
    core = FakeCore(channels=numeric_channels(1))
    core.prepare_faults.add("request_grant")
    plugin = create_plugin(core.context(make_config()))
    with pytest.raises(ContractError, match="request_grant"):
        wire(plugin)
    assert core.outputs.steps() == ["open_write", "abort"]
    assert not any(r.active for r in core.registrations)
    assert core.subscribe_calls == []  # step 8 was never reached
