"""The output service: one real-file transaction per artifact name, leases by identity.

    reserve(name)                 lock <dir>/.<name>.lock (flock, held to the end of the
                                  transaction) and refuse the name (``OutputRefused``) when
                                  <name> exists (unless ``overwrite``), when <name>.incomplete
                                  exists (a crashed Run's data: ``fsr recover`` it), or when
                                  another recorder holds the lock
    open_write(name)              reserve if not yet, then create a hidden, unique
                                  <dir>/.<name>.incomplete-<id> with O_EXCL | O_NOFOLLOW;
                                  remember its inode
    write / flush                 through the opaque write lease (no path, no fd exposed);
                                  the first flush fsyncs what was written (the FSR header)
                                  and only then links it as <dir>/<name>.incomplete, so
                                  that name never holds less than what the writer flushed
                                  first, whenever the process is killed; every 16 MiB
                                  written wakes a background ``fdatasync`` (``output.writeback``),
                                  and blocks are reserved ahead of the end (``output.preallocate``)
    seal(write)                   wait for a background sync under way (its error is
                                  seal's), fsync file, close; the size is now fixed
    open_readback(write)          a new exact readback lease bound to this sealed write
    confirm_validation(rb, r)     rb must be the latest readback lease of that write
    commit(write)                 the staging inode must still be ours; publish it without
                                  replacing anything (link + unlink; ``os.replace`` only
                                  with ``overwrite``), fsync the dir, release the lock
    abort(write)                  never publishes; disposes the staging file per policy,
                                  only if the path still holds this transaction's inode

Nothing here ever deletes or replaces a file this service did not create: every
decision about a path is checked against the inode that ``open_write`` created, and a
user's existing final file is replaced only when ``overwrite`` was asked for.

Which call is accepted in which state is the one lease table of
``fastsim_recording_format.lease`` (open, sealed, confirmed, committed, aborted,
revoked); this service adds the storage checks above and these rules:

    * Once the Run's winning completion is ``failed`` Core refuses every commit
      (``refuse_commits``) unless its data source asked to keep what was recorded (FR1-FR2).
    * ``confirm_validation`` needs the exact readback lease and a receipt that matches
      (``fastsim_contract.output_service.receipt_problem``); a mismatch is refused and the
      write stays sealed.

Disposal of an unpublished staging file (abort, revocation) follows the
``RunOutputPolicy``: kept as ``<name>.incomplete``, quarantined or deleted
(``fastsim_embedded.output.disposal``).

A staging path that no longer holds this transaction's inode (someone moved or
replaced it) is left alone and reported in ``Transaction.note``.

``revoke_open`` is Core's deadline-bounded cleanup after a finalizer overran: it runs on
a helper thread and the caller waits at most until the deadline, so a stalled
filesystem cannot turn terminal cleanup into an unbounded wait (with nothing to revoke,
the normal end of every episode's Run, it starts no thread and returns ``True``).  When no thread can start
(Python 3.12+ at interpreter exit) it runs inline and reports whether it ended in time.
"""

from __future__ import annotations

import errno
import hashlib
import os
import threading
import time
import traceback
import uuid
from collections.abc import Mapping
from pathlib import Path

import attrs

from fastsim_contract.errors import LeaseError
from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.output_service import ComponentOutputs, receipt_problem
from fastsim_embedded.output.disposal import QUARANTINE_DIR, dispose_staging
from fastsim_embedded.output.leases import FileReadbackLease, FileWriteLease, Transaction
from fastsim_embedded.output.names import (
    STAGING_SUFFIX,
    NameLock,
    OutputRefused,
    check_output_name,
    identity_of,
    lidentity,
)
from fastsim_embedded.output.preallocate import Preallocation
from fastsim_embedded.output.writeback import EarlyWriteback
from fastsim_recording_format.files import fsync_dir
from fastsim_recording_format.lease import LeaseEvent

__all__ = [
    "ComponentOutputs", "FileOutputService", "FileReadbackLease", "FileWriteLease", "NameLock", "OutputRefused",
    "Transaction", "check_output_name",
]

@attrs.define(eq=False)
class FileOutputService:
    """Real files under ``output_dir``; the plugin only ever sees leases."""

    output_dir: Path
    policy: RunOutputPolicy
    completion_id: str
    overwrite: bool = False  # replace an existing final file (``--overwrite``)
    commit_refusal: str | None = attrs.field(init=False, default=None)
    _lock: threading.Lock = attrs.field(init=False, factory=threading.Lock)
    _by_lease: dict[int, tuple[FileWriteLease, Transaction]] = attrs.field(init=False, factory=dict)
    _by_name: dict[str, Transaction] = attrs.field(init=False, factory=dict)
    _reserved: dict[str, NameLock] = attrs.field(init=False, factory=dict)

    # -- reservation (before any plugin runs) ---------------------------------------
    def reserve(self, name: str) -> None:
        """Lock ``name`` for this Run and check that it may be written (``OutputRefused``).

        Idempotent per name.  The lock is held until the transaction commits or is
        disposed of, or ``release_reservations`` runs.
        """
        with self._lock:
            if name in self._reserved or name in self._by_name:
                return
            self._reserved[name] = self._reserve(name)

    def _reserve(self, name: str) -> NameLock:
        directory = self.output_dir
        exists = os.path.isdir(directory)  # every episode of a recording finds it: one stat
        why = check_output_name(name, directory if exists else None)
        if why is not None:
            raise OutputRefused(directory / name, why)
        if not exists:
            try:
                directory.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise OutputRefused(directory, f"cannot create the output directory: {exc.strerror}") from None
            if not directory.is_dir():
                raise OutputRefused(directory, "the output directory is not a directory")
        final = directory / name
        lock = NameLock.acquire(directory, name, final)
        try:
            self._check_free(name, final)
        except BaseException:
            lock.release()
            raise
        return lock

    def _check_free(self, name: str, final: Path) -> None:
        staging = self.output_dir / f"{name}{STAGING_SUFFIX}"
        if os.path.lexists(staging):
            raise OutputRefused(
                staging, "a crashed or stopped Run's data is here; it is never deleted or reused: "
                f"recover it with `fsr recover {staging} -o <NEW.fsr>`, or move it away",
            )
        if os.path.lexists(final):
            if not self.overwrite:
                raise OutputRefused(final, "already exists; refusing to overwrite it (pass --overwrite to replace it)")
            if os.path.isdir(final) and not os.path.islink(final):
                raise OutputRefused(final, "is a directory; --overwrite replaces only files")
        if not self.policy.publish_incomplete and self.policy.preserve_incomplete:
            quarantine = self.output_dir / QUARANTINE_DIR
            if os.path.islink(quarantine):
                raise OutputRefused(quarantine, "is a symbolic link; refusing to quarantine files through it")
            if os.path.lexists(quarantine) and not quarantine.is_dir():
                raise OutputRefused(quarantine, "is not a directory")

    def release_reservations(self) -> None:
        """Release every reservation that never became a transaction."""
        with self._lock:
            locks = list(self._reserved.values())
            self._reserved.clear()
        for lock in locks:
            lock.release()

    # -- the plugin-facing transaction --------------------------------------------
    def open_write(self, name: str, owner: str = "") -> FileWriteLease:
        """Stage ``<dir>/<name>.incomplete`` (O_EXCL | O_NOFOLLOW) and return its write lease."""
        with self._lock:
            if name in self._by_name:
                raise LeaseError(f"open_write: {name!r} already has a transaction in this Run")
            name_lock = self._reserved.pop(name, None)
            if name_lock is None:
                name_lock = self._reserve(name)
            else:  # reserved earlier: the name may have been taken since
                try:
                    self._check_free(name, self.output_dir / name)
                except BaseException:
                    name_lock.release()
                    raise
            staging = self.output_dir / f".{name}{STAGING_SUFFIX}-{uuid.uuid4().hex[:12]}"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            try:
                fd = os.open(staging, flags, 0o644)
            except OSError as exc:
                name_lock.release()
                raise OutputRefused(staging, f"cannot create the staging file: {exc.strerror}") from None
            tx = Transaction(
                name=name, final=self.output_dir / name, staging=staging, owner=owner, fd=fd,
                identity=identity_of(os.fstat(fd)), name_lock=name_lock, writeback=EarlyWriteback(fd),
                prealloc=Preallocation(fd),
            )
            lease = FileWriteLease(self, tx)
            self._by_lease[id(lease)] = (lease, tx)
            self._by_name[name] = tx
        return lease

    def name_staging(self, tx: Transaction) -> None:
        """Fsync the staging file, then link it as ``<name>.incomplete`` (never replacing
        anything) and drop its hidden creation name."""
        with tx.lock:
            if tx.named or tx.fd is None:
                return
            os.fsync(tx.fd)
            staging = self.output_dir / f"{tx.name}{STAGING_SUFFIX}"
            try:
                os.link(tx.staging, staging, follow_symlinks=False)
            except OSError as exc:
                raise LeaseError(
                    f"flush: cannot name the staging file {staging}: {exc.strerror}"
                ) from None
            os.unlink(tx.staging)
            tx.staging = staging
            tx.named = True
            fsync_dir(self.output_dir)

    def _still_ours(self, tx: Transaction) -> bool:
        return tx.identity is not None and lidentity(tx.staging) == tx.identity

    def transaction_of(self, lease: object) -> Transaction | None:
        """The transaction of a write or readback lease this service issued, else ``None``."""
        entry = self._by_lease.get(id(lease))
        if entry is not None and entry[0] is lease:
            return entry[1]
        return next((t for _, t in self._by_lease.values() if t.readback is lease), None)

    def owner_of(self, lease: object) -> str | None:
        """The component that opened ``lease``'s transaction (``None``: not ours)."""
        tx = self.transaction_of(lease)
        return None if tx is None else tx.owner

    def _tx_of(self, lease: object, call: str) -> Transaction:
        entry = self._by_lease.get(id(lease))
        if entry is None or entry[0] is not lease:
            raise LeaseError(f"{call}: not a write lease issued by this output service")
        return entry[1]

    def seal(self, lease: object) -> None:
        """Fsync and close the staging file; its size is final."""
        tx = self._tx_of(lease, "seal")
        with tx.lock:
            tx.machine.accept(LeaseEvent.SEAL, "seal")
        if not tx.named:  # sealed without a flush: name it first
            self.name_staging(tx)
        with tx.lock:
            tx.machine.accept(LeaseEvent.SEAL, "seal")  # revoked meanwhile?
            if tx.fd is not None:
                failed = tx.writeback.stop(wait=True) if tx.writeback is not None else None
                if failed is not None:  # the kernel reported it to that fsync, not to ours
                    raise failed
                tx.machine.accept(LeaseEvent.SEAL, "seal")  # revoked (fd closed) while it waited?
                if tx.prealloc is not None:
                    tx.prealloc.release()  # blocks reserved after the end (output.preallocate)
                os.fsync(tx.fd)
                os.close(tx.fd)
                tx.fd = None
            tx.machine.advance(LeaseEvent.SEAL)

    def open_readback(self, lease: object) -> FileReadbackLease:
        """A new exact readback lease of the sealed write (it replaces any earlier one)."""
        tx = self._tx_of(lease, "open_readback")
        with tx.lock:
            tx.machine.accept(LeaseEvent.READBACK, "open_readback")
            if tx.readback is not None:
                tx.readback.close()
            tx.readback = FileReadbackLease(tx)
            return tx.readback

    def confirm_validation(self, lease: object, receipt: Mapping[str, object]) -> None:
        """Accept the receipt only with the exact readback lease of a sealed write."""
        tx = next((t for _, t in self._by_lease.values() if t.readback is lease), None)
        if tx is None:
            raise LeaseError("confirm_validation: not the current readback lease of any sealed write")
        with tx.lock:
            tx.machine.accept(LeaseEvent.CONFIRM, "confirm_validation")
            problem = receipt_problem(
                receipt, size=tx.staging.stat().st_size, completion_id=self.completion_id,
                integrity=self.policy.integrity,
                digest=lambda: hashlib.sha256(tx.staging.read_bytes()).hexdigest(),
            )
            if problem is not None:
                raise LeaseError(f"confirm_validation: {problem}")
            tx.machine.advance(LeaseEvent.CONFIRM)

    def commit(self, lease: object) -> str:
        """Atomically publish the confirmed file under its final name (idempotent)."""
        tx = self._tx_of(lease, "commit")
        with tx.lock:
            if not tx.machine.accept(LeaseEvent.COMMIT, "commit"):
                return tx.name
            if self.commit_refusal is not None:
                raise LeaseError(f"commit: refused, {self.commit_refusal}")
            if not self._still_ours(tx):
                raise LeaseError(f"commit: {tx.staging} is no longer the file this Run wrote")
            self._publish(tx)
            fsync_dir(self.output_dir)
            tx.machine.advance(LeaseEvent.COMMIT)
            self._release(tx)
        return tx.name

    def _publish(self, tx: Transaction) -> None:
        """Move the staging inode to the final name, replacing nothing unless ``overwrite``."""
        if self.overwrite:
            os.replace(tx.staging, tx.final)
            return
        try:
            os.link(tx.staging, tx.final, follow_symlinks=False)
        except FileExistsError:
            raise LeaseError(
                f"commit: {tx.final} appeared during the Run; refusing to overwrite it "
                f"(the recording stays at {tx.staging})"
            ) from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV):
                raise
            # no hard links on this file system: under our lock, check then rename
            if os.path.lexists(tx.final):
                raise LeaseError(f"commit: {tx.final} appeared during the Run; refusing to overwrite it") from None
            os.rename(tx.staging, tx.final)
            return
        os.unlink(tx.staging)

    @staticmethod
    def _release(tx: Transaction) -> None:
        if tx.name_lock is not None:
            tx.name_lock.release()

    def abort(self, lease: object) -> None:
        """Abandon the transaction; never publishes (idempotent; refused after commit)."""
        tx = self._tx_of(lease, "abort")
        with tx.lock:
            if tx.machine.accept(LeaseEvent.ABORT, "abort"):
                self._dispose(tx, LeaseEvent.ABORT)

    # -- Core-only ------------------------------------------------------------------
    def refuse_commits(self, reason: str) -> None:
        """From now on every commit raises ``LeaseError`` naming ``reason``."""
        self.commit_refusal = reason

    def _dispose(self, tx: Transaction, event: LeaseEvent) -> None:
        tx.machine.advance(event)
        if tx.readback is not None:
            tx.readback.close()
        if tx.writeback is not None:
            tx.writeback.stop(wait=False)
        if tx.fd is not None:
            if tx.prealloc is not None:
                tx.prealloc.release()
            os.close(tx.fd)
            tx.fd = None
        try:
            self._dispose_file(tx)
        finally:
            self._release(tx)

    def _dispose_file(self, tx: Transaction) -> None:
        if not self._still_ours(tx):
            if os.path.lexists(tx.staging):
                tx.note = f"{tx.staging} is no longer the file this Run wrote; left untouched"
            return
        dispose_staging(tx, self.policy, self.output_dir, self.completion_id)

    def revoke_open(self, deadline_monotonic: float, owner: str | None = None) -> bool:
        """Revoke every unfinished transaction (of ``owner``, or all), waiting at most until
        the deadline.  Returns whether the cleanup finished in time (it continues in the
        background otherwise).
        """
        with self._lock:  # ended states never become unfinished again: nothing to wait for
            mine = [tx for _, tx in self._by_lease.values() if owner is None or tx.owner == owner]
            if not any(tx.machine.unfinished for tx in mine) and (owner is not None or not self._reserved):
                return True

        def work() -> None:
            for _, tx in list(self._by_lease.values()):
                if owner is not None and tx.owner != owner:
                    continue
                if tx.machine.accept(LeaseEvent.REVOKE, "revoke"):  # not under tx.lock: a
                    self._dispose(tx, LeaseEvent.REVOKE)  # stalled writer must not block it
            if owner is None:
                self.release_reservations()

        helper = threading.Thread(target=work, name="fastsim-output-revoke", daemon=True)
        try:
            helper.start()
        except RuntimeError:  # no new thread (Python 3.12+ at interpreter exit): revoke here
            try:
                work()
            except Exception:  # reported as the helper thread's would be; not cleaned up
                traceback.print_exc()
                return False
            return time.monotonic() <= deadline_monotonic
        helper.join(max(0.0, deadline_monotonic - time.monotonic()))
        return not helper.is_alive()

    def transactions(self) -> tuple[Transaction, ...]:
        """Every transaction of this Run (the outcome report)."""
        with self._lock:
            return tuple(self._by_name.values())
