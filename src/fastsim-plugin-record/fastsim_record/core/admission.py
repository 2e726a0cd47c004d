"""Lane admission values: the overload policy, a lane's spec and counters, and the answer
of one admission (``Admission``), shared by ``lane`` and its callers.

Configuration rules (``overload_problem``; ``Lane`` raises ``LanePolicyError``):

| #  | rule                                                                           |
|----|--------------------------------------------------------------------------------|
| L1 | the critical lane is always ``fail_run``                                       |
| L2 | a lossy policy (drop_oldest, drop_newest, degrade_recording) is legal only     |
|    | when every stream in the lane is optional                                      |
| L3 | ``max_items`` and ``max_bytes`` are positive integers                          |

The admission rules A1-A9 themselves are ``lane``'s.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

import attrs

from fastsim_record.core.captured import LaneName
from fastsim_record.core.errors import RuleId
from fastsim_record.core.gaps import GapRecord

__all__ = [
    "ACCEPTED", "PRESSED", "Admission", "AdmissionOutcome", "AdmissionRule", "LaneCounters", "LaneSpec",
    "OverloadPolicy", "overload_problem",
]

class OverloadPolicy(enum.Enum):
    """What a full lane does with the next envelope."""

    FAIL_RUN = "fail_run"
    DROP_OLDEST = "drop_oldest"
    DROP_NEWEST = "drop_newest"
    DEGRADE_RECORDING = "degrade_recording"

    @property
    def lossy(self) -> bool:
        """True for the policies that lose data instead of failing the run."""
        return self is not OverloadPolicy.FAIL_RUN


class AdmissionOutcome(enum.Enum):
    """The answer of ``try_publish``."""

    ACCEPTED = "accepted"  # admitted, nothing lost
    EVICTED = "evicted"  # admitted after dropping the oldest envelope(s)
    DROPPED = "dropped"  # not admitted; lost as an exact gap
    FATAL = "fatal"  # not admitted; a fatal error is latched


class AdmissionRule(RuleId):
    """The admission rules of the module table."""

    OPEN = "A1"
    FATAL_LATCHED = "A2"
    DEGRADED = "A3"
    FULL_FAIL_RUN = "A4"
    FULL_DROP_NEWEST = "A5"
    FULL_EVICT_OLDEST = "A6"
    NEVER_FITS = "A7"
    FULL_DEGRADE = "A8"
    REQUIRED_LOSS = "A9"


@attrs.frozen
class Admission:
    """Decision for one ``try_publish``: outcome, gaps it created, a reason and the rule."""

    outcome: AdmissionOutcome
    gaps: tuple[GapRecord, ...] = ()
    reason: str = ""
    rule: AdmissionRule = AdmissionRule.OPEN  # the admission rule that decided (A1-A9)

    @property
    def admitted(self) -> bool:
        """True when the envelope entered the lane."""
        return self.outcome is AdmissionOutcome.ACCEPTED or self.outcome is AdmissionOutcome.EVICTED

    @property
    def fatal(self) -> bool:
        """True when the lane has latched a fatal error."""
        return self.outcome is AdmissionOutcome.FATAL

    @property
    def required_loss(self) -> bool:
        """True when the refusal is rule A9: a lossy rule would have lost a required envelope."""
        return self.rule is AdmissionRule.REQUIRED_LOSS


#: The one pre-allocated answer for the common case (rule A1).
ACCEPTED = Admission(AdmissionOutcome.ACCEPTED)
#: Rule A1 when the lane then holds at least ``pressure_items`` items or ``pressure_bytes``
#: bytes: admitted, drain soon.
PRESSED = Admission(AdmissionOutcome.ACCEPTED, (), "lane under pressure", AdmissionRule.OPEN)


@attrs.frozen(kw_only=True)
class LaneSpec:
    """A lane's configured limits and overload policy."""

    name: LaneName
    max_items: int
    max_bytes: int
    overload: OverloadPolicy = OverloadPolicy.FAIL_RUN


def overload_problem(spec: LaneSpec, stream_required: Iterable[bool]) -> str | None:
    """Rules L1-L3: a one-line problem with ``spec`` for its streams, or ``None``."""
    if spec.max_items <= 0 or spec.max_bytes <= 0:
        return f"queues.{spec.name.value}: max_items and max_bytes must be positive"
    if not spec.overload.lossy:
        return None
    if spec.name is LaneName.CRITICAL:
        return f"queues.critical.overload: the critical lane is always fail_run, not {spec.overload.value}"
    if any(stream_required):
        return (
            f"queues.{spec.name.value}.overload: {spec.overload.value} is legal only when every "
            f"stream in the {spec.name.value} lane is optional; use fail_run"
        )
    return None


@attrs.frozen
class LaneCounters:
    """A snapshot of one lane's counters for the finalizer summary."""

    lane: LaneName
    capacity_items: int
    capacity_bytes: int
    depth: int
    depth_bytes: int
    high_water: int
    enqueued: int
    dequeued: int
    lost: int
    failures: int
    degradations: int
    degraded: bool
    fatal: str | None
