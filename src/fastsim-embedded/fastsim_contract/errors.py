"""Errors a Core raises at the contract boundary.

    CoreError                 (fastsim_recording_format.lease: the lowest layer owns it)
    +-- LeaseError            wrong/foreign/revoked lease, or a transaction step out of
    |                         order (the same class the format's output transaction raises)
    +-- SubscriptionRefused   unknown source, missing grant, or control subscribed late
    +-- GrantRefused          a grant the capture plan does not justify
    +-- TerminalError         finalizer registered after the cut, or publish after the cut

``CoreError`` and ``LeaseError`` are defined once, with the output transaction's lease
table in the format package, and re-exported here: there is one of each.
"""

from __future__ import annotations

from fastsim_recording_format.lease import CoreError, LeaseError

__all__ = ["CoreError", "GrantRefused", "LeaseError", "SubscriptionRefused", "TerminalError"]


class SubscriptionRefused(CoreError):
    """The subscription request breaks the contract."""


class GrantRefused(CoreError):
    """The grant is not justified by the compiled capture plan."""


class TerminalError(CoreError):
    """A terminal-coordinator rule was broken."""
