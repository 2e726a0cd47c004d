"""The output transaction: a lease port and its filesystem adapter.

    open_write(name) -> write/flush -> seal(lease) -> open_readback(lease)
      -> validate(readback.file) -> close_readback -> confirm_validation(readback, receipt)
      -> commit(lease)                       (or abort(lease) at any point before commit)

``FilesystemLeases`` runs the one lease state table of ``fastsim_recording_format.lease``
over a plain file: ``<name>.incomplete`` in ``output_dir``, published by an atomic
rename.  Its storage checks, before the table's event:

    | # | call               | storage check                                  | on failure      |
    |---|--------------------|------------------------------------------------|-----------------|
    | 1 | open_readback      | the staged file is the sealed one (size, mtime, inode) | reject -> failed |
    | 2 | confirm_validation | the exact current readback lease; a ``ValidationReceipt`` whose byte count is the sealed size | refused, state kept |
    | 3 | commit             | the staged file is still the sealed one        | reject -> failed |

Abort never publishes; the staged ``<name>.incomplete`` is kept only when
``preserve_incomplete`` is true.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from typing import Any, BinaryIO, Protocol, runtime_checkable

import attrs

from fastsim_recording_format.errors import FormatError
from fastsim_recording_format.files import INCOMPLETE_SUFFIX, fsync_dir
from fastsim_recording_format.lease import LeaseError, LeaseEvent, LeaseMachine, LeaseState
from fastsim_recording_format.validate import ValidationReceipt, validate
from fastsim_recording_format.writer import FsrWriter

__all__ = [
    "FilesystemLeases",
    "LeaseError",
    "OutputLeases",
    "ReadbackLease",
    "WriteLease",
    "check_output_name",
    "finish_output",
    "fsync_dir",
]



@runtime_checkable
class WriteLease(Protocol):
    """An opaque write lease; ``file`` is the binary file the writer writes into."""

    @property
    def file(self) -> BinaryIO: ...


@runtime_checkable
class ReadbackLease(Protocol):
    """An opaque readback lease bound to exactly one sealed write lease."""

    @property
    def file(self) -> BinaryIO: ...


class OutputLeases(Protocol):
    """The port through which the output artifact is staged, validated and published."""

    def open_write(self, name: str) -> WriteLease: ...
    def seal(self, lease: WriteLease) -> None: ...
    def open_readback(self, lease: WriteLease) -> ReadbackLease: ...
    def close_readback(self, readback: ReadbackLease) -> None: ...
    def confirm_validation(self, readback: ReadbackLease, receipt: ValidationReceipt) -> None: ...
    def reject_validation(self, readback: ReadbackLease, reason: str) -> None: ...
    def commit(self, lease: WriteLease) -> str: ...
    def abort(self, lease: WriteLease) -> None: ...


def check_output_name(name: str) -> str:
    """``name`` if it is a bare file name; ``LeaseError`` for separators, ``..``, absolute paths."""
    if not isinstance(name, str) or not name or name in (".", ".."):
        raise LeaseError(f"output name {name!r} is not a file name")
    seps = {"/", "\\", os.sep} | ({os.altsep} if os.altsep else set())
    if any(sep in name for sep in seps) or ".." in name or "\0" in name or os.path.isabs(name):
        raise LeaseError(f"output name {name!r} must be a bare file name (no path, no '..')")
    return name


@attrs.define(eq=False)
class _FsWriteLease:
    owner: FilesystemLeases
    name: str
    staging: str
    final: str
    handle: BinaryIO
    machine: LeaseMachine
    readback: _FsReadbackLease | None = None
    sealed_stat: tuple[int, int, int] | None = None

    @property
    def file(self) -> BinaryIO:
        return self.handle


@attrs.define(eq=False)
class _FsReadbackLease:
    write: _FsWriteLease
    handle: BinaryIO

    @property
    def file(self) -> BinaryIO:
        return self.handle


def _stat(path: str) -> tuple[int, int, int]:
    st = os.stat(path)
    return (st.st_size, st.st_mtime_ns, st.st_ino)


def _as_path(path: str | os.PathLike[str]) -> str:
    return os.fspath(path)


@attrs.define(eq=False)
class FilesystemLeases:
    """Stages ``<name>.incomplete`` in ``output_dir`` and publishes with an atomic rename."""

    output_dir: str = attrs.field(converter=_as_path)
    preserve_incomplete: bool = True
    _active: dict[str, _FsWriteLease] = attrs.field(factory=dict, init=False)

    def _own(self, lease: object) -> _FsWriteLease:
        if not isinstance(lease, _FsWriteLease) or lease.owner is not self:
            raise LeaseError("not a write lease of this output")
        return lease

    def open_write(self, name: str) -> WriteLease:
        """Create and open ``<output_dir>/<name>.incomplete`` for writing."""
        check_output_name(name)
        if name in self._active:
            raise LeaseError(f"a write lease for {name!r} is already open")
        os.makedirs(self.output_dir, exist_ok=True)
        staging = os.path.join(self.output_dir, name + INCOMPLETE_SUFFIX)
        handle = open(staging, "wb")  # noqa: SIM115 - owned by the lease
        final = os.path.join(self.output_dir, name)
        lease = _FsWriteLease(self, name, staging, final, handle, LeaseMachine(name))
        self._active[name] = lease
        return lease

    def seal(self, lease: WriteLease) -> None:
        """Flush, fsync and close the staged file, then fsync the directory."""
        own = self._own(lease)
        own.machine.accept(LeaseEvent.SEAL, "seal")
        own.handle.flush()
        os.fsync(own.handle.fileno())
        own.handle.close()
        fsync_dir(self.output_dir)
        own.sealed_stat = _stat(own.staging)
        own.machine.advance(LeaseEvent.SEAL)

    def open_readback(self, lease: WriteLease) -> ReadbackLease:
        """Open the exact sealed staged file for reading; replaces any earlier readback."""
        own = self._own(lease)
        own.machine.accept(LeaseEvent.READBACK, "open_readback")
        if own.readback is not None:
            self.close_readback(own.readback)
        handle = open(own.staging, "rb", buffering=0)  # noqa: SIM115 - owned by the lease
        st = os.fstat(handle.fileno())
        if (st.st_size, st.st_mtime_ns, st.st_ino) != own.sealed_stat:
            handle.close()
            own.machine.fire(LeaseEvent.REJECT)
            raise LeaseError("staged file changed after it was sealed")
        own.readback = _FsReadbackLease(own, handle)
        return own.readback

    def close_readback(self, readback: ReadbackLease) -> None:
        """Close a readback lease (idempotent)."""
        if isinstance(readback, _FsReadbackLease) and readback.write.owner is self:
            readback.handle.close()

    def _bound(self, readback: ReadbackLease) -> _FsWriteLease:
        if not isinstance(readback, _FsReadbackLease) or readback.write.owner is not self:
            raise LeaseError("readback lease was not issued by this output")
        own = readback.write
        if own.readback is not readback:
            raise LeaseError("readback lease is not the one bound to the sealed write")
        return own

    def confirm_validation(self, readback: ReadbackLease, receipt: ValidationReceipt) -> None:
        """Bind a successful receipt to the sealed write through its exact readback lease."""
        own = self._bound(readback)
        own.machine.accept(LeaseEvent.CONFIRM, "confirm_validation")
        if not isinstance(receipt, ValidationReceipt):
            raise LeaseError("confirmation needs a ValidationReceipt")
        self.close_readback(readback)
        if own.sealed_stat is None or receipt.validated_bytes != own.sealed_stat[0]:
            raise LeaseError("receipt does not cover the sealed file's bytes")
        own.machine.advance(LeaseEvent.CONFIRM)

    def reject_validation(self, readback: ReadbackLease, reason: str) -> None:
        """Latch a failed validation: commit is refused from now on."""
        own = self._bound(readback)
        self.close_readback(readback)
        own.machine.fire(LeaseEvent.REJECT, "reject_validation")

    def commit(self, lease: WriteLease) -> str:
        """Publish the staged file under its final name; idempotent once committed."""
        own = self._own(lease)
        if not own.machine.accept(LeaseEvent.COMMIT, "commit"):
            return own.final
        if own.sealed_stat != _stat(own.staging):
            own.machine.fire(LeaseEvent.REJECT)
            raise LeaseError("staged file changed after it was sealed")
        os.replace(own.staging, own.final)
        fsync_dir(self.output_dir)
        own.machine.advance(LeaseEvent.COMMIT)
        self._active.pop(own.name, None)
        return own.final

    def abort(self, lease: WriteLease) -> None:
        """Abandon the transaction without publishing; keep the staging file only if told to.

        Idempotent; refused after commit (the lease table)."""
        own = self._own(lease)
        if not own.machine.fire(LeaseEvent.ABORT, "abort"):
            return
        self._active.pop(own.name, None)
        if own.readback is not None:
            own.readback.handle.close()
        own.handle.close()
        if not self.preserve_incomplete:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(own.staging)

    @staticmethod
    def state_of(lease: WriteLease) -> LeaseState:
        """Where ``lease``'s transaction is (the lease table's row)."""
        if not isinstance(lease, _FsWriteLease):
            raise LeaseError("not a write lease of this output")
        return lease.machine.state


def finish_output(
    leases: OutputLeases,
    lease: WriteLease,
    writer: FsrWriter,
    *,
    integrity: str = "structural",
    policy_integrity: str = "none",
    terminal_fence: Mapping[str, Any] | None = None,
    degraded: bool = False,
) -> tuple[ValidationReceipt, str]:
    """Seal, read back, validate, confirm and commit; abort and re-raise on any failure."""
    try:
        writer.seal(terminal_fence, degraded)
        leases.seal(lease)
        readback = leases.open_readback(lease)
        try:
            receipt = validate(readback.file, integrity, policy_integrity)
        except FormatError as exc:
            leases.reject_validation(readback, str(exc))
            raise
        leases.close_readback(readback)
        leases.confirm_validation(readback, receipt)
        return receipt, leases.commit(lease)
    except BaseException:
        with contextlib.suppress(LeaseError):  # already ended (e.g. committed): keep the cause
            leases.abort(lease)
        raise
