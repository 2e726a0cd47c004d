"""The output transaction's lease state table, written once, as data.

Every output transaction in the project runs this one table: the format's
``FilesystemLeases`` (``transaction.py``), the embedded host's ``FileOutputService``
(``fastsim_embedded.output``) and the in-memory ``FakeOutputService``
(``fastsim_record.testing.fake_output``).  They differ only in storage (a file, a
hidden staging file linked at the first flush, a ``BytesIO``) and in the checks a
storage makes before an event (inode, size, receipt, policy); *which* call is accepted
in which state is decided here and nowhere else.

    open_write -> write/flush -> seal -> open_readback -> read -> confirm -> commit
                                                  (or abort / reject / revoke before commit)

Rules: ``(state, event) -> next state``; ``=`` accepts the call and changes nothing
(an idempotent repeat: the storage does nothing either); every other pair raises
``LeaseError`` naming the call, the artifact and its state.

    | #  | state     | write | seal   | readback | read | confirm   | reject | commit    | abort   | revoke  |
    |----|-----------|-------|--------|----------|------|-----------|--------|-----------|---------|---------|
    | 1  | open      | open  | sealed | -        | -    | -         | failed | -         | aborted | revoked |
    | 2  | sealed    | -     | -      | sealed   | sealed | confirmed | failed | -       | aborted | revoked |
    | 3  | confirmed | -     | -      | -        | confirmed | -    | failed | committed | aborted | revoked |
    | 4  | failed    | -     | -      | -        | -    | -         | =      | -         | aborted | revoked |
    | 5  | committed | -     | -      | -        | -    | -         | -      | =         | -       | =       |
    | 6  | aborted   | -     | -      | -        | -    | -         | =      | -         | =       | =       |
    | 7  | revoked   | -     | -      | -        | -    | -         | =      | -         | =       | =       |

    * ``readback`` opens a new exact readback lease; it supersedes any earlier one (a
      storage closes the old one).  Only the current readback lease may ``confirm``.
    * ``confirm`` also needs a receipt that matches (size, completion, digest policy);
      a mismatch is refused and the state does not change (a matching one may follow).
    * ``reject`` latches a failed validation or a storage that changed under the lease
      (row 4): commit is refused from then on.
    * ``commit`` is idempotent (row 5) and ``abort`` after commit is refused: a committed
      artifact is never disposed of (``contracts/core-contract.md`` section 7).
    * ``revoke`` is Core's (after a finalizer overran, or at the end of a Run).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs

__all__ = [
    "IGNORED",
    "TRANSITIONS",
    "CoreError",
    "LeaseError",
    "LeaseEvent",
    "LeaseMachine",
    "LeaseState",
]


class CoreError(Exception):
    """Base of every error a Core (or this format's stand-alone output transaction)
    raises on purpose; ``str`` is one actionable line.  ``fastsim_contract.errors``
    re-exports it as the root of the contract's error tree."""


class LeaseError(CoreError):
    """An output lease was used with the wrong identity or out of order, or the output
    refused a name (``fastsim_contract.errors`` re-exports this class)."""


class LeaseState(enum.StrEnum):
    """Where one output transaction is (the module table's rows)."""

    OPEN = "open"
    SEALED = "sealed"
    CONFIRMED = "confirmed"
    FAILED = "failed"
    COMMITTED = "committed"
    ABORTED = "aborted"
    REVOKED = "revoked"


class LeaseEvent(enum.StrEnum):
    """What is asked of one output transaction (the module table's columns)."""

    WRITE = "write"
    SEAL = "seal"
    READBACK = "open_readback"
    READ = "read"
    CONFIRM = "confirm_validation"
    REJECT = "reject_validation"
    COMMIT = "commit"
    ABORT = "abort"
    REVOKE = "revoke"


_S, _E = LeaseState, LeaseEvent
_ENDED = (_S.ABORTED, _S.REVOKED)

#: The accepted transitions (module table): ``(state, event) -> next state``.
TRANSITIONS: Mapping[tuple[LeaseState, LeaseEvent], LeaseState] = {
    # row 1: open
    (_S.OPEN, _E.WRITE): _S.OPEN,
    (_S.OPEN, _E.SEAL): _S.SEALED,
    (_S.OPEN, _E.REJECT): _S.FAILED,
    # row 2: sealed
    (_S.SEALED, _E.READBACK): _S.SEALED,
    (_S.SEALED, _E.READ): _S.SEALED,
    (_S.SEALED, _E.CONFIRM): _S.CONFIRMED,
    (_S.SEALED, _E.REJECT): _S.FAILED,
    # row 3: confirmed
    (_S.CONFIRMED, _E.READ): _S.CONFIRMED,
    (_S.CONFIRMED, _E.REJECT): _S.FAILED,
    (_S.CONFIRMED, _E.COMMIT): _S.COMMITTED,
    # abort and revoke end every unfinished transaction (rows 1-4)
    **{(s, _E.ABORT): _S.ABORTED for s in (_S.OPEN, _S.SEALED, _S.CONFIRMED, _S.FAILED)},
    **{(s, _E.REVOKE): _S.REVOKED for s in (_S.OPEN, _S.SEALED, _S.CONFIRMED, _S.FAILED)},
}

#: Accepted repeats that change nothing (the ``=`` cells of the module table).
IGNORED: frozenset[tuple[LeaseState, LeaseEvent]] = frozenset({
    (_S.FAILED, _E.REJECT),
    (_S.COMMITTED, _E.COMMIT),
    (_S.COMMITTED, _E.REVOKE),
    *((s, e) for s in _ENDED for e in (_E.REJECT, _E.ABORT, _E.REVOKE)),
})


@attrs.define(eq=False, slots=True)
class LeaseMachine:
    """One transaction's state; ``accept`` asks the table, ``advance`` moves along it.

    A storage calls ``accept(event)`` before it acts (``LeaseError`` when the table
    refuses; ``False`` for an idempotent repeat, when it must do nothing), does its
    work, and then ``advance(event)``: a failed action leaves the state unchanged.
    """

    name: str
    state: LeaseState = LeaseState.OPEN

    def accept(self, event: LeaseEvent, call: str | None = None) -> bool:
        """Whether ``event`` must be acted on now; ``LeaseError`` when it is refused."""
        key = (self.state, event)
        if key in TRANSITIONS:
            return True
        if key in IGNORED:
            return False
        raise LeaseError(f"{call or event}: the transaction for {self.name!r} is {self.state}")

    def advance(self, event: LeaseEvent) -> LeaseState:
        """Take the accepted transition of ``event`` (after the storage acted)."""
        self.state = TRANSITIONS[(self.state, event)]
        return self.state

    def fire(self, event: LeaseEvent, call: str | None = None) -> bool:
        """``accept`` and, when it must act, ``advance`` at once (nothing to do in between)."""
        if self.accept(event, call):
            self.advance(event)
            return True
        return False

    @property
    def unfinished(self) -> bool:
        """Neither committed nor ended (a revocation or abort would act)."""
        return (self.state, LeaseEvent.REVOKE) in TRANSITIONS
