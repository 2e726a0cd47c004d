"""A command's two control events (``EventPublisher.publish_control``): the same payloads and
exact sizes as the two separate publishers, with the command id frozen and sized once and
the fixed text of each payload never serialised (counted, never timed)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest

from fastsim_contract.payloads import FrozenDict, freeze, portable_size
from fastsim_contract.values import CapturePlan, Envelope, SourceKind
from fastsim_embedded.backends.base import ControlCommand, ControlOutcome
from fastsim_embedded.host import events as events_module
from fastsim_embedded.host.core import EmbeddedHost
from fastsim_recording_format.encoding import canonical_json

_CONTROL = frozenset({SourceKind.CONTROL_AUDIT.value, SourceKind.CONTROL_RESULT.value})

COMMANDS: list[tuple[ControlCommand, ControlOutcome]] = [
    (ControlCommand("gym-1", "set_joint_targets", "robot", {"targets": [0.1 * i - 0.35 for i in range(7)]}),
     ControlOutcome(True)),
    (ControlCommand("c-\u00e9\u2028\"\\\n", "n\U0001f600", "t\u00e9", {"b": {"c": [True, None]}, "a": (1, -2.5e-300)}),
     ControlOutcome(False, {"error": "no \u00e9", "n": [1, {"k": 2}]})),
    (ControlCommand("x", "y", 7, {}), ControlOutcome(1, MappingProxyType({"z": ()}))),  # type: ignore[arg-type]
    (ControlCommand("", "", "", MappingProxyType({"k": [[]]})), ControlOutcome(False)),
]


def _host(tmp_path: Path, *, sources: frozenset[str] = _CONTROL, portable_sizes: bool = True) -> EmbeddedHost:
    return EmbeddedHost.create(capture=CapturePlan(sources=sources), output_dir=tmp_path, portable_sizes=portable_sizes)


def _expected(command: ControlCommand, outcome: ControlOutcome) -> tuple[FrozenDict, FrozenDict]:
    issued = freeze({"event": "command.issued", "command_id": command.command_id, "command": command.name,
                     "target": command.target, "args": dict(command.args)})
    applied = freeze({"event": "command.applied", "command_id": command.command_id, "accepted": outcome.accepted,
                      "detail": dict(outcome.detail)})
    return issued, applied


@pytest.mark.parametrize(("command", "outcome"), COMMANDS)
def test_publish_control_equals_the_two_publishers_payloads_and_exact_sizes(
    tmp_path: Path, command: ControlCommand, outcome: ControlOutcome
) -> None:
    """Payload, canonical bytes and portable size of both events equal the separate publishers' and ``len(canonical_json(...))``; the outcome is the backend's."""
    together, apart = _host(tmp_path / "a"), _host(tmp_path / "b")
    applied: list[ControlCommand] = []

    def apply(c: ControlCommand) -> ControlOutcome:
        applied.append(c)
        return outcome

    assert together.events.publish_control(command, apply) is outcome
    assert applied == [command]
    apart.events.publish_control_issued(command)
    apart.events.publish_control_applied(command, outcome)
    got, ref = _control(together), _control(apart)
    assert [e.source for e in got] == [SourceKind.CONTROL_AUDIT, SourceKind.CONTROL_RESULT]
    for envelope, other, expected in zip(got, ref, _expected(command, outcome), strict=True):
        assert envelope.payload == other.payload == expected
        assert canonical_json(envelope.payload) == canonical_json(other.payload) == canonical_json(expected)
        assert envelope.portable_size == other.portable_size == len(canonical_json(expected))
        assert type(envelope.payload) is FrozenDict
    first, second = got[0].payload, got[1].payload
    assert isinstance(first, Mapping)
    assert isinstance(second, Mapping)
    assert first["command_id"] is second["command_id"]  # one frozen id for both


def test_the_command_id_is_sized_once_and_the_fixed_text_never(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Counted: ``portable_size`` sees each variable field once (the id once for both events, ``true`` and an empty detail not at all; the arguments through ``freeze_sized``), never a whole payload; a second command of the same kind sizes only its id."""
    seen: list[object] = []
    real = portable_size

    def counting(payload: object) -> int:
        seen.append(payload)
        return real(payload)

    monkeypatch.setattr(f"{events_module.__name__}.portable_size", counting)
    host = _host(tmp_path)
    command, outcome = COMMANDS[0]
    host.events.publish_control(command, lambda _c: outcome)
    assert seen == ["gym-1", "set_joint_targets", "robot"]
    again = ControlCommand("gym-2", command.name, command.target, {"targets": [0.5] * 7})
    host.events.publish_control(again, lambda _c: outcome)
    assert seen == ["gym-1", "set_joint_targets", "robot", "gym-2"]
    assert not any(isinstance(p, Mapping) and "event" in p for p in seen)
    issued = [e for e in _control(host) if e.source is SourceKind.CONTROL_AUDIT]
    assert [e.portable_size for e in issued] == [len(canonical_json(e.payload)) for e in issued]


def test_nothing_is_built_for_a_source_not_captured_and_sizes_follow_the_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only the captured event is published; without portable sizes none is computed."""
    calls: list[object] = []

    def counting(payload: object) -> int:
        calls.append(payload)
        return 0

    monkeypatch.setattr(f"{events_module.__name__}.portable_size", counting)
    command, outcome = COMMANDS[1]
    only_result = _host(tmp_path / "r", sources=frozenset({SourceKind.CONTROL_RESULT.value}), portable_sizes=False)
    assert only_result.events.publish_control(command, lambda _c: outcome) is outcome
    (envelope,) = _control(only_result)
    assert envelope.source is SourceKind.CONTROL_RESULT
    assert envelope.portable_size is None
    assert calls == []
    nothing = _host(tmp_path / "n", sources=frozenset())
    assert nothing.events.publish_control(command, lambda _c: outcome) is outcome
    assert _control(nothing) == []
    assert calls == []


def test_freeze_takes_every_mapping_and_sequence_type_as_before() -> None:
    """Exact-type shortcuts first, then the ``Mapping`` / list / tuple subclasses as before."""

    class Seq(list[Any]):
        pass

    class Tup(tuple[Any, ...]):
        __slots__ = ()

    value = {"p": MappingProxyType({"q": Seq([1, Tup((2, [3]))])}), "f": FrozenDict({"g": [None]}), 5: "k"}
    frozen = freeze(value)
    assert frozen == {"p": {"q": (1, (2, (3,)))}, "f": {"g": (None,)}, "5": "k"}
    assert type(frozen["p"]) is FrozenDict
    assert type(frozen["p"]["q"]) is tuple
    assert type(frozen["p"]["q"][1][1]) is tuple
    marker = object()
    assert freeze(marker) is marker


def test_the_run_loop_publishes_each_command_once_through_publish_control(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``TickStepper.tick``: one ``publish_control`` per command, in order, outcomes returned."""
    from fastsim_contract.run import load_run
    from fastsim_embedded.session.compile import prepare_run
    from fastsim_embedded.session.session import Session

    sent: list[str] = []
    real = events_module.EventPublisher.publish_control

    def spy(self: events_module.EventPublisher, command: ControlCommand, apply: Any) -> ControlOutcome:
        sent.append(command.command_id)
        return real(self, command, apply)

    monkeypatch.setattr(events_module.EventPublisher, "publish_control", spy)
    repo = Path(__file__).resolve().parents[3]
    session = Session.open(prepare_run(load_run(repo / "examples/policy/run.yaml")), tmp_path)
    try:
        good = ControlCommand("a", "set_joint_targets", "robot", {"targets": [0.0] * 7})
        bad = ControlCommand("b", "no_such_command", "robot", {})
        result = session.step([good, bad])
        assert [o.accepted for o in result.outcomes] == [True, False]
        assert sent == ["a", "b"]
        assert session.step().outcomes == ()
        assert sent == ["a", "b"]
    finally:
        session.close()


def _control(host: EmbeddedHost) -> list[Envelope]:
    """The control events in the bus's (open) history, in publication order."""
    found = [*host.bus.history(SourceKind.CONTROL_AUDIT.value), *host.bus.history(SourceKind.CONTROL_RESULT.value)]
    return sorted(found, key=lambda e: e.global_sequence)
