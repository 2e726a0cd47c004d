"""The terminal-cut fence: may the artifact be committed?

Given the ``TerminalCut`` (Core's ``TerminalSemanticCut``: the final global sequence
and the final capture sequence of each selected source) and the worker's
``FenceEvidence``, ``decide`` answers commit or abort.  It commits only when every
rule holds; otherwise it aborts and names every rule that failed, in rule order.

| #  | rule (commit requires)                                                        | README source                     |
|----|-------------------------------------------------------------------------------|-----------------------------------|
| F1 | a terminal cut was received                                                   | never commit after a missing cut  |
| F2 | every selected source was consumed exactly through its cut sequence, no       | commits only after consuming      |
|    | source outside the cut was consumed, and nothing beyond the cut was released  | every selected source through cut |
| F3 | every global sequence at or below the cut was released or explained by a gap  | never commit after a hole         |
| F4 | no required stream lost data                                                  | required-stream loss is fatal     |
| F5 | every calibration obligation is met                                           | calibration fails closed          |
| F6 | no fatal error is latched (lane, pump, worker, encoder)                       | latched error prevents success    |

A commit is ``degraded`` when any gap record was written (declared optional loss).

The README's "commit is never attempted after ..." list, and who decides each item:

| README condition                 | decided by                                                  |
|----------------------------------|-------------------------------------------------------------|
| an unexplained global seq. hole  | this fence, F3 (the worker also latches a hole that         |
|                                  | outgrows every lane's capacity early, which is F6)          |
| a missing terminal cut           | this fence, F1                                              |
| encoder bound violation          | the worker latches the encoder's error; this fence, F6      |
| corruption                       | the output transaction after a commit decision: structural  |
|                                  | readback validation fails, nothing is confirmed or committed|
| wrong readback-lease identity    | the output transaction: ``confirm_validation`` needs the    |
|                                  | exact readback lease; Core refuses any other one            |
| worker timeout                   | the finalizer: at its deadline it cancels the worker before |
|                                  | the transaction completes; this fence is never consulted    |
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from fastsim_record.core.errors import RuleId
from fastsim_record.core.gaps import GapLedger
from fastsim_record.core.merge import OrderedMerge

__all__ = [
    "FenceDecision",
    "FenceEvidence",
    "FenceRule",
    "FenceViolation",
    "TerminalCut",
    "decide",
    "gather_evidence",
]


class FenceRule(RuleId):
    """The numbered fence rules."""

    CUT_RECEIVED = "F1"
    SOURCES_CONSUMED = "F2"
    NO_HOLE = "F3"
    NO_REQUIRED_LOSS = "F4"
    CALIBRATION_MET = "F5"
    NO_FATAL = "F6"


def _pairs(mapping: Mapping[str, int] | tuple[tuple[str, int], ...]) -> tuple[tuple[str, int], ...]:
    items = mapping.items() if isinstance(mapping, Mapping) else mapping
    return tuple(sorted((str(k), int(v)) for k, v in items))


@attrs.frozen
class TerminalCut:
    """The core's view of Core's ``TerminalSemanticCut``."""

    final_global_sequence: int
    source_final: tuple[tuple[str, int], ...] = attrs.field(converter=_pairs, default=())

    @property
    def sources(self) -> dict[str, int]:
        """Selected source -> final capture sequence."""
        return dict(self.source_final)


@attrs.frozen(kw_only=True)
class FenceEvidence:
    """What the worker knows when the cut arrives (after draining every lane)."""

    released_through: int
    source_progress: tuple[tuple[str, int], ...] = attrs.field(converter=_pairs, default=())
    holes: tuple[tuple[int, int], ...] = ()
    held: int = 0
    required_losses: tuple[str, ...] = ()
    calibration_violations: tuple[str, ...] = ()
    fatal_errors: tuple[str, ...] = ()
    gaps: int = 0


@attrs.frozen
class FenceViolation:
    """One failed fence rule and a one-line reason."""

    rule: FenceRule
    reason: str


@attrs.frozen
class FenceDecision:
    """Commit or abort, with every failed rule."""

    commit: bool
    degraded: bool
    violations: tuple[FenceViolation, ...] = ()

    @property
    def reason(self) -> str:
        """One line: the first failed rule, or why commit is allowed."""
        if self.violations:
            first = self.violations[0]
            more = f" (+{len(self.violations) - 1} more)" if len(self.violations) > 1 else ""
            return f"fence rule {first.rule}: {first.reason}{more}"
        return "all fence rules hold" + (" (degraded: declared optional loss)" if self.degraded else "")


def decide(cut: TerminalCut | None, evidence: FenceEvidence) -> FenceDecision:
    """Rules F1-F6: commit only when every rule holds."""
    out: list[FenceViolation] = []
    if cut is None:
        out.append(FenceViolation(FenceRule.CUT_RECEIVED, "no terminal cut was received"))
    else:
        out.extend(_consumed(cut, evidence))
        final = cut.final_global_sequence
        if evidence.released_through < final:
            holes = [h for h in evidence.holes if h[0] <= final] or [(evidence.released_through + 1, final)]
            where = ", ".join(f"{a}..{b}" if a != b else f"{a}" for a, b in holes[:3])
            out.append(
                FenceViolation(
                    FenceRule.NO_HOLE,
                    f"unexplained global sequence hole at {where} ({evidence.held} records held)",
                )
            )
    if evidence.required_losses:
        streams = ", ".join(sorted(set(evidence.required_losses)))
        out.append(FenceViolation(FenceRule.NO_REQUIRED_LOSS, f"required stream lost data: {streams}"))
    if evidence.calibration_violations:
        out.append(FenceViolation(FenceRule.CALIBRATION_MET, evidence.calibration_violations[0]))
    if evidence.fatal_errors:
        out.append(FenceViolation(FenceRule.NO_FATAL, evidence.fatal_errors[0]))
    return FenceDecision(commit=not out, degraded=evidence.gaps > 0, violations=tuple(out))


def _consumed(cut: TerminalCut, evidence: FenceEvidence) -> list[FenceViolation]:
    problems: list[str] = []
    final = cut.final_global_sequence
    if evidence.released_through > final:
        problems.append(f"released global sequence {evidence.released_through} beyond cut {final}")
    progress = dict(evidence.source_progress)
    for source, want in cut.source_final:
        got = progress.get(source, 0)
        if got != want:
            side = "short of" if got < want else "beyond"
            problems.append(f"source {source!r} consumed through {got}, {side} cut {want}")
    for source in sorted(set(progress) - set(dict(cut.source_final))):
        problems.append(f"source {source!r} is not in the terminal cut")
    if not problems:
        return []
    return [FenceViolation(FenceRule.SOURCES_CONSUMED, "; ".join(problems))]


def gather_evidence(
    cut: TerminalCut | None,
    merge: OrderedMerge,
    ledger: GapLedger,
    *,
    calibration_violations: tuple[str, ...] = (),
    fatal_errors: tuple[str, ...] = (),
    through: int | None = None,
) -> FenceEvidence:
    """Collect the fence evidence from the worker's merge and gap ledger.

    Holes are looked for up to ``through``: by default the cut's final global sequence
    (or, without a cut, what was released).
    """
    if through is None:
        through = cut.final_global_sequence if cut is not None else merge.released_through
    return FenceEvidence(
        released_through=merge.released_through,
        source_progress=merge.source_progress(),
        holes=tuple(merge.holes(through)),
        held=merge.held,
        required_losses=tuple(g.stream for g in ledger.required_losses),
        calibration_violations=calibration_violations,
        fatal_errors=fatal_errors,
        gaps=ledger.gap_count,
    )
