"""Bounded lanes: admission rules A1-A9, policy rules L1-L3, counters and a stateful model."""

from __future__ import annotations

from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from fastsim_record.core import (
    ACCEPTED,
    SIZE_CEILING,
    AdmissionOutcome,
    Envelope,
    GapReason,
    InvalidLimits,
    Lane,
    LaneName,
    LanePolicyError,
    LaneSpec,
    OverloadPolicy,
    overload_problem,
)
from fastsim_record.testing.envelopes import EnvelopeFactory
from fastsim_record.testing.strategies import envelope_scripts, lane_specs


def _lane(policy: OverloadPolicy, max_items: int = 2, max_bytes: int = 1000) -> Lane:
    spec = LaneSpec(name=LaneName.NUMERIC, max_items=max_items, max_bytes=max_bytes, overload=policy)
    return Lane(spec, [False])


def _optional(f: EnvelopeFactory, size: int = 10) -> Envelope:
    return f.record("obs", required=False, size=size)


def test_a1_accepts_with_the_shared_constant() -> None:
    """A1: an admitted envelope returns the one pre-allocated ACCEPTED value."""
    lane = _lane(OverloadPolicy.FAIL_RUN)
    assert lane.try_publish(_optional(EnvelopeFactory())) is ACCEPTED
    assert lane.counters().enqueued == 1


def test_a4_fail_run_latches_fatal_and_a2_keeps_it() -> None:
    """A4/A2: overflow under fail_run latches a fatal error; later publishes stay fatal."""
    lane, f = _lane(OverloadPolicy.FAIL_RUN, max_items=1), EnvelopeFactory()
    lane.try_publish(_optional(f))
    first = lane.try_publish(_optional(f))
    assert first.fatal
    assert "overflow" in first.reason
    lane.pop()
    again = lane.try_publish(_optional(f))
    assert again.outcome is AdmissionOutcome.FATAL
    c = lane.counters()
    assert (c.failures, c.lost, c.fatal) == (2, 0, first.reason)


def test_a5_drop_newest_loses_the_new_envelope_as_a_gap() -> None:
    """A5: drop_newest refuses the new envelope and accounts it as an exact gap."""
    lane, f = _lane(OverloadPolicy.DROP_NEWEST, max_items=1), EnvelopeFactory()
    lane.try_publish(_optional(f))
    new = _optional(f)
    adm = lane.try_publish(new)
    assert adm.outcome is AdmissionOutcome.DROPPED
    assert [g.first_global for g in adm.gaps] == [new.global_sequence]
    assert lane.take_gaps() == list(adm.gaps)
    assert adm.gaps[0].reason is GapReason.DROP_NEWEST


def test_a6_drop_oldest_evicts_until_the_new_envelope_fits() -> None:
    """A6: drop_oldest evicts the oldest envelopes until the new one fits by bytes."""
    lane, f = _lane(OverloadPolicy.DROP_OLDEST, max_items=5, max_bytes=30), EnvelopeFactory()
    old = [_optional(f) for _ in range(3)]
    for e in old:
        lane.try_publish(e)
    adm = lane.try_publish(_optional(f, size=25))
    assert adm.outcome is AdmissionOutcome.EVICTED
    assert adm.admitted
    assert [g.first_global for g in adm.gaps] == [1, 2, 3]
    assert lane.counters().depth_bytes == 25


def test_a7_drop_oldest_drops_an_envelope_that_can_never_fit() -> None:
    """A7: under drop_oldest an envelope larger than max_bytes is itself lost."""
    lane, f = _lane(OverloadPolicy.DROP_OLDEST, max_bytes=30), EnvelopeFactory()
    lane.try_publish(_optional(f))
    adm = lane.try_publish(_optional(f, size=31))
    assert adm.outcome is AdmissionOutcome.DROPPED
    assert lane.depth == 1


def test_a8_degrade_recording_stops_admission_and_a3_keeps_dropping() -> None:
    """A8/A3: degrade_recording latches degraded; every later envelope is lost as a gap."""
    lane, f = _lane(OverloadPolicy.DEGRADE_RECORDING, max_items=1), EnvelopeFactory()
    lane.try_publish(_optional(f))
    assert lane.try_publish(_optional(f)).outcome is AdmissionOutcome.DROPPED
    lane.pop()
    adm = lane.try_publish(_optional(f))
    assert adm.outcome is AdmissionOutcome.DROPPED
    assert adm.gaps[0].reason is GapReason.DEGRADED
    c = lane.counters()
    assert c.degraded
    assert (c.lost, c.degradations) == (2, 2)


def test_a9_lossy_policy_never_loses_a_required_envelope() -> None:
    """A9: a lossy rule that would lose a required envelope latches fatal instead."""
    lane, f = _lane(OverloadPolicy.DROP_OLDEST, max_items=1), EnvelopeFactory()
    lane.try_publish(f.record("obs", required=True))
    adm = lane.try_publish(_optional(f))
    assert adm.fatal
    assert "required" in adm.reason
    assert lane.counters().lost == 0


def test_l1_critical_lane_is_always_fail_run() -> None:
    """L1: the critical lane rejects every lossy overload policy."""
    spec = LaneSpec(name=LaneName.CRITICAL, max_items=4, max_bytes=4, overload=OverloadPolicy.DROP_NEWEST)
    with pytest.raises(LanePolicyError, match="always fail_run"):
        Lane(spec)


def test_l2_lossy_policy_needs_every_stream_optional() -> None:
    """L2: a lossy policy is illegal when any stream in the lane is required."""
    spec = LaneSpec(name=LaneName.MEDIA, max_items=4, max_bytes=4, overload=OverloadPolicy.DROP_OLDEST)
    assert overload_problem(spec, [False, False]) is None
    with pytest.raises(LanePolicyError, match="every stream"):
        Lane(spec, [False, True])


def test_l3_limits_must_be_positive() -> None:
    """L3: a zero max_items or max_bytes is rejected."""
    with pytest.raises(InvalidLimits):
        Lane(LaneSpec(name=LaneName.NUMERIC, max_items=0, max_bytes=4))


def test_critical_bytes_use_producer_size_else_ceiling() -> None:
    """Byte admission charges the producer size, or the 1 MiB ceiling when absent."""
    spec = LaneSpec(name=LaneName.CRITICAL, max_items=10, max_bytes=SIZE_CEILING + 100)
    lane, f = Lane(spec), EnvelopeFactory()
    assert lane.try_publish(f.record("lifecycle", source="lifecycle", size=None)).admitted
    assert lane.try_publish(f.record("lifecycle", source="lifecycle", size=100)).admitted
    assert lane.try_publish(f.record("lifecycle", source="lifecycle", size=1)).fatal
    assert lane.counters().depth_bytes == SIZE_CEILING + 100


@given(spec=lane_specs(), script=envelope_scripts(required=False), pops=st.lists(st.integers(0, 3)))
def test_counters_conserve(spec: LaneSpec, script: list[Envelope], pops: list[int]) -> None:
    """Counters conserve: enqueued == dequeued + depth + lost, and lost equals the gaps."""
    lane = Lane(spec, [False])
    gaps = 0
    for i, env in enumerate(script):
        lane.try_publish(env)
        if pops and pops[i % len(pops)]:
            lane.drain(pops[i % len(pops)])
        gaps += len(lane.take_gaps())
        c = lane.counters()
        assert c.enqueued == c.dequeued + c.depth + c.lost
        assert c.lost == gaps
        assert c.depth <= spec.max_items
        assert c.depth_bytes <= spec.max_bytes
        assert c.high_water >= c.depth


class LaneMachine(RuleBasedStateMachine):
    """A lane against a plain-deque model of the admission table."""

    def __init__(self) -> None:
        super().__init__()
        self.factory = EnvelopeFactory()
        self.lane: Lane | None = None
        self.model: deque[Envelope] = deque()
        self.lost: list[int] = []
        self.taken: list[int] = []
        self.out: list[Envelope] = []
        self.fatal = False
        self.degraded = False

    @precondition(lambda self: self.lane is None)
    @rule(spec=lane_specs(max_items=4))
    def create(self, spec: LaneSpec) -> None:
        self.lane = Lane(spec, [False])

    @precondition(lambda self: self.lane is not None)
    @rule(size=st.integers(0, 9000), required=st.booleans())
    def publish(self, size: int, required: bool) -> None:
        assert self.lane is not None
        env = self.factory.record("obs", required=required, size=size)
        adm = self.lane.try_publish(env)
        spec = self.lane.spec
        fits = len(self.model) < spec.max_items and sum(e.admission_size for e in self.model) + size <= spec.max_bytes
        if self.fatal:
            assert adm.fatal
        elif self.degraded or not fits:
            self._overflow(env, adm.outcome, [g.first_global for g in adm.gaps])
        else:
            assert adm is ACCEPTED
            self.model.append(env)

    def _overflow(self, env: Envelope, outcome: AdmissionOutcome, gaps: list[int]) -> None:
        assert self.lane is not None
        policy = self.lane.spec.overload
        if policy is OverloadPolicy.FAIL_RUN:
            assert outcome is AdmissionOutcome.FATAL
            self.fatal = True
        elif outcome is AdmissionOutcome.FATAL:  # A9: a required envelope would be lost
            self.fatal = True
        elif outcome is AdmissionOutcome.DROPPED:
            assert gaps == [env.global_sequence]
            self.lost += gaps
            self.degraded = self.degraded or policy is OverloadPolicy.DEGRADE_RECORDING
        else:
            assert outcome is AdmissionOutcome.EVICTED
            assert policy is OverloadPolicy.DROP_OLDEST
            evicted = [self.model.popleft().global_sequence for _ in gaps]
            assert evicted == gaps
            self.lost += gaps
            self.model.append(env)

    @precondition(lambda self: self.lane is not None)
    @rule(n=st.integers(0, 3))
    def drain(self, n: int) -> None:
        assert self.lane is not None
        got = self.lane.drain(n)
        want = [self.model.popleft() for _ in range(min(n, len(self.model)))]
        assert got == want
        self.out += got

    @precondition(lambda self: self.lane is not None)
    @rule()
    def take_gaps(self) -> None:
        assert self.lane is not None
        self.taken += [g.first_global for g in self.lane.take_gaps()]

    @invariant()
    def conserves(self) -> None:
        if self.lane is None:
            return
        c = self.lane.counters()
        assert c.enqueued == c.dequeued + c.depth + c.lost
        assert c.depth == len(self.model)
        assert c.lost == len(self.lost)
        assert c.dequeued == len(self.out)
        assert (c.fatal is not None) == self.fatal
        assert sorted(self.taken) == sorted(self.lost[: len(self.taken)])


TestLaneMachine = LaneMachine.TestCase
