"""The capture path's cheaper construction (``freeze_sized``, ``CaptureBus.stamper``, the
plugin event's size from its parts): the same values, bytes and sizes as before, counted,
never timed."""

from __future__ import annotations

import enum
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fastsim_contract import payloads
from fastsim_contract.errors import TerminalError
from fastsim_contract.payloads import EMPTY, FrozenDict, freeze, freeze_sized, portable_size
from fastsim_contract.values import CapturePlan, SourceKind
from fastsim_embedded.backends.base import ControlCommand, ControlOutcome
from fastsim_embedded.host import events as events_module
from fastsim_embedded.host.bus import CaptureBus
from fastsim_embedded.host.core import EmbeddedHost
from fastsim_recording_format.encoding import canonical_json


class _Level(enum.IntEnum):
    """An int subclass (the JSON encoder writes its int value)."""

    HIGH = 3


class _F(float):
    """A float subclass with its own repr (the JSON encoder ignores it)."""

    def __repr__(self) -> str:
        return "F!"


ARGS: list[Any] = [
    {"targets": [0.1 * i - 0.35 for i in range(7)]},
    {"targets": np.arange(7, dtype=np.float32).astype(np.float64).tolist(), "gain": 1e-300, "mode": "p\u00e9"},
    {"offset": -0.05},
    {"v": (1.5, 2e16, -0.0, 5e-324)},
    {"v": [_F(0.25), 1.0], "w": [np.float64(0.1)]},  # float subclasses: the float repr
    {"v": [1, 2.0]},  # an int in a list: the general path
    {"event": "tick.done", "tick": 12345},  # a lifecycle event's flat data: sized from its parts
    {"a": None, "b": True, "c": False, "d": -7, "e": "x", "f": 0, "g": 10**40, "h": 2.5},
    {"k": _Level.HIGH},  # an IntEnum: the general path
    {"v": [True]},
    {"b": {"c": [True, None]}, "a": (1, -2.5e-300)},
    {4: [1.0]},
    {},
    {"e": []},
    {"actuators": ["joint1", "fingers\u00e9"], "ctrl": [0.5, -1e-7, 255.0]},  # a MuJoCo result's detail
    {"names": ["a"], "more": ("x\n", "\U0001f600")},
    {"names": ["a", 1.0]},  # mixed: the general path
    {"names": ["a", None]},
    {"s": "\U0001f600\u2028\"\\"},
    FrozenDict({"k": [1.0]}),
    [1.0, 2.0],
    "plain",
]


@pytest.mark.parametrize("args", ARGS)
def test_freeze_sized_equals_freeze_and_the_canonical_length(args: Any) -> None:
    """``freeze_sized`` gives ``freeze``'s value (same type, same canonical bytes) and its exact portable size."""
    frozen, size = freeze_sized(args)
    expected = freeze(args)
    assert frozen == expected
    assert type(frozen) is type(expected)
    assert canonical_json(frozen) == canonical_json(expected)
    assert size == portable_size(expected) == len(canonical_json(expected))


@pytest.mark.parametrize("bad", [{"a": math.nan}, {"a": [1.0, math.inf]}, {"a": [-math.inf]},
                                 {"b": object(), "a": math.nan}, {"a": math.nan, "b": object()}])
def test_freeze_sized_fails_as_canonical_json_does(bad: Any) -> None:
    """A non-finite float or an unencodable value raises canonical JSON's own error and message."""
    with pytest.raises((ValueError, TypeError)) as canonical:
        canonical_json(bad)
    with pytest.raises(canonical.type) as sized:
        freeze_sized(bad)
    assert str(sized.value) == str(canonical.value)


def test_a_list_of_floats_is_sized_without_the_encoder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted: a driver's ``{"targets": [floats]}`` and an event's flat data are sized from their parts, never through the encoder."""
    seen: list[object] = []
    real = payloads.portable_size

    def counting(payload: object) -> int:
        seen.append(payload)
        return real(payload)

    monkeypatch.setattr(payloads, "portable_size", counting)
    frozen, size = freeze_sized({"targets": [0.5, -1.25, 3.0]})
    assert seen == []
    assert size == len('{"targets":[0.5,-1.25,3.0]}')
    assert frozen == {"targets": (0.5, -1.25, 3.0)}
    assert freeze_sized({}) == (EMPTY, 2)
    assert freeze_sized({"event": "tick.done", "tick": 7, "why": None}) == (
        {"event": "tick.done", "tick": 7, "why": None}, len('{"event":"tick.done","tick":7,"why":null}')
    )
    assert seen == []


def test_the_stamper_follows_publish_and_every_bus_rule(tmp_path: Path) -> None:
    """``stamper``: None for a source not captured (rule 1); same envelopes, sequences and history as ``publish``; refused after the seal (rule 7)."""
    plan = CapturePlan(sources=frozenset({SourceKind.PLUGIN_EVENT.value, SourceKind.LIFECYCLE.value}))
    bus = CaptureBus(plan)
    assert bus.stamper(SourceKind.CONTROL_AUDIT) is None
    stamp = bus.stamper(SourceKind.PLUGIN_EVENT)
    assert stamp is not None
    got: list[Any] = []
    bus.subscribe(SourceKind.PLUGIN_EVENT.value, got.append)
    first = stamp(0, 1, 10, FrozenDict({"event": "a"}), 13)
    bus.publish(SourceKind.LIFECYCLE, generation=0, tick=1, sim_time_ns=10, payload={}, portable_size=2)
    third = bus.publish(SourceKind.PLUGIN_EVENT, generation=1, tick=2, sim_time_ns=20, payload={}, portable_size=2)
    second = stamp(1, 2, 20, FrozenDict({"event": "b"}), None)
    assert third is not None
    assert [(e.global_sequence, e.source_sequence) for e in (first, third, second)] == [(1, 1), (3, 2), (4, 3)]
    assert (first.source, first.generation, first.tick, first.sim_time_ns, first.portable_size) == (
        SourceKind.PLUGIN_EVENT, 0, 1, 10, 13)
    assert got == [first, third, second]
    assert list(bus.history(SourceKind.PLUGIN_EVENT.value)) == got
    bus.seal()
    with pytest.raises(TerminalError):
        stamp(1, 3, 30, FrozenDict(), 2)


def test_the_plugin_event_is_sized_from_its_parts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Counted: the plugin event's size sums the name, the emitter and the data, never the whole payload; exact."""
    seen: list[object] = []
    real = portable_size

    def counting(payload: object) -> int:
        seen.append(payload)
        return real(payload)

    monkeypatch.setattr(f"{events_module.__name__}.portable_size", counting)
    plan = CapturePlan(sources=frozenset({SourceKind.PLUGIN_EVENT.value}))
    host = EmbeddedHost.create(capture=plan, output_dir=tmp_path)
    for name, data, emitter in (("grasp", {"f": [1.5], "\u00e9": None}, "gr\u00e9"), ("tick", None, "scene"),
                                ("", {}, "")):
        envelope = host.events.publish_plugin_event(name, data, emitter)
        assert envelope is not None
        assert envelope.payload == freeze({"event": name, "emitter": emitter, "data": dict(data or {})})
        assert envelope.portable_size == len(canonical_json(envelope.payload))
    assert not any(isinstance(p, dict) and "event" in p for p in seen)


def test_an_empty_detail_is_the_shared_frozen_mapping(tmp_path: Path) -> None:
    """A result with an empty detail carries the one frozen ``{}``; its bytes and size as before."""
    plan = CapturePlan(sources=frozenset({SourceKind.CONTROL_RESULT.value}))
    host = EmbeddedHost.create(capture=plan, output_dir=tmp_path)
    command = ControlCommand("c", "n", "t", {})
    for outcome in (ControlOutcome(True), ControlOutcome(False, {})):
        envelope = host.events.publish_control_applied(command, outcome)
        assert envelope is not None
        payload: Any = envelope.payload
        assert payload["detail"] is EMPTY
        assert envelope.portable_size == len(canonical_json(payload))


def test_the_packed_observer_publishes_what_publish_observation_packed_does(tmp_path: Path) -> None:
    """``packed_observer``: the same envelopes (values, sequences, read-only buffer) as ``publish_observation_packed``; returns the backend's sample."""
    plan = CapturePlan(sources=frozenset({SourceKind.OBSERVATION.value}), observation_channels=("a", "b"))
    hosts = [EmbeddedHost.create(capture=plan, output_dir=tmp_path / str(k)) for k in range(2)]
    packing = [("a", "<f8", (2,)), ("b", "<f8", (1,))]
    frozen = np.arange(3, dtype=np.float64)
    frozen.flags.writeable = False
    writeable = np.array([7.0, 8.0, 9.0])
    for host in hosts:
        assert host.observations.bind_numeric_packing(packing)
    samples = iter([frozen, writeable])
    observe = hosts[0].observations.packed_observer(lambda: next(samples))
    got = []
    for tick, buffer in enumerate((frozen, writeable), start=1):
        for host in hosts:
            host.advance(tick, tick * 10)
        assert observe() is buffer
        got.append(hosts[0].bus.history(SourceKind.OBSERVATION.value)[-1])
        hosts[1].observations.publish_observation_packed(buffer)
    ref = hosts[1].bus.history(SourceKind.OBSERVATION.value)
    for envelope, other in zip(got, ref, strict=True):
        assert (envelope.global_sequence, envelope.source_sequence, envelope.tick, envelope.sim_time_ns) == (
            other.global_sequence, other.source_sequence, other.tick, other.sim_time_ns)
        tick_a: Any = envelope.payload
        tick_b: Any = other.payload
        assert tick_a.capture_sequence == tick_b.capture_sequence
        assert tick_a.samples.channels == tick_b.samples.channels == ("a", "b")
        assert tick_a.samples.channel_sequence == tick_b.samples.channel_sequence
        assert tick_a.samples.values.layout == tick_b.samples.values.layout
        assert tick_a.samples.values.buffer.tobytes() == tick_b.samples.values.buffer.tobytes()
        assert not tick_a.samples.values.buffer.flags.writeable
    assert got[0].payload.samples.values.buffer is frozen  # type: ignore[attr-defined]
    with pytest.raises(ValueError, match="bytes, layout"):
        hosts[0].bus.packed_stamper(("a", "b"), hosts[0].observations._packed)(0, 3, 30, np.zeros(2), 9)  # type: ignore[arg-type]


def test_a_float_row_keeps_its_text_and_is_a_tuple() -> None:
    """``freeze_sized`` freezes a list of floats into a ``FloatRow``: its elements' canonical text kept, equal to the plain tuple, pickled as one (perf41)."""
    import pickle

    values = [0.1, -2.5e-300, 3.0, _F(0.25)]
    frozen, size = freeze_sized({"ctrl": values, "names": ["a", "b"]})
    row = frozen["ctrl"]
    assert type(row) is payloads.FloatRow
    assert row == tuple(values)
    assert hash(row) == hash(tuple(values))
    assert row.json == ",".join(map(float.__repr__, values)) == canonical_json(list(values)).decode()[1:-1]
    assert type(frozen["names"]) is tuple
    assert size == len(canonical_json(frozen))
    again = pickle.loads(pickle.dumps(row))
    assert type(again) is tuple
    assert again == row
    assert type(freeze(row)) is tuple  # a deep copy is a plain tuple


def test_a_list_of_names_is_sized_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """perf42: the same names (a MuJoCo result's actuators, every tick) are sized once; other names and mixed lists as before."""
    names = ["joint1", "fingers\u00e9", "x\n"]
    assert freeze_sized({"actuators": names}) == (FrozenDict({"actuators": tuple(names)}),
                                                 len(canonical_json({"actuators": names})))
    sized: list[str] = []
    size = payloads._string_size

    def counting(text: str) -> int:
        sized.append(text)
        return size(text)

    monkeypatch.setattr(payloads, "_string_size", counting)
    again = freeze_sized({"actuators": list(names)})
    assert again == (FrozenDict({"actuators": tuple(names)}), len(canonical_json({"actuators": names})))
    assert sized == [], "the same names: their size kept"
    other = [*names[:2], "joint3"]
    assert freeze_sized({"actuators": other})[1] == len(canonical_json({"actuators": other}))
    assert "joint3" in sized
    mixed = [*names, 1]
    assert freeze_sized({"actuators": mixed}) == (freeze({"actuators": mixed}), len(canonical_json({"actuators": mixed})))
