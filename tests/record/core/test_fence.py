"""Terminal-cut fence: one example per numbered rule F1-F6 and commit-iff-rules property."""

from __future__ import annotations

from hypothesis import given

from fastsim_record.core import (
    FenceEvidence,
    FenceRule,
    GapLedger,
    GapReason,
    GapRecord,
    OrderedMerge,
    TerminalCut,
    decide,
    gather_evidence,
)
from fastsim_record.testing.envelopes import EnvelopeFactory
from fastsim_record.testing.strategies import fence_cases

CUT = TerminalCut(10, {"lifecycle": 4, "observations": 6})


def _good(**changes: object) -> FenceEvidence:
    base: dict[str, object] = {
        "released_through": 10,
        "source_progress": {"lifecycle": 4, "observations": 6},
    }
    base.update(changes)
    return FenceEvidence(**base)  # type: ignore[arg-type]


def _rules(cut: TerminalCut | None, evidence: FenceEvidence) -> list[FenceRule]:
    return [v.rule for v in decide(cut, evidence).violations]


def test_all_rules_hold_commits() -> None:
    """F1-F6 all hold: the fence commits, not degraded."""
    decision = decide(CUT, _good())
    assert decision.commit
    assert not decision.degraded
    assert decision.reason == "all fence rules hold"


def test_declared_gaps_commit_degraded() -> None:
    """Declared optional loss still commits, marked degraded."""
    decision = decide(CUT, _good(gaps=2))
    assert decision.commit
    assert decision.degraded


def test_f1_missing_cut_aborts() -> None:
    """F1: without a terminal cut the fence aborts."""
    assert _rules(None, _good()) == [FenceRule.CUT_RECEIVED]


def test_f2_source_short_of_cut_aborts() -> None:
    """F2: a selected source consumed short of its cut sequence aborts."""
    ev = _good(source_progress={"lifecycle": 4, "observations": 5})
    assert _rules(CUT, ev) == [FenceRule.SOURCES_CONSUMED]
    assert "short of cut 6" in decide(CUT, ev).reason


def test_f2_records_beyond_cut_abort() -> None:
    """F2: a release beyond the cut's final global sequence aborts."""
    assert _rules(CUT, _good(released_through=11)) == [FenceRule.SOURCES_CONSUMED]


def test_f2_source_outside_cut_aborts() -> None:
    """F2: a consumed source that the cut does not name aborts."""
    ev = _good(source_progress={"lifecycle": 4, "observations": 6, "control": 1})
    assert _rules(CUT, ev) == [FenceRule.SOURCES_CONSUMED]


def test_f3_unexplained_hole_aborts() -> None:
    """F3: a global sequence at or below the cut that was never released aborts."""
    ev = _good(released_through=7, holes=((8, 8),), held=2)
    assert FenceRule.NO_HOLE in _rules(CUT, ev)
    assert "hole at 8" in decide(CUT, ev).violations[-1].reason


def test_f4_required_loss_aborts() -> None:
    """F4: any required-stream loss aborts."""
    assert _rules(CUT, _good(required_losses=("numeric.tick",))) == [FenceRule.NO_REQUIRED_LOSS]


def test_f5_unmet_calibration_obligation_aborts() -> None:
    """F5: an unmet calibration obligation aborts."""
    assert _rules(CUT, _good(calibration_violations=("camera 'a'",))) == [FenceRule.CALIBRATION_MET]


def test_f6_latched_fatal_aborts() -> None:
    """F6: a latched fatal error aborts even when everything else holds."""
    decision = decide(CUT, _good(fatal_errors=("media lane overflow",)))
    assert [v.rule for v in decision.violations] == [FenceRule.NO_FATAL]
    assert decision.reason == "fence rule F6: media lane overflow"


def test_gather_evidence_from_merge_and_ledger() -> None:
    """gather_evidence reads progress, holes and gaps from the worker's merge and ledger."""
    f = EnvelopeFactory()
    envs = [f.record("s", required=False) for _ in range(4)]
    merge, ledger = OrderedMerge(), GapLedger()
    merge.push(envs[0])
    gap = GapRecord.for_envelope(envs[1], GapReason.DROP_NEWEST)
    merge.explain(gap)
    merge.push(envs[3])
    for item in merge.release():
        if isinstance(item, GapRecord):
            ledger.record(item)
    cut = TerminalCut(4, f.capture_through())
    decision = decide(cut, gather_evidence(cut, merge, ledger))
    assert [v.rule for v in decision.violations] == [FenceRule.SOURCES_CONSUMED, FenceRule.NO_HOLE]
    merge.push(envs[2])
    merge.release()
    decision = decide(cut, gather_evidence(cut, merge, ledger))
    assert decision.commit
    assert decision.degraded


@given(case=fence_cases())
def test_commits_iff_every_rule_holds(case: tuple[TerminalCut | None, FenceEvidence]) -> None:
    """The fence commits iff F1-F6 hold, and names exactly the failed rules in order (oracle)."""
    cut, ev = case
    progress = dict(ev.source_progress)
    failed: list[FenceRule] = []
    if cut is None:
        failed.append(FenceRule.CUT_RECEIVED)
    else:
        final = cut.final_global_sequence
        if (
            ev.released_through > final
            or any(progress.get(s, 0) != n for s, n in cut.sources.items())
            or not set(progress) <= set(cut.sources)
        ):
            failed.append(FenceRule.SOURCES_CONSUMED)
        if ev.released_through < final:
            failed.append(FenceRule.NO_HOLE)
    if ev.required_losses:
        failed.append(FenceRule.NO_REQUIRED_LOSS)
    if ev.calibration_violations:
        failed.append(FenceRule.CALIBRATION_MET)
    if ev.fatal_errors:
        failed.append(FenceRule.NO_FATAL)
    decision = decide(cut, ev)
    assert [v.rule for v in decision.violations] == failed
    assert decision.commit == (not failed)
    assert decision.degraded == (ev.gaps > 0)


def test_gather_evidence_looks_for_holes_through_the_given_sequence() -> None:
    """gather_evidence(through=n) reports the unreleased tail up to n as a hole."""
    f = EnvelopeFactory()
    merge = OrderedMerge()
    merge.push(f.record("s"))
    merge.release()
    assert gather_evidence(None, merge, GapLedger()).holes == ()
    assert gather_evidence(None, merge, GapLedger(), through=3).holes == ((2, 3),)
