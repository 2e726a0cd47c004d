"""The leases of one output transaction (``fastsim_embedded.output.transaction``): the host-side
``Transaction`` record, the opaque write lease and the exact readback lease."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from fastsim_contract.errors import LeaseError
from fastsim_embedded.output.names import NameLock, identity_of
from fastsim_embedded.output.preallocate import Preallocation
from fastsim_embedded.output.writeback import EarlyWriteback
from fastsim_recording_format.lease import LeaseEvent, LeaseMachine

if TYPE_CHECKING:
    from fastsim_embedded.output.transaction import FileOutputService

__all__ = ["FileReadbackLease", "FileWriteLease", "Transaction"]

#: buffers per ``os.writev`` call (the kernel's IOV_MAX; batches hold at most a few hundred)
_IOV_MAX = min(max(os.sysconf("SC_IOV_MAX") if "SC_IOV_MAX" in os.sysconf_names else 1024, 16), 1024)


@attrs.define(eq=False)
class Transaction:
    """The host-side record of one artifact transaction."""

    name: str
    final: Path
    staging: Path
    owner: str = ""
    #: the lease table's state machine (``fastsim_recording_format.lease``)
    machine: LeaseMachine = attrs.field(
        default=attrs.Factory(lambda tx: LeaseMachine(tx.name), takes_self=True)
    )
    size: int = 0
    fd: int | None = None
    readback: FileReadbackLease | None = None
    disposed_to: Path | None = None
    lock: threading.Lock = attrs.field(factory=threading.Lock)
    identity: tuple[int, int] | None = None  # (st_dev, st_ino) of the staging file we created
    named: bool = False  # the staging file is linked under <name>.incomplete (first flush)
    name_lock: NameLock | None = None
    note: str | None = None  # why a disposal left a path alone
    #: starts the disk's work on what was written during the Run (``output.writeback``)
    writeback: EarlyWriteback | None = None
    #: disk blocks reserved ahead of the end (``output.preallocate``)
    prealloc: Preallocation | None = None

    @property
    def state(self) -> str:
        """The lease table's state: open, sealed, confirmed, committed, aborted, revoked."""
        return self.machine.state.value

    def wrote(self, written: int) -> int:
        """Account ``written`` more bytes, tell the early writeback and the reservation
        ahead of the end; returns ``written``."""
        self.size += written
        if self.writeback is not None:
            self.writeback.wrote(self.size)
        if self.prealloc is not None:
            self.prealloc.wrote(self.size)
        return written


@attrs.define(eq=False)
class FileWriteLease:
    """Opaque write lease: bytes go in, nothing about the file comes out."""

    _service: FileOutputService
    _tx: Transaction

    def write(self, data: bytes | memoryview) -> int:
        """Write every byte of ``data``; refused unless the transaction is open."""
        tx = self._tx
        tx.machine.accept(LeaseEvent.WRITE, "write")
        if tx.fd is None:
            raise LeaseError(f"write: the lease for {tx.name!r} is closed")
        view = memoryview(data).cast("B")
        written = 0
        while written < len(view):
            written += os.write(tx.fd, view[written:])
        return tx.wrote(written)

    def writev(self, parts: Sequence[Any], nbytes: int) -> int:
        """Write every byte of ``parts`` (``nbytes`` in all), in order, with ``os.writev``
        (a batch's tick buffers go to the file without a joined copy); a short write is
        finished part by part.  Refused unless the transaction is open."""
        tx = self._tx
        tx.machine.accept(LeaseEvent.WRITE, "write")
        if tx.fd is None:
            raise LeaseError(f"write: the lease for {tx.name!r} is closed")
        written = 0
        for start in range(0, len(parts), _IOV_MAX):
            chunk = parts[start:start + _IOV_MAX]
            done = os.writev(tx.fd, chunk)
            last = start + _IOV_MAX >= len(parts)
            if done < (nbytes - written if last else sum(memoryview(p).nbytes for p in chunk)):
                done += self._rest(chunk, done)
            written += done
        return tx.wrote(written)

    def _rest(self, chunk: Sequence[Any], done: int) -> int:
        """After a short ``os.writev`` of ``done`` bytes: write the rest of ``chunk``."""
        tx = self._tx
        rest = 0
        for part in chunk:
            view = memoryview(part).cast("B")
            if done >= view.nbytes:
                done -= view.nbytes
                continue
            view = view[done:]
            done = 0
            at = 0
            while at < len(view):
                at += os.write(tx.fd, view[at:])  # type: ignore[arg-type]
            rest += at
        return rest

    def flush(self) -> None:
        """Nothing is buffered in user space; the first flush makes the bytes so far
        durable and names the file ``<name>.incomplete`` (the module table)."""
        tx = self._tx
        tx.machine.accept(LeaseEvent.WRITE, "flush")
        if not tx.named:
            self._service.name_staging(tx)

    def close(self) -> None:
        """Closing a write lease is a no-op; ``seal`` ends writing."""


@attrs.define(eq=False)
class FileReadbackLease:
    """Exact readback lease of one sealed write."""

    _tx: Transaction
    _file: object = attrs.field(init=False, default=None)
    closed: bool = False

    def __attrs_post_init__(self) -> None:
        # never follow a symlink planted at the staging path, and read only our own inode
        try:
            fd = os.open(self._tx.staging, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError as exc:
            raise LeaseError(f"open_readback: {self._tx.staging}: {exc.strerror}") from None
        if self._tx.identity is not None and identity_of(os.fstat(fd)) != self._tx.identity:
            os.close(fd)
            raise LeaseError(f"open_readback: {self._tx.staging} is no longer the file this Run wrote")
        self._file = os.fdopen(fd, "rb")

    def _handle(self) -> object:
        if self.closed:
            raise LeaseError(f"readback of {self._tx.name!r} is closed")
        self._tx.machine.accept(LeaseEvent.READ, "read")
        return self._file

    def read(self, n: int = -1) -> bytes:
        """Read up to ``n`` bytes (all with -1)."""
        data: bytes = self._handle().read(n)  # type: ignore[attr-defined]
        return data

    def seek(self, offset: int, whence: int = 0) -> int:
        """Seek like a binary file."""
        pos: int = self._handle().seek(offset, whence)  # type: ignore[attr-defined]
        return pos

    def tell(self) -> int:
        """The current offset."""
        pos: int = self._handle().tell()  # type: ignore[attr-defined]
        return pos

    def close(self) -> None:
        """Close the readback (idempotent); the lease stays valid for confirm_validation."""
        if not self.closed:
            self.closed = True
            self._file.close()  # type: ignore[attr-defined]
