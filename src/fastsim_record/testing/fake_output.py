"""An in-memory Core output service that records every call and injects faults.

Faults (``OutputFaults``):

    | # | fault            | effect                                                    |
    |---|------------------|-----------------------------------------------------------|
    | 1 | slow_write_s     | every ``write`` sleeps this long first                    |
    | 2 | stall            | ``write`` blocks until ``release_stall()`` (or forever)    |
    | 3 | fail_write_after | the n-th ``write`` (1-based) raises ``OSError``            |
    | 4 | corrupt_readback | the readback lease serves the bytes with one byte flipped |
    | 5 | wrong_readback   | ``open_readback`` returns a lease bound to another write  |
    | 6 | fail_open_write  | ``open_write`` raises ``OSError``                          |

Rules the service enforces (a real Core does the same):

    | # | rule                                                                     |
    |---|--------------------------------------------------------------------------|
    | 1 | seal only an open lease this service issued; no writes after seal        |
    | 2 | ``confirm_validation`` only with a readback lease bound to that write     |
    | 3 | ``commit`` only after a confirmed validation; commit publishes the name   |
    | 4 | ``abort`` never publishes; abort after commit is refused                  |
"""

from __future__ import annotations

import io
import threading
import time
from collections.abc import Mapping

import attrs

from fastsim_contract.errors import LeaseError
from fastsim_contract.values import RECEIPT_REQUIRED_KEYS

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
    state: str = "open"  # open | closed | sealed | committed | aborted
    confirmed: bool = False
    writes: int = 0

    def write(self, data: bytes | memoryview) -> int:
        """Append bytes (subject to the slow/stall/fail faults)."""
        faults = self.service.faults
        if faults.slow_write_s:
            time.sleep(faults.slow_write_s)
        if faults.stall:
            self.service.stalled.set()
            self.service.unstall.wait()
        if self.state not in ("open",):
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

    def readable(self) -> bool:
        """File-object protocol."""
        return True

    def seekable(self) -> bool:
        """File-object protocol."""
        return True

    def close(self) -> None:
        """Close (idempotent)."""
        self.closed = True


@attrs.define(eq=False)
class FakeOutputService:
    """Core's output transaction, in memory; ``calls`` logs every step in order."""

    faults: OutputFaults = attrs.field(factory=OutputFaults)
    calls: list[tuple[str, str]] = attrs.field(factory=list)
    committed: dict[str, bytes] = attrs.field(factory=dict)
    leases: list[FakeWriteLease] = attrs.field(factory=list)
    receipts: list[Mapping[str, object]] = attrs.field(factory=list)
    stalled: threading.Event = attrs.field(factory=threading.Event)
    unstall: threading.Event = attrs.field(factory=threading.Event)
    _lock: threading.Lock = attrs.field(factory=threading.Lock)

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
        """Open a write lease for ``name``."""
        self._log("open_write", name)
        if self.faults.fail_open_write:
            raise OSError(28, "injected open failure")
        lease = FakeWriteLease(self, name)
        self.leases.append(lease)
        return lease

    def _own(self, lease: object) -> FakeWriteLease:
        if not isinstance(lease, FakeWriteLease) or lease not in self.leases:
            raise LeaseError("lease was not issued by this output service")
        return lease

    def seal(self, lease: object) -> None:
        """Seal a write lease (rule 1)."""
        own = self._own(lease)
        self._log("seal", own.name)
        if own.state not in ("open", "closed"):
            raise LeaseError(f"seal on a {own.state} lease")
        own.state = "sealed"

    def open_readback(self, lease: object) -> FakeReadbackLease:
        """The exact readback lease of a sealed write (faults 4 and 5 apply)."""
        own = self._own(lease)
        self._log("open_readback", own.name)
        if own.state != "sealed":
            raise LeaseError(f"readback of a {own.state} lease")
        data = bytearray(own.data())
        if self.faults.corrupt_readback and data:
            data[len(data) // 2] ^= 0xFF
            data[-9] ^= 0xFF
        bound = own
        if self.faults.wrong_readback:
            bound = FakeWriteLease(self, own.name + ".other", state="sealed")
        return FakeReadbackLease(bound, io.BytesIO(bytes(data)))

    def confirm_validation(self, lease: object, receipt: Mapping[str, object]) -> None:
        """Accept a receipt for exactly the readback lease of a sealed write (rule 2)."""
        if not isinstance(lease, FakeReadbackLease) or lease.write not in self.leases:
            self._log("confirm_refused", "")
            raise LeaseError("readback lease is not bound to a write of this service")
        missing = [k for k in RECEIPT_REQUIRED_KEYS if k not in receipt]
        if missing or receipt.get("validated_bytes") != len(lease.write.data()):
            self._log("confirm_refused", lease.write.name)
            raise LeaseError(f"receipt lacks {missing} or names the wrong byte count")
        self._log("confirm_validation", lease.write.name)
        lease.write.confirmed = True
        self.receipts.append(dict(receipt))

    def commit(self, lease: object) -> str:
        """Publish the sealed, confirmed write under its name (rule 3)."""
        own = self._own(lease)
        self._log("commit", own.name)
        if own.state == "committed":
            return own.name
        if own.state != "sealed" or not own.confirmed:
            raise LeaseError(f"commit refused: lease is {own.state}, confirmed={own.confirmed}")
        own.state = "committed"
        self.committed[own.name] = own.data()
        return own.name

    def abort(self, lease: object) -> None:
        """Discard the write (rule 4); idempotent."""
        own = self._own(lease)
        self._log("abort", own.name)
        if own.state == "committed":
            raise LeaseError("abort after commit")
        own.state = "aborted"
