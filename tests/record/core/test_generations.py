"""Pump validation S1-S4 and the per-generation stream index P1."""

from __future__ import annotations

import attrs
from hypothesis import given
from hypothesis import strategies as st

from fastsim_record.core import CapturedItem, SourceContinuity, StreamIndexer
from fastsim_record.testing.envelopes import EnvelopeFactory
from fastsim_record.testing.strategies import envelope_scripts


def _obs(n: int) -> tuple[EnvelopeFactory, list[CapturedItem]]:
    f = EnvelopeFactory()
    return f, [f.record("numeric.tick") for _ in range(n)]


def test_s1_foreign_source_is_rejected() -> None:
    """S1: an envelope of another source is a discontinuity."""
    v = SourceContinuity("lifecycle").check(_obs(1)[1][0])
    assert v is not None
    assert v.rule == "S1"


def test_s2_capture_sequence_must_continue() -> None:
    """S2: a skipped capture_sequence is a discontinuity naming expected and actual."""
    _, envs = _obs(3)
    c = SourceContinuity("observations")
    assert c.check(envs[0]) is None
    v = c.check(envs[2])
    assert v is not None
    assert (v.rule, v.expected, v.actual) == ("S2", 2, 3)
    assert c.last_capture == 3


def test_s3_global_sequence_must_increase() -> None:
    """S3: a global sequence that does not increase is a discontinuity."""
    _, envs = _obs(2)
    c = SourceContinuity("observations")
    assert c.check(attrs.evolve(envs[1], capture_sequence=1)) is None
    v = c.check(attrs.evolve(envs[0], capture_sequence=2))
    assert v is not None
    assert v.rule == "S3"


def test_s4_barrier_opens_exactly_the_next_generation() -> None:
    """S4: a barrier opens generation+1; a record must carry the current generation."""
    f, envs = _obs(1)
    c = SourceContinuity("observations")
    assert c.check(envs[0]) is None
    assert c.check(f.barrier()) is None
    assert c.generation == 1
    assert c.check(f.record("numeric.tick")) is None
    v = c.check(attrs.evolve(f.record("numeric.tick"), generation=2))
    assert v is not None
    assert v.rule == "S4"


def test_s4_sources_without_barriers_only_never_fall() -> None:
    """S4: on a barrier-free source the generation may rise but never fall."""
    f = EnvelopeFactory()
    c = SourceContinuity("lifecycle", carries_barriers=False)
    assert c.check(f.record("lifecycle", source="lifecycle")) is None
    f.generation = 3
    assert c.check(f.record("lifecycle", source="lifecycle")) is None
    f.generation = 2
    v = c.check(f.record("lifecycle", source="lifecycle"))
    assert v is not None
    assert v.rule == "S4"


def test_channel_sequence_is_diagnostic_only() -> None:
    """capture_sequence decides continuity; a jumping channel_sequence is ignored."""
    f = EnvelopeFactory()
    c = SourceContinuity("observations")
    for ch in (7, 3, 99):
        assert c.check(f.record("numeric.tick", channel_sequence=ch)) is None


@given(script=envelope_scripts(max_size=40))
def test_factory_scripts_pass_pump_validation(script: list[CapturedItem]) -> None:
    """Every correctly stamped script passes S1-S4 on each of its sources."""
    checkers: dict[str, SourceContinuity] = {}
    for env in script:
        c = checkers.setdefault(env.source, SourceContinuity(env.source, carries_barriers=env.source == "observations"))
        assert c.check(env) is None


def test_p1_stream_index_restarts_per_generation() -> None:
    """P1: a stream's record index restarts at 0 in each generation."""
    ix = StreamIndexer()
    assert [ix.next_index("s", 0) for _ in range(3)] == [0, 1, 2]
    assert ix.next_index("t", 0) == 0
    assert [ix.next_index("s", 1) for _ in range(2)] == [0, 1]



@given(script=envelope_scripts(), skip=st.sets(st.integers(0, 40)))
def test_advance_agrees_with_check(script: list[CapturedItem], skip: set[int]) -> None:
    """advance(scalars) continues exactly where check's fast path would, and changes nothing otherwise."""
    fast = SourceContinuity("observations")
    full = SourceContinuity("observations")
    for i, env in enumerate(script):
        if env.source != "observations" or i in skip:  # skipping makes S2 discontinuities
            continue
        before = (fast.last_capture, fast.generation)
        if not env.is_barrier and fast.advance(env.global_sequence, env.capture_sequence, env.generation):
            assert full.check(env) is None
        else:
            assert (fast.last_capture, fast.generation) == before
            assert fast.check(env) == full.check(env)
        assert (fast.last_capture, fast.generation) == (full.last_capture, full.generation)
