"""Contract violations the pure core signals by raising.

The core answers ordinary events with decision values (an ``Admission``, a
``MergeConflict``, a ``FenceDecision``...).  It raises only when a caller breaks the
core's own contract at construction time or hands it impossible arguments, and then
only these plain standard-library exceptions.  Each carries a one-line ``reason`` and
structured ``fields``; the pipeline translates them into ``fastsim_record.errors``.

    CoreError
    +-- LanePolicyError   a lane's overload policy is illegal for its streams
    +-- InvalidLimits     a lane or batch limit is not a positive integer
    +-- CoreContractError an argument that can never be valid (unknown camera, ...)
"""

from __future__ import annotations

__all__ = ["CoreContractError", "CoreError", "InvalidLimits", "LanePolicyError"]


class CoreError(Exception):
    """Base of the core's exceptions: one-line ``reason`` plus structured ``fields``."""

    def __init__(self, reason: str, **fields: object) -> None:
        super().__init__(reason)
        self.reason = reason
        self.fields: dict[str, object] = dict(fields)

    def __str__(self) -> str:
        return self.reason


class LanePolicyError(CoreError):
    """A lossy overload policy was chosen for a lane that holds a required stream."""


class InvalidLimits(CoreError):
    """A lane or batch limit is not a positive integer."""


class CoreContractError(CoreError):
    """An argument that can never be valid was passed to the core."""
