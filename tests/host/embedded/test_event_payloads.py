"""The simulation thread's event payloads: sizes and frozen control payloads as before."""

from __future__ import annotations

import math
import pickle
from collections.abc import Mapping
from typing import Any

import pytest

from fastsim_contract.payloads import FrozenDict, freeze, portable_size
from fastsim_recording_format.encoding import canonical_json

PAYLOADS: list[Any] = [
    {"event": "command.issued", "args": {"targets": [0.1 * i for i in range(7)]}, "target": "robot"},
    {"z": "\u00e9\u2028\"\\x\n", "a": [None, True, False, 1, -2.5e-300, 1e300], "m": {"b": {"c": []}}},
    {"nested": ({"x": (1, 2)}, [{"y": "\U0001f600"}]), "3": "key"},
    {},
    {4: "int key"},
    "plain",
    12,
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_portable_size_is_the_canonical_json_length(payload: Any) -> None:
    """portable_size == len(canonical_json(...)) for frozen and unfrozen payloads."""
    for value in (payload, freeze(payload)):
        assert portable_size(value) == len(canonical_json(value))


@pytest.mark.parametrize("bad", [{"a": math.nan}, {"a": [math.inf]}, {"a": object()}, {1: 2, "a": 1}])
def test_portable_size_fails_as_canonical_json_does(bad: Any) -> None:
    """A payload canonical JSON refuses is refused with the same exception and message."""
    with pytest.raises((ValueError, TypeError)) as canonical:
        canonical_json(bad)
    with pytest.raises(canonical.type) as sized:
        portable_size(bad)
    assert str(sized.value) == str(canonical.value)


def test_freeze_copies_sequences_of_scalars_and_nested_values() -> None:
    """Sequences become tuples, mappings FrozenDicts, at every depth; the input is not shared."""
    items: list[object] = [1, 2.5, "x", None]
    data = {"a": items, "b": [[1], {"c": [True]}], "k": 1}
    frozen = freeze(data)
    assert frozen == {"a": (1, 2.5, "x", None), "b": ((1,), {"c": (True,)}), "k": 1}
    assert type(frozen) is FrozenDict
    assert type(frozen["b"][1]) is FrozenDict
    items.append(3)
    assert frozen["a"] == (1, 2.5, "x", None)


def test_a_frozen_payload_survives_pickling_frozen() -> None:
    """A spilled Gymnasium chunk's events are pickled: a FrozenDict comes back equal, nested, immutable."""
    payload = freeze({"a": [1.5, 2.5], "b": {"c": "d"}, "e": []})
    back = pickle.loads(pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == payload
    assert type(back) is FrozenDict
    assert type(back["b"]) is FrozenDict
    with pytest.raises(TypeError):
        back["x"] = 1


def test_control_payloads_equal_the_frozen_dicts(tmp_path: Any) -> None:
    """Control audit/result payloads built frozen equal freeze() of their dicts, sizes exact."""
    from fastsim_contract.values import CapturePlan, SourceKind
    from fastsim_embedded.backends.base import ControlCommand, ControlOutcome
    from fastsim_embedded.host.core import EmbeddedHost

    plan = CapturePlan(sources=frozenset({SourceKind.CONTROL_AUDIT.value, SourceKind.CONTROL_RESULT.value}))
    host = EmbeddedHost.create(capture=plan, output_dir=tmp_path)
    command = ControlCommand("c-1", "set_joint_targets", "robot", {"targets": [0.5, -1.25]})
    issued = host.events.publish_control_issued(command)
    applied = host.events.publish_control_applied(command, ControlOutcome(False, {"error": "no", "n": [1, {"k": 2}]}))
    assert issued is not None
    assert applied is not None
    expected_issued = freeze({"event": "command.issued", "command_id": "c-1", "command": "set_joint_targets",
                              "target": "robot", "args": {"targets": [0.5, -1.25]}})
    expected_applied = freeze({"event": "command.applied", "command_id": "c-1", "accepted": False,
                               "detail": {"error": "no", "n": [1, {"k": 2}]}})
    for envelope, expected in ((issued, expected_issued), (applied, expected_applied)):
        assert envelope.payload == expected
        assert envelope.portable_size == len(canonical_json(expected))
        payload = envelope.payload
        assert isinstance(payload, FrozenDict)
        assert type(payload["args" if "args" in expected else "detail"]) is FrozenDict
    assert (issued.global_sequence, issued.source_sequence, applied.global_sequence) == (1, 1, 2)


def test_plugin_event_payload_equals_the_frozen_dict(tmp_path: Any) -> None:
    """The plugin event built frozen equals freeze() of its documented dict, size exact."""
    from fastsim_contract.values import CapturePlan, SourceKind
    from fastsim_embedded.host.core import EmbeddedHost

    plan = CapturePlan(sources=frozenset({SourceKind.PLUGIN_EVENT.value}))
    host = EmbeddedHost.create(capture=plan, output_dir=tmp_path)
    envelope = host.events.publish_plugin_event("grasp", {"force": [1.5, 2.0], "ok": True}, emitter="gripper")
    bare = host.events.publish_plugin_event("tick")
    assert envelope is not None
    assert bare is not None
    expected = freeze({"event": "grasp", "emitter": "gripper", "data": {"force": [1.5, 2.0], "ok": True}})
    assert envelope.payload == expected
    assert envelope.portable_size == len(canonical_json(expected))
    assert bare.payload == {"event": "tick", "emitter": "scene", "data": {}}


def test_events_and_lifecycle_sized_from_parts_equal_the_canonical_bytes(tmp_path: Any) -> None:
    """Repeated, changed and non-str names, any mapping data, flat and nested lifecycle data: payload and size as canonical JSON."""
    from fastsim_contract.payloads import FrozenDict
    from fastsim_contract.values import CapturePlan, SourceKind
    from fastsim_embedded.host.core import EmbeddedHost

    plan = CapturePlan(sources=frozenset({SourceKind.PLUGIN_EVENT.value, SourceKind.LIFECYCLE.value}))
    host = EmbeddedHost.create(capture=plan, output_dir=tmp_path)
    events: list[tuple[str, Mapping[str, object] | None, str]] = [
        ("scene.marker", {"tick": 1}, "scene"), ("scene.marker", {"tick": 22, "why": None}, "scene"),
        ("scene.marker", FrozenDict({"k": [1.0]}), "robot"), ("gr\u00e4sp", {"n": -3, "ok": False}, "robot"),
        ("scene.marker", {"s": "\u2028"}, "scene"), ("x", {"nested": {"a": [1, 2]}}, "scene"), ("x", None, "scene"),
    ]
    for name, data, emitter in events:
        envelope = host.events.publish_plugin_event(name, data, emitter=emitter)
        assert envelope is not None
        expected = freeze({"event": name, "emitter": emitter, "data": dict(data or {})})
        assert envelope.payload == expected
        assert canonical_json(envelope.payload) == canonical_json(expected)
        assert envelope.portable_size == len(canonical_json(expected)), (name, data)
    pairs = host.events.publish_plugin_event("p", [("a", 1)])  # type: ignore[arg-type]  # dict() of pairs, as before
    assert pairs is not None
    assert pairs.payload == {"event": "p", "emitter": "scene", "data": {"a": 1}}
    lifecycle: list[dict[str, object]] = [
        {"tick": 5}, {}, {"generation": 1, "previous": None, "reason": "reset"}, {"nested": {"k": [True]}}, {"f": 0.5},
    ]
    for data in lifecycle:
        envelope = host.events.publish_lifecycle("tick.done", **data)
        assert envelope is not None
        expected = freeze({"event": "tick.done", **data})
        assert envelope.payload == expected
        assert type(envelope.payload) is FrozenDict
        assert envelope.portable_size == len(canonical_json(expected)), data
