"""Bounded lanes: admission rules A1-A9, policy rules L1-L3, counters and a stateful model."""

from __future__ import annotations

import itertools
from collections import deque

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from fastsim_record.core import (
    ACCEPTED,
    SIZE_CEILING,
    AdmissionOutcome,
    CapturedItem,
    GapReason,
    InvalidLimits,
    Lane,
    LaneName,
    LanePolicyError,
    LaneSpec,
    OverloadPolicy,
    overload_problem,
)
from fastsim_record.core.lane import PRESSED
from fastsim_record.testing.envelopes import EnvelopeFactory
from fastsim_record.testing.strategies import envelope_scripts, lane_specs


def _lane(policy: OverloadPolicy, max_items: int = 2, max_bytes: int = 1000) -> Lane:
    spec = LaneSpec(name=LaneName.NUMERIC, max_items=max_items, max_bytes=max_bytes, overload=policy)
    return Lane(spec, [False])


def _optional(f: EnvelopeFactory, size: int = 10) -> CapturedItem:
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
    assert (first.rule, first.required_loss) == ("A4", False)
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


def test_g5_consecutive_losses_of_one_stream_are_one_gap_with_a_count() -> None:
    """G5: 204 consecutive drops of one stream and generation are handed out as one gap of 204."""
    lane, f = _lane(OverloadPolicy.DROP_NEWEST, max_items=1), EnvelopeFactory()
    lane.try_publish(_optional(f))
    dropped = [_optional(f) for _ in range(204)]
    for envelope in dropped:
        assert lane.try_publish(envelope).outcome is AdmissionOutcome.DROPPED
    (gap,) = lane.take_gaps()
    assert (gap.first_global, gap.last_global) == (dropped[0].global_sequence, dropped[-1].global_sequence)
    assert (gap.first_capture, gap.last_capture) == (dropped[0].capture_sequence, dropped[-1].capture_sequence)
    assert gap.count == lane.counters().lost == 204


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
    assert (adm.rule, adm.required_loss) == ("A9", True)
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
def test_counters_conserve(spec: LaneSpec, script: list[CapturedItem], pops: list[int]) -> None:
    """Counters conserve: enqueued == dequeued + depth + lost, and lost equals the gaps."""
    lane = Lane(spec, [False])
    gaps = 0
    for i, env in enumerate(script):
        lane.try_publish(env)
        if pops and pops[i % len(pops)]:
            lane.drain(pops[i % len(pops)])
        gaps += sum(g.count for g in lane.take_gaps())
        c = lane.counters()
        assert c.enqueued == c.dequeued + c.depth + c.lost
        assert c.lost == gaps
        assert c.depth <= spec.max_items
        assert c.depth_bytes <= spec.max_bytes
        assert c.high_water >= c.depth


class LaneMachine(RuleBasedStateMachine):
    """A lane against an independent model of admission rules A1-A9 and every counter."""

    def __init__(self) -> None:
        super().__init__()
        self.factory = EnvelopeFactory()
        self.lane: Lane | None = None
        self.model: deque[CapturedItem] = deque()
        self.lost: list[tuple[int, GapReason]] = []
        self.taken: list[tuple[int, GapReason]] = []
        self.out: list[CapturedItem] = []
        self.enqueued = self.failures = self.degradations = self.high_water = 0
        self.fatal = False
        self.degraded = False

    @precondition(lambda self: self.lane is None)
    @rule(spec=lane_specs(max_items=4))
    def create(self, spec: LaneSpec) -> None:
        self.lane = Lane(spec, [False])

    def _bytes(self) -> int:
        return sum(e.admission_size for e in self.model)

    def _expect(self, env: CapturedItem) -> tuple[AdmissionOutcome, list[tuple[int, GapReason]]]:
        """The model's answer (outcome, gaps) for ``env``; updates the model state."""
        assert self.lane is not None
        spec, size = self.lane.spec, env.admission_size
        if self.fatal:  # A2
            self.failures += 1
            return AdmissionOutcome.FATAL, []
        fits = len(self.model) < spec.max_items and self._bytes() + size <= spec.max_bytes
        if fits and not self.degraded:  # A1
            return self._admit(env, AdmissionOutcome.ACCEPTED, [])
        policy = spec.overload
        if policy is OverloadPolicy.FAIL_RUN:  # A4
            return self._latch()
        if policy is OverloadPolicy.DEGRADE_RECORDING or self.degraded:  # A8, A3
            self.degraded = True
            return self._drop(env, GapReason.DEGRADED)
        if policy is OverloadPolicy.DROP_NEWEST or size > spec.max_bytes:  # A5, A7
            return self._drop(env, GapReason(policy.value))
        victims: list[CapturedItem] = []  # A6: evict the oldest until it fits
        while (len(self.model) - len(victims) >= spec.max_items
               or self._bytes() - sum(v.admission_size for v in victims) + size > spec.max_bytes):
            victim = self.model[len(victims)]
            if victim.required:  # A9
                return self._latch()
            victims.append(victim)
        for _ in victims:
            self.model.popleft()
        gaps = [(v.global_sequence, GapReason.DROP_OLDEST) for v in victims]
        self.lost += gaps
        return self._admit(env, AdmissionOutcome.EVICTED, gaps)

    def _admit(self, env: CapturedItem, outcome: AdmissionOutcome,
               gaps: list[tuple[int, GapReason]]) -> tuple[AdmissionOutcome, list[tuple[int, GapReason]]]:
        self.model.append(env)
        self.enqueued += 1
        self.high_water = max(self.high_water, len(self.model))
        return outcome, gaps

    def _drop(self, env: CapturedItem, reason: GapReason) -> tuple[AdmissionOutcome, list[tuple[int, GapReason]]]:
        if env.required:  # A9
            return self._latch()
        gap = [(env.global_sequence, reason)]
        self.lost += gap
        self.enqueued += 1
        self.degradations += reason is GapReason.DEGRADED
        return AdmissionOutcome.DROPPED, gap

    def _latch(self) -> tuple[AdmissionOutcome, list[tuple[int, GapReason]]]:
        self.fatal = True
        self.failures += 1
        return AdmissionOutcome.FATAL, []

    @precondition(lambda self: self.lane is not None)
    @rule(size=st.one_of(st.none(), st.integers(0, 9000)), required=st.booleans())
    def publish(self, size: int | None, required: bool) -> None:
        assert self.lane is not None
        env = self.factory.record("obs", required=required, size=size)
        adm = self.lane.try_publish(env)
        outcome, gaps = self._expect(env)
        assert adm.outcome is outcome
        assert [(g.first_global, g.reason) for g in adm.gaps] == gaps
        assert all(g.count == 1 and g.stream == "obs" for g in adm.gaps)

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
    def pop(self) -> None:
        assert self.lane is not None
        got = self.lane.pop()
        assert got == (self.model.popleft() if self.model else None)
        if got is not None:
            self.out.append(got)

    @precondition(lambda self: self.lane is not None)
    @rule()
    def take_gaps(self) -> None:
        assert self.lane is not None
        taken = self.lane.take_gaps()
        assert not any(a.extends(b) for a, b in itertools.pairwise(taken))  # G5: fully coalesced
        self.taken += [(s, g.reason) for g in taken for s in g.global_sequences]

    @invariant()
    def counters_match_the_model(self) -> None:
        if self.lane is None:
            return
        c = self.lane.counters()
        assert c.enqueued == c.dequeued + c.depth + c.lost
        assert (c.depth, c.depth_bytes, c.high_water) == (len(self.model), self._bytes(), self.high_water)
        assert (c.enqueued, c.dequeued, c.lost) == (self.enqueued, len(self.out), len(self.lost))
        assert (c.failures, c.degradations, c.degraded) == (self.failures, self.degradations, self.degraded)
        assert (c.fatal is not None) == self.fatal
        assert self.taken == self.lost[: len(self.taken)]


TestLaneMachine = LaneMachine.TestCase


def _carry(envelope: CapturedItem) -> tuple[str, CapturedItem]:
    return ("carrier", envelope)


def _materialize(item: object) -> CapturedItem:
    if isinstance(item, tuple):
        envelope: CapturedItem = item[1]
        return envelope
    assert isinstance(item, CapturedItem)
    return item


@given(spec=lane_specs(), script=envelope_scripts(required=False), pops=st.lists(st.integers(0, 3)))
def test_carriers_decide_and_account_like_envelopes(
    spec: LaneSpec, script: list[CapturedItem], pops: list[int]
) -> None:
    """try_admit of carriers decides, counts, gaps and drains exactly as try_publish of envelopes."""
    plain = Lane(spec, [False])
    carried = Lane(spec, [False], materialize=_materialize)
    for i, env in enumerate(script):
        assert carried.try_admit(_carry(env), env.size) == plain.try_publish(env)
        if pops and pops[i % len(pops)]:
            assert carried.drain(pops[i % len(pops)]) == plain.drain(pops[i % len(pops)])
        assert carried.take_gaps() == plain.take_gaps()
        assert carried.counters() == plain.counters()
    assert carried.drain() == plain.drain()


def test_carrier_lane_materializes_eviction_victims_and_passes_envelopes_through() -> None:
    """A6 on a carrier lane gaps the materialized victim; an envelope admitted beside carriers drains as is."""
    f = EnvelopeFactory()
    lane = Lane(
        LaneSpec(name=LaneName.NUMERIC, max_items=2, max_bytes=1000, overload=OverloadPolicy.DROP_OLDEST),
        [False], materialize=_materialize,
    )
    first, second, third = (_optional(f) for _ in range(3))
    assert lane.try_admit(_carry(first), first.size) is ACCEPTED
    assert lane.try_publish(second) is ACCEPTED
    admission = lane.try_admit(_carry(third), third.size)
    assert admission.outcome is AdmissionOutcome.EVICTED
    assert [g.first_global for g in admission.gaps] == [first.global_sequence]
    assert lane.drain() == [second, third]


def test_a1_answers_pressed_once_the_lane_holds_pressure_bytes() -> None:
    """A1 with pressure_bytes: ACCEPTED below it, PRESSED once the admitted bytes reach it, for both forms."""
    f = EnvelopeFactory()
    spec = LaneSpec(name=LaneName.NUMERIC, max_items=8, max_bytes=10_000)
    first, second, third = (_optional(f) for _ in range(3))
    lane = Lane(spec, [False], materialize=_materialize, pressure_bytes=20)  # two envelopes of 10 bytes
    assert lane.try_publish(first) is ACCEPTED
    assert lane.try_admit(_carry(second), second.size) is PRESSED
    assert lane.try_publish(third) is PRESSED
    lane.drain()
    assert lane.try_publish(_optional(f)) is ACCEPTED


def test_a1_answers_pressed_once_the_lane_holds_pressure_items() -> None:
    """A1 with pressure_items: ACCEPTED below it, the admitted PRESSED from it on, for both admission forms."""
    f = EnvelopeFactory()
    spec = LaneSpec(name=LaneName.NUMERIC, max_items=8, max_bytes=1000)
    lane = Lane(spec, [False], materialize=_materialize, pressure_items=2)
    first, second, third = (_optional(f) for _ in range(3))
    assert lane.try_publish(first) is ACCEPTED
    assert lane.try_admit(_carry(second), second.size) is PRESSED
    assert lane.try_publish(third) is PRESSED
    assert PRESSED.admitted
    assert not PRESSED.fatal
    lane.drain()
    assert lane.try_publish(_optional(f)) is ACCEPTED
