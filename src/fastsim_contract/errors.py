"""Errors a Core raises at the contract boundary.

    CoreError
    +-- SubscriptionRefused   unknown source, missing grant, or control subscribed late
    +-- GrantRefused          a grant the capture plan does not justify
    +-- LeaseError            wrong/foreign/revoked lease, or a transaction step out of order
    +-- TerminalError         finalizer registered after the cut, or publish after the cut
"""

from __future__ import annotations

__all__ = ["CoreError", "GrantRefused", "LeaseError", "SubscriptionRefused", "TerminalError"]


class CoreError(Exception):
    """Base of every error a Core raises on purpose; ``str`` is one actionable line."""


class SubscriptionRefused(CoreError):
    """The subscription request breaks the contract."""


class GrantRefused(CoreError):
    """The grant is not justified by the compiled capture plan."""


class LeaseError(CoreError):
    """An output lease was used with the wrong identity or out of order."""


class TerminalError(CoreError):
    """A terminal-coordinator rule was broken."""
