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

Rules the service enforces, as a Core does (``LeaseError`` otherwise):

    | # | rule                                                                       |
    |---|----------------------------------------------------------------------------|
    | 1 | names are bare file names; writes only while open                          |
    | 2 | seal only an open (or closed) write; readback only of a sealed write       |
    | 3 | confirm only with the latest readback lease of a sealed write, and a       |
    |   | receipt naming its exact size and completion; a digest iff policy sha256   |
    | 4 | commit only after confirm; commit publishes the name                       |
    | 5 | abort never publishes, is idempotent, and is refused after commit          |
    | 6 | ``revoke`` (Core, after a finalizer overran) ends a write; the staging     |
    |   | bytes are published as ``<name>.incomplete``, quarantined or deleted by     |
    |   | the output policy                                                          |
    | 7 | a lease is bound to the component whose view opened it (``view``)         |
    | 8 | once the winning completion is ``failed``, commit is refused               |
"""

from __future__ import annotations

import hashlib
import io
import threading
import time
from collections.abc import Callable, Mapping

import attrs

from fastsim_contract.errors import LeaseError
from fastsim_contract.values import RECEIPT_REQUIRED_KEYS

__all__ = ["FakeOutputService", "FakeOutputView", "FakeReadbackLease", "FakeWriteLease", "OutputFaults"]


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
    state: str = "open"  # open | closed | sealed | confirmed | committed | aborted | revoked
    confirmed: bool = False
    writes: int = 0
    readback: FakeReadbackLease | None = None
    component: str = ""

    def write(self, data: bytes | memoryview) -> int:
        """Append bytes (subject to the slow/stall/fail faults)."""
        faults = self.service.faults
        if faults.slow_write_s:
            time.sleep(faults.slow_write_s)
        if faults.stall:
            self.service.stalled.set()
            self.service.unstall.wait()
        if self.state != "open":
            raise LeaseError(f"write on a {self.state} lease")
        self.writes += 1
        if faults.fail_write_after is not None and self.writes >= faults.fail_write_after:
            raise OSError(5, "injected write failure")
        return self.buffer.write(data)

    def flush(self) -> None:
        """No-op flush."""

    def close(self) -> None:
        """Close for writing (idempotent)."""
        if self.state == "open":
            self.state = "closed"

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
    run_failed: Callable[[], bool] = lambda: False  # rule 8 (set by the fake Core)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

    def view(self, component: str) -> FakeOutputView:
        """The output service as ``component`` sees it (rule 7)."""
        return FakeOutputView(self, component)

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

    def open_write(self, name: str) -> FakeWriteLease:
        """Open a write lease for ``name`` (rule 1)."""
        self._log("open_write", str(name))
        if _bad_name(name):
            raise LeaseError(f"open_write: {name!r} is not a bare file name")
        if self.faults.fail_open_write:
            raise OSError(28, "injected open failure")
        lease = FakeWriteLease(self, name)
        self.leases.append(lease)
        return lease

    def _own(self, lease: object, call: str) -> FakeWriteLease:
        if not isinstance(lease, FakeWriteLease) or lease not in self.leases:
            raise LeaseError(f"{call}: lease was not issued by this output service")
        return lease

    def seal(self, lease: object) -> None:
        """Seal a write lease (rule 2)."""
        own = self._own(lease, "seal")
        self._log("seal", own.name)
        if own.state not in ("open", "closed"):
            raise LeaseError(f"seal on a {own.state} lease")
        own.state = "sealed"

    def open_readback(self, lease: object) -> FakeReadbackLease:
        """The exact readback lease of a sealed write (faults 4 and 5 apply)."""
        own = self._own(lease, "open_readback")
        self._log("open_readback", own.name)
        if own.state != "sealed":
            raise LeaseError(f"readback of a {own.state} lease")
        data = bytearray(own.data())
        if self.faults.corrupt_readback and len(data) > 16:
            data[len(data) // 2] ^= 0xFF
            data[-9] ^= 0xFF
        if self.faults.wrong_readback:
            stranger = FakeWriteLease(self, own.name + ".other", state="sealed")
            return FakeReadbackLease(stranger, io.BytesIO(bytes(data)))
        if own.readback is not None:
            own.readback.close()
        own.readback = FakeReadbackLease(own, io.BytesIO(bytes(data)))
        return own.readback

    def confirm_validation(self, lease: object, receipt: Mapping[str, object]) -> None:
        """Accept a receipt for exactly the latest readback lease of a sealed write (rule 3)."""
        write = lease.write if isinstance(lease, FakeReadbackLease) else None
        if write is None or write not in self.leases or write.readback is not lease:
            self._log("confirm_refused", "")
            raise LeaseError("confirm_validation: not the current readback lease of any sealed write")
        if write.state != "sealed":
            raise LeaseError(f"confirm_validation: the write is {write.state}")
        problem = self._receipt_problem(write, receipt)
        if problem is not None:
            self._log("confirm_refused", write.name)
            raise LeaseError(f"confirm_validation: {problem}")
        self._log("confirm_validation", write.name)
        write.confirmed = True
        write.state = "confirmed"
        self.receipts.append(dict(receipt))

    def _receipt_problem(self, write: FakeWriteLease, receipt: Mapping[str, object]) -> str | None:
        missing = [k for k in RECEIPT_REQUIRED_KEYS if k not in receipt]
        if missing:
            return f"receipt lacks {', '.join(missing)}"
        data = write.data()
        if receipt["validated_bytes"] != len(data):
            return f"receipt validated {receipt['validated_bytes']} bytes, sealed size is {len(data)}"
        if receipt["completion_id"] != self.completion_id:
            return "receipt names another completion"
        digest = receipt.get("content_sha256")
        if self.integrity == "sha256":
            if digest != hashlib.sha256(data).hexdigest():
                return "integrity sha256 needs the file's content_sha256"
        elif digest is not None:
            return "a content digest needs RunOutputPolicy(integrity='sha256')"
        return None

    def commit(self, lease: object) -> str:
        """Publish the confirmed write under its name (rule 4)."""
        own = self._own(lease, "commit")
        self._log("commit", own.name)
        if own.state == "committed":
            return own.name
        if own.state != "confirmed":
            raise LeaseError(f"commit refused: lease is {own.state}")
        if self.run_failed():
            raise LeaseError("commit refused: the Run completed as failed")
        own.state = "committed"
        self.committed[own.name] = own.data()
        return own.name

    def abort(self, lease: object) -> None:
        """Discard the write (rule 5)."""
        own = self._own(lease, "abort")
        self._log("abort", own.name)
        if own.state == "committed":
            raise LeaseError("abort after commit")
        if own.state in ("aborted", "revoked"):
            return
        own.state = "aborted"
        if self.preserve_incomplete:
            self.leftovers[f"quarantine/{own.name}.incomplete"] = own.data()

    def revoke_open(self) -> int:
        """Core revokes every unfinished write after a finalizer overran (rule 6)."""
        revoked = 0
        for lease in list(self.leases):
            if lease.state in ("committed", "aborted", "revoked"):
                continue
            self._log("revoke", lease.name)
            lease.state = "revoked"
            revoked += 1
            if self.publish_incomplete:
                self.leftovers[f"{lease.name}.incomplete"] = lease.data()
            elif self.preserve_incomplete:
                self.leftovers[f"quarantine/{lease.name}.incomplete"] = lease.data()
        return revoked


@attrs.define(eq=False)
class FakeOutputView:
    """One component's handle on the output service: leases stay with their owner."""

    service: FakeOutputService
    component: str

    def _mine(self, lease: object, call: str) -> None:
        write = lease.write if isinstance(lease, FakeReadbackLease) else lease
        if isinstance(write, FakeWriteLease) and write.component != self.component:
            raise LeaseError(f"{call}: the lease belongs to component {write.component!r}")

    def open_write(self, name: str) -> FakeWriteLease:
        """Open a write lease owned by this component."""
        lease = self.service.open_write(name)
        lease.component = self.component
        return lease

    def seal(self, lease: object) -> None:
        """Seal (own leases only)."""
        self._mine(lease, "seal")
        self.service.seal(lease)

    def open_readback(self, lease: object) -> FakeReadbackLease:
        """Readback (own leases only)."""
        self._mine(lease, "open_readback")
        return self.service.open_readback(lease)

    def confirm_validation(self, lease: object, receipt: Mapping[str, object]) -> None:
        """Confirm (own leases only)."""
        self._mine(lease, "confirm_validation")
        self.service.confirm_validation(lease, receipt)

    def commit(self, lease: object) -> str:
        """Commit (own leases only)."""
        self._mine(lease, "commit")
        return self.service.commit(lease)

    def abort(self, lease: object) -> None:
        """Abort (own leases only)."""
        self._mine(lease, "abort")
        self.service.abort(lease)
