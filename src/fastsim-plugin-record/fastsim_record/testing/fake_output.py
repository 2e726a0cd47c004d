"""An in-memory Core output service that records every call and injects faults.

Faults (``OutputFaults``):

    | # | fault            | effect                                                    |
    |---|------------------|-----------------------------------------------------------|
    | 1 | slow_write_s     | every ``write`` sleeps this long first                    |
    | 2 | stall            | ``write`` blocks until ``release_stall()``                 |
    | 3 | fail_write_after | the n-th ``write`` (1-based) raises ``OSError``            |
    | 4 | corrupt_readback | the readback lease serves the bytes with two bytes flipped|
    | 5 | wrong_readback   | ``open_readback`` returns a lease bound to another write  |
    | 6 | fail_open_write  | ``open_write`` raises ``OSError``                          |

Which call is accepted in which state is the one lease table of
``fastsim_recording_format.lease``, as in every Core output service; on top of it, as a
Core does (``LeaseError`` otherwise):

    | # | rule                                                                       |
    |---|----------------------------------------------------------------------------|
    | 1 | names are bare file names; writes only while open and not closed           |
    | 2 | confirm only with the latest readback lease of a sealed write, and a       |
    |   | receipt that matches (``fastsim_contract.output_service.receipt_problem``) |
    | 3 | abort and ``revoke`` (Core, after a finalizer overran) never publish; the   |
    |   | staging bytes are kept as ``<name>.incomplete``, quarantined or deleted by |
    |   | the output policy                                                          |
    | 4 | a lease is bound to the component whose view opened it (``view``)         |
    | 5 | once the winning completion is ``failed``, commit is refused, unless the   |
    |   | Core side (not a plugin) asked to keep what was recorded (contract FR2)    |
"""

from __future__ import annotations

import hashlib
import io
import threading
import time
from collections.abc import Callable, Mapping

import attrs

from fastsim_contract.errors import LeaseError
from fastsim_contract.output_service import ComponentOutputs, receipt_problem
from fastsim_recording_format.lease import LeaseEvent, LeaseMachine, LeaseState

__all__ = ["FakeOutputService", "FakeReadbackLease", "FakeWriteLease", "OutputFaults"]


@attrs.define
class OutputFaults:
    """Mutable fault switches; tests flip them before or during a run."""

    slow_write_s: float = 0.0
    stall: bool = False
    fail_write_after: int | None = None
    corrupt_readback: bool = False
    wrong_readback: bool = False
    fail_open_write: bool = False


@attrs.define(eq=False)
class FakeWriteLease:
    """An opaque in-memory write lease."""

    service: FakeOutputService
    name: str
    buffer: io.BytesIO = attrs.field(factory=io.BytesIO)
    machine: LeaseMachine = attrs.field(
        default=attrs.Factory(lambda lease: LeaseMachine(lease.name), takes_self=True)
    )
    closed: bool = False  # ``close()``: no more writes, seal still accepted
    writes: int = 0
    readback: FakeReadbackLease | None = None
    component: str = ""

    @property
    def state(self) -> str:
        """The lease table's state (``fastsim_recording_format.lease``)."""
        return self.machine.state.value

    @property
    def confirmed(self) -> bool:
        """A receipt was accepted (the write reached ``confirmed``)."""
        return self.machine.state in (LeaseState.CONFIRMED, LeaseState.COMMITTED)

    def write(self, data: bytes | memoryview) -> int:
        """Append bytes (subject to the slow/stall/fail faults)."""
        faults = self.service.faults
        if faults.slow_write_s:
            time.sleep(faults.slow_write_s)
        if faults.stall:
            self.service.stalled.set()
            self.service.unstall.wait()
        self.machine.accept(LeaseEvent.WRITE, "write")
        if self.closed:
            raise LeaseError(f"write: the lease for {self.name!r} is closed")
        self.writes += 1
        if faults.fail_write_after is not None and self.writes >= faults.fail_write_after:
            raise OSError(5, "injected write failure")
        return self.buffer.write(data)

    def flush(self) -> None:
        """No-op flush."""

    def close(self) -> None:
        """Close for writing (idempotent)."""
        self.closed = True

    def data(self) -> bytes:
        """The bytes written so far."""
        return self.buffer.getvalue()


@attrs.define(eq=False)
class FakeReadbackLease:
    """A seekable read-only view of one sealed write."""

    write: FakeWriteLease
    stream: io.BytesIO
    closed: bool = False
    bytes_read: int = 0

    def read(self, n: int = -1) -> bytes:
        """Read up to ``n`` bytes (all when negative)."""
        data = self.stream.read(n)
        self.bytes_read += len(data)
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        """Seek like a file."""
        return self.stream.seek(offset, whence)

    def tell(self) -> int:
        """Current position."""
        return self.stream.tell()

    def close(self) -> None:
        """Close (idempotent)."""
        self.closed = True





def _bad_name(name: object) -> bool:
    return (
        not isinstance(name, str) or not name or name in (".", "..") or "/" in name
        or "\\" in name or "\x00" in name
    )


@attrs.define(eq=False)
class FakeOutputService:
    """Core's output transaction, in memory; ``calls`` logs every step in order."""

    faults: OutputFaults = attrs.field(factory=OutputFaults)
    integrity: str = "none"  # RunOutputPolicy.integrity
    preserve_incomplete: bool = True
    publish_incomplete: bool = False
    completion_id: str = "completion-1"
    calls: list[tuple[str, str]] = attrs.field(factory=list)
    committed: dict[str, bytes] = attrs.field(factory=dict)
    leftovers: dict[str, bytes] = attrs.field(factory=dict)
    leases: list[FakeWriteLease] = attrs.field(factory=list)
    receipts: list[Mapping[str, object]] = attrs.field(factory=list)
    stalled: threading.Event = attrs.field(factory=threading.Event)
    unstall: threading.Event = attrs.field(factory=threading.Event)
    run_failed: Callable[[], bool] = lambda: False  # rule 5 (set by the fake Core)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

    def view(self, component: str) -> ComponentOutputs:
        """The output service as ``component`` sees it (rule 4)."""
        return ComponentOutputs(self, component)

    def owner_of(self, lease: object) -> str | None:
        """The component that opened ``lease`` (``None``: not a lease of this service)."""
        write = lease.write if isinstance(lease, FakeReadbackLease) else lease
        return write.component if isinstance(write, FakeWriteLease) else None

    def release_stall(self) -> None:
        """Let stalled writes continue."""
        self.faults.stall = False
        self.unstall.set()

    def _log(self, step: str, name: str) -> None:
        with self._lock:
            self.calls.append((step, name))

    def steps(self) -> list[str]:
        """Just the step names, in order."""
        with self._lock:
            return [s for s, _ in self.calls]

    def open_write(self, name: str, owner: str = "") -> FakeWriteLease:
        """Open a write lease for ``name`` (rule 1), owned by component ``owner``."""
        self._log("open_write", str(name))
        if _bad_name(name):
            raise LeaseError(f"open_write: {name!r} is not a bare file name")
        if self.faults.fail_open_write:
            raise OSError(28, "injected open failure")
        lease = FakeWriteLease(self, name, component=owner)
        self.leases.append(lease)
        return lease

    def _own(self, lease: object, call: str) -> FakeWriteLease:
        if not isinstance(lease, FakeWriteLease) or lease not in self.leases:
            raise LeaseError(f"{call}: lease was not issued by this output service")
        return lease

    def seal(self, lease: object) -> None:
        """Seal a write lease."""
        own = self._own(lease, "seal")
        self._log("seal", own.name)
        own.machine.fire(LeaseEvent.SEAL, "seal")

    def open_readback(self, lease: object) -> FakeReadbackLease:
        """The exact readback lease of a sealed write (faults 4 and 5 apply)."""
        own = self._own(lease, "open_readback")
        self._log("open_readback", own.name)
        own.machine.accept(LeaseEvent.READBACK, "open_readback")
        data = bytearray(own.data())
        if self.faults.corrupt_readback and len(data) > 16:
            data[len(data) // 2] ^= 0xFF
            data[-9] ^= 0xFF
        if self.faults.wrong_readback:
            stranger = FakeWriteLease(self, own.name + ".other", machine=LeaseMachine(own.name + ".other", LeaseState.SEALED))
            return FakeReadbackLease(stranger, io.BytesIO(bytes(data)))
        if own.readback is not None:
            own.readback.close()
        own.readback = FakeReadbackLease(own, io.BytesIO(bytes(data)))
        return own.readback

    def confirm_validation(self, lease: object, receipt: Mapping[str, object]) -> None:
        """Accept a receipt for exactly the latest readback lease of a sealed write (rule 2)."""
        write = lease.write if isinstance(lease, FakeReadbackLease) else None
        if write is None or write not in self.leases or write.readback is not lease:
            self._log("confirm_refused", "")
            raise LeaseError("confirm_validation: not the current readback lease of any sealed write")
        write.machine.accept(LeaseEvent.CONFIRM, "confirm_validation")
        data = write.data()
        problem = receipt_problem(
            receipt, size=len(data), completion_id=self.completion_id, integrity=self.integrity,
            digest=lambda: hashlib.sha256(data).hexdigest(),
        )
        if problem is not None:
            self._log("confirm_refused", write.name)
            raise LeaseError(f"confirm_validation: {problem}")
        self._log("confirm_validation", write.name)
        write.machine.advance(LeaseEvent.CONFIRM)
        self.receipts.append(dict(receipt))

    def commit(self, lease: object) -> str:
        """Publish the confirmed write under its name (idempotent; rule 5)."""
        own = self._own(lease, "commit")
        self._log("commit", own.name)
        if not own.machine.accept(LeaseEvent.COMMIT, "commit"):
            return own.name
        if self.run_failed():
            raise LeaseError("commit refused: the Run completed as failed")
        own.machine.advance(LeaseEvent.COMMIT)
        self.committed[own.name] = own.data()
        return own.name

    def abort(self, lease: object) -> None:
        """Discard the write (rule 3; idempotent, refused after commit)."""
        own = self._own(lease, "abort")
        self._log("abort", own.name)
        if own.machine.fire(LeaseEvent.ABORT, "abort"):
            self._dispose(own)

    def revoke_open(self) -> int:
        """Core revokes every unfinished write after a finalizer overran (rule 3)."""
        revoked = 0
        for lease in list(self.leases):
            if not lease.machine.unfinished:
                continue
            self._log("revoke", lease.name)
            lease.machine.fire(LeaseEvent.REVOKE, "revoke")
            revoked += 1
            self._dispose(lease)
        return revoked

    def _dispose(self, lease: FakeWriteLease) -> None:
        if self.publish_incomplete:
            self.leftovers[f"{lease.name}.incomplete"] = lease.data()
        elif self.preserve_incomplete:
            self.leftovers[f"quarantine/{lease.name}.incomplete"] = lease.data()
