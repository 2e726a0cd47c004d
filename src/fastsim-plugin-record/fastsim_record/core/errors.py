"""Contract violations the pure core signals by raising, and its rule-id type.

The core answers ordinary events with decision values (an ``Admission``, a
``MergeConflict``, a ``FenceDecision``...).  It raises only when a caller breaks the
core's own contract at construction time or hands it impossible arguments, and then
only these plain standard-library exceptions.  Each carries a one-line ``reason`` and
structured ``fields``; the pipeline translates them into ``fastsim_record.errors``
(``ReasonedError`` is also the base of that plugin hierarchy, so both read alike).

    ReasonedError
    +-- DomainError           base of the domain core's exceptions
        +-- LanePolicyError   a lane's overload policy is illegal for its streams
        +-- InvalidLimits     a lane or batch limit is not a positive integer

Every numbered rule table of the core (admission ``A1``-``A9``, continuity ``S1``-``S4``,
calibration ``C1``-``C7``, fence ``F1``-``F6``) is one :class:`RuleId` enum whose values
are the ids as printed in the tables, so ``str(rule)`` is ``"A9"`` everywhere.
"""

from __future__ import annotations

import enum

__all__ = [
    "DomainError",
    "InvalidLimits",
    "LanePolicyError",
    "ReasonedError",
    "RuleId",
]


class RuleId(enum.StrEnum):
    """Base of the core's rule-id enums: each member's value is its table id (``"A9"``)."""


class ReasonedError(Exception):
    """An exception with a one-line ``reason`` (its ``str``) and structured ``fields``."""

    def __init__(self, reason: str, **fields: object) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fields: dict[str, object] = dict(fields)

    def __str__(self) -> str:
        return self.reason


class DomainError(ReasonedError):
    """Base of the domain core's exceptions (distinct from the contract's ``CoreError``)."""


class LanePolicyError(DomainError):
    """A lossy overload policy was chosen for a lane that holds a required stream."""


class InvalidLimits(DomainError):
    """A lane or batch limit is not a positive integer."""
