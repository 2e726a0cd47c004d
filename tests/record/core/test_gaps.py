"""Gap accounting: rules G1-G6, and gaps that exactly cover the lost sequences."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fastsim_record.core import (
    CapturedItem,
    GapLedger,
    GapReason,
    GapRecord,
    Lane,
    LaneName,
    LaneSpec,
    OrderedMerge,
    coalesce,
)
from fastsim_record.testing.envelopes import EnvelopeFactory
from fastsim_record.testing.strategies import envelope_scripts, lane_specs


def test_g1_gap_covers_exactly_one_lost_envelope() -> None:
    """G1: a lost envelope's gap names its stream, source, lane, generation and sequences."""
    env = EnvelopeFactory(generation=2).record("cameras.a.rgb", source="cameras", required=False)
    gap = GapRecord.for_envelope(env, GapReason.DROP_OLDEST)
    assert (gap.stream, gap.source, gap.lane, gap.generation) == ("cameras.a.rgb", "cameras", LaneName.MEDIA, 2)
    assert list(gap.global_sequences) == [env.global_sequence]
    assert (gap.first_capture, gap.last_capture, gap.count) == (1, 1, 1)


def test_g3_any_gap_marks_degraded_and_g4_required_gap_is_a_required_loss() -> None:
    """G3/G4: the ledger turns degraded on any gap and lists gaps on required streams."""
    f = EnvelopeFactory()
    ledger = GapLedger()
    assert not ledger.degraded
    ledger.record(GapRecord.for_envelope(f.record("opt", required=False), GapReason.DROP_NEWEST))
    assert ledger.degraded
    assert ledger.required_losses == ()
    req = GapRecord.for_envelope(f.record("req", required=True), GapReason.DROP_NEWEST)
    ledger.record(req)
    assert ledger.required_losses == (req,)


def test_g5_coalesce_merges_only_contiguous_runs_of_one_stream() -> None:
    """G5: adjacent gaps of one stream coalesce; another stream or a record breaks the run."""
    f = EnvelopeFactory()
    a1, a2, b, a4 = (f.record(s, required=False) for s in ("a", "a", "b", "a"))
    g1, g2, gb, g4 = (GapRecord.for_envelope(e, GapReason.DROP_NEWEST) for e in (a1, a2, b, a4))
    merged = coalesce([g1, g2, b, g4])
    assert len(merged) == 3
    first = merged[0]
    assert isinstance(first, GapRecord)
    assert (first.first_global, first.last_global, first.count) == (1, 2, 2)
    assert merged[1] is b
    assert coalesce([g2, gb]) == [g2, gb]


@given(
    spec=lane_specs(lossy=True, max_items=4),
    script=envelope_scripts(max_size=40, required=False, barriers=False),
    drains=st.lists(st.integers(0, 3), min_size=1),
)
def test_gaps_exactly_cover_lost_sequences(spec: LaneSpec, script: list[CapturedItem], drains: list[int]) -> None:
    """G1/G2/G6: merged output covers 1..n once; gaps cover exactly the lost envelopes."""
    lanes = {name: Lane(LaneSpec(name=name, max_items=spec.max_items, max_bytes=spec.max_bytes,
                                 overload=spec.overload), [False])
             for name in (LaneName.NUMERIC, LaneName.MEDIA)}
    critical = Lane(LaneSpec(name=LaneName.CRITICAL, max_items=10_000, max_bytes=1 << 40))
    merge, ledger = OrderedMerge(), GapLedger()
    out: list[CapturedItem | GapRecord] = []
    lost: set[int] = set()

    def pump(n: int) -> None:
        for lane in (critical, *lanes.values()):
            for env in lane.drain(n):
                assert merge.push(env) is None
            for gap in lane.take_gaps():
                lost.update(gap.global_sequences)
                assert merge.explain(gap) is None
        for item in merge.release():
            if isinstance(item, GapRecord):
                ledger.record(item)
            out.append(item)

    for i, env in enumerate(script):
        lane = critical if env.lane is LaneName.CRITICAL else lanes[env.lane]
        assert not lane.try_publish(env).fatal
        pump(drains[i % len(drains)])
    pump(10_000)
    covered = [s for item in out for s in (item.global_sequences if isinstance(item, GapRecord)
                                            else [item.global_sequence])]
    assert covered == list(range(1, len(script) + 1))
    assert {s for item in out if isinstance(item, GapRecord) for s in item.global_sequences} == lost
    for name, lane in lanes.items():
        assert ledger.lost(name) == lane.counters().lost
    assert ledger.degraded == bool(lost)


@given(script=envelope_scripts(max_size=30, required=False, barriers=False), data=st.data())
def test_coalesce_preserves_exact_coverage(script: list[CapturedItem], data: st.DataObject) -> None:
    """G5: coalescing never changes which global sequences the output covers, or its order."""
    lost = data.draw(st.sets(st.integers(1, max(1, len(script)))))
    items: list[CapturedItem | GapRecord] = [
        GapRecord.for_envelope(e, GapReason.DEGRADED) if e.global_sequence in lost else e for e in script
    ]
    merged = coalesce(items)

    def seqs(xs: list[CapturedItem | GapRecord]) -> list[int]:
        return [s for x in xs for s in (x.global_sequences if isinstance(x, GapRecord) else [x.global_sequence])]

    assert seqs(merged) == seqs(items)
    assert len(merged) <= len(items)
    assert all(g.last_capture - g.first_capture == g.last_global - g.first_global
               for g in merged if isinstance(g, GapRecord))
