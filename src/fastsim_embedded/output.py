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
                                  first, whenever the process is killed
    seal(write)                   flush + fsync file, close; the size is now fixed
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

Transaction states and what each call accepts:

    | # | state      | write | seal | open_readback | confirm | commit | abort        |
    |---|------------|-------|------|---------------|---------|--------|--------------|
    | 1 | open       | yes   | yes  | no            | no      | no     | yes          |
    | 2 | sealed     | no    | no   | yes           | yes*    | no     | yes          |
    | 3 | confirmed  | no    | no   | no            | no      | yes    | yes          |
    | 4 | committed  | no    | no   | no            | no      | no     | LeaseError   |
    | 5 | aborted    | no    | no   | no            | no      | no     | no-op        |
    | 6 | revoked    | no    | no   | no            | no      | no     | no-op        |

    Once the Run's winning completion is ``failed`` Core refuses every commit
    (``refuse_commits``): a failed Run never publishes under a final name.

    * with the exact readback lease and a receipt that matches (``RECEIPT_REQUIRED_KEYS``;
      ``validated_bytes`` == sealed size; ``completion_id`` == the Run's; under
      ``integrity="sha256"`` a ``content_sha256`` equal to the file's digest, and without
      it no digest claim at all).

Disposal of an unpublished staging file (abort, revocation), by ``RunOutputPolicy``:

    | # | publish_incomplete | preserve_incomplete | result                                   |
    |---|--------------------|---------------------|------------------------------------------|
    | 1 | true               | any                 | kept as <dir>/<name>.incomplete          |
    | 2 | false              | true                | quarantined: <dir>/.quarantine/<cid>/... |
    |   |                    |                     | (a symlinked .quarantine is refused at   |
    |   |                    |                     | reserve; found later, the file is kept)  |
    | 3 | false              | false               | deleted                                  |

A staging path that no longer holds this transaction's inode (someone moved or
replaced it) is left alone and reported in ``Transaction.note``.

``revoke_open`` is Core's deadline-bounded cleanup after a finalizer overran: it runs on
a helper thread and the caller waits at most until the deadline, so a stalled
filesystem cannot turn terminal cleanup into an unbounded wait.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import threading
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import attrs

from fastsim_contract.errors import LeaseError
from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.values import RECEIPT_REQUIRED_KEYS
from fastsim_embedded.output_leases import FileReadbackLease, FileWriteLease, Transaction
from fastsim_embedded.output_names import (
    STAGING_SUFFIX,
    NameLock,
    OutputRefused,
    check_output_name,
    identity_of,
    lidentity,
)

__all__ = [
    "ComponentOutputs",
    "FileOutputService",
    "FileReadbackLease",
    "FileWriteLease",
    "NameLock",
    "OutputRefused",
    "Transaction",
    "check_output_name",
]

QUARANTINE_DIR = ".quarantine"


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


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
        why = check_output_name(name, directory if directory.is_dir() else None)
        if why is not None:
            raise OutputRefused(directory / name, why)
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
                identity=identity_of(os.fstat(fd)), name_lock=name_lock,
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
            _fsync_dir(self.output_dir)

    def _still_ours(self, tx: Transaction) -> bool:
        return tx.identity is not None and lidentity(tx.staging) == tx.identity

    def transaction_of(self, lease: object) -> Transaction | None:
        """The transaction of a write or readback lease this service issued, else ``None``."""
        entry = self._by_lease.get(id(lease))
        if entry is not None and entry[0] is lease:
            return entry[1]
        return next((t for _, t in self._by_lease.values() if t.readback is lease), None)

    def _tx_of(self, lease: object, call: str) -> Transaction:
        entry = self._by_lease.get(id(lease))
        if entry is None or entry[0] is not lease:
            raise LeaseError(f"{call}: not a write lease issued by this output service")
        return entry[1]

    def seal(self, lease: object) -> None:
        """Fsync and close the staging file; its size is final."""
        tx = self._tx_of(lease, "seal")
        with tx.lock:
            if tx.state != "open" or tx.fd is None:
                raise LeaseError(f"seal: the transaction for {tx.name!r} is {tx.state}")
        if not tx.named:  # sealed without a flush: name it first
            self.name_staging(tx)
        with tx.lock:
            if tx.state != "open" or tx.fd is None:  # revoked meanwhile
                raise LeaseError(f"seal: the transaction for {tx.name!r} is {tx.state}")
            os.fsync(tx.fd)
            os.close(tx.fd)
            tx.fd = None
            tx.state = "sealed"

    def open_readback(self, lease: object) -> FileReadbackLease:
        """A new exact readback lease of the sealed write (it replaces any earlier one)."""
        tx = self._tx_of(lease, "open_readback")
        with tx.lock:
            if tx.state != "sealed":
                raise LeaseError(f"open_readback: the transaction for {tx.name!r} is {tx.state}")
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
            if tx.state != "sealed":
                raise LeaseError(f"confirm_validation: the transaction for {tx.name!r} is {tx.state}")
            self._check_receipt(tx, receipt)
            tx.state = "confirmed"

    def _check_receipt(self, tx: Transaction, receipt: Mapping[str, object]) -> None:
        missing = [k for k in RECEIPT_REQUIRED_KEYS if k not in receipt]
        if missing:
            raise LeaseError(f"confirm_validation: receipt lacks {', '.join(missing)}")
        size = tx.staging.stat().st_size
        if receipt["validated_bytes"] != size:
            raise LeaseError(
                f"confirm_validation: receipt validated {receipt['validated_bytes']} bytes, sealed size is {size}"
            )
        if receipt["completion_id"] != self.completion_id:
            raise LeaseError("confirm_validation: receipt names another completion")
        digest = receipt.get("content_sha256")
        if self.policy.integrity == "sha256":
            if not isinstance(digest, str):
                raise LeaseError("confirm_validation: integrity sha256 requires content_sha256")
            actual = hashlib.sha256(tx.staging.read_bytes()).hexdigest()
            if digest != actual:
                raise LeaseError("confirm_validation: content_sha256 does not match the sealed file")
        elif digest is not None:
            raise LeaseError(
                "confirm_validation: a content digest needs RunOutputPolicy(integrity='sha256')"
            )

    def commit(self, lease: object) -> str:
        """Atomically publish the confirmed file under its final name."""
        tx = self._tx_of(lease, "commit")
        with tx.lock:
            if self.commit_refusal is not None:
                raise LeaseError(f"commit: refused, {self.commit_refusal}")
            if tx.state != "confirmed":
                raise LeaseError(f"commit: the transaction for {tx.name!r} is {tx.state}")
            if not self._still_ours(tx):
                raise LeaseError(f"commit: {tx.staging} is no longer the file this Run wrote")
            self._publish(tx)
            _fsync_dir(self.output_dir)
            tx.state = "committed"
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
            if tx.state == "committed":
                raise LeaseError(f"abort: {tx.name!r} is already committed")
            if tx.state in ("aborted", "revoked"):
                return
            self._dispose(tx, "aborted")

    # -- Core-only ------------------------------------------------------------------
    def refuse_commits(self, reason: str) -> None:
        """From now on every commit raises ``LeaseError`` naming ``reason``."""
        self.commit_refusal = reason

    def _dispose(self, tx: Transaction, state: str) -> None:
        tx.state = state
        if tx.readback is not None:
            tx.readback.close()
        if tx.fd is not None:
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
        if self.policy.publish_incomplete:
            if not tx.named:  # never flushed: give it its name now, if that is free
                with contextlib.suppress(OSError):
                    os.link(tx.staging, self.output_dir / f"{tx.name}{STAGING_SUFFIX}", follow_symlinks=False)
                    os.unlink(tx.staging)
                    tx.staging = self.output_dir / f"{tx.name}{STAGING_SUFFIX}"
                    tx.named = True
            tx.disposed_to = tx.staging
        elif self.policy.preserve_incomplete:
            target = self._quarantine_target(tx)
            if target is None:
                tx.disposed_to = tx.staging
            else:
                os.rename(tx.staging, target)
                tx.disposed_to = target
        else:
            tx.staging.unlink()
        _fsync_dir(self.output_dir)

    def _quarantine_target(self, tx: Transaction) -> Path | None:
        """``.quarantine/<cid>/<name>.incomplete``, made without following symlinks; ``None``
        (keep the file where it is) when that is unsafe."""
        quarantine = self.output_dir / QUARANTINE_DIR
        folder = quarantine / self.completion_id
        for directory in (quarantine, folder):
            with contextlib.suppress(FileExistsError):
                os.mkdir(directory, 0o755)
            if os.path.islink(directory) or not directory.is_dir():
                tx.note = f"{directory} is not a plain directory; the recording stays at {tx.staging}"
                return None
        target = folder / f"{tx.name}{STAGING_SUFFIX}"
        if os.path.lexists(target):
            tx.note = f"{target} already exists; the recording stays at {tx.staging}"
            return None
        return target

    def revoke_open(self, deadline_monotonic: float, owner: str | None = None) -> bool:
        """Revoke every unfinished transaction (of ``owner``, or all), waiting at most until
        the deadline.

        Returns whether the cleanup finished in time (it continues in the background
        otherwise).
        """
        def work() -> None:
            for _, tx in list(self._by_lease.values()):
                if owner is not None and tx.owner != owner:
                    continue
                if tx.state in ("open", "sealed", "confirmed"):
                    self._dispose(tx, "revoked")
            if owner is None:
                self.release_reservations()

        helper = threading.Thread(target=work, name="fastsim-output-revoke", daemon=True)
        helper.start()
        helper.join(max(0.0, deadline_monotonic - time.monotonic()))
        return not helper.is_alive()

    def transactions(self) -> tuple[Transaction, ...]:
        """Every transaction of this Run (the outcome report)."""
        with self._lock:
            return tuple(self._by_name.values())


@attrs.define(eq=False)
class ComponentOutputs:
    """One component's view of the output service: it can only touch its own leases."""

    service: FileOutputService
    owner: str

    def _own(self, lease: object, call: str) -> None:
        tx = self.service.transaction_of(lease)
        if tx is not None and tx.owner != self.owner:
            raise LeaseError(f"{call}: the lease belongs to another component")

    def open_write(self, name: str) -> FileWriteLease:
        """Open a transaction owned by this component."""
        return self.service.open_write(name, self.owner)

    def seal(self, lease: object) -> None:
        """See ``FileOutputService.seal``."""
        self._own(lease, "seal")
        self.service.seal(lease)

    def open_readback(self, lease: object) -> FileReadbackLease:
        """See ``FileOutputService.open_readback``."""
        self._own(lease, "open_readback")
        return self.service.open_readback(lease)

    def confirm_validation(self, lease: object, receipt: Mapping[str, object]) -> None:
        """See ``FileOutputService.confirm_validation``."""
        self._own(lease, "confirm_validation")
        self.service.confirm_validation(lease, receipt)

    def commit(self, lease: object) -> str:
        """See ``FileOutputService.commit``."""
        self._own(lease, "commit")
        return self.service.commit(lease)

    def abort(self, lease: object) -> None:
        """See ``FileOutputService.abort``."""
        self._own(lease, "abort")
        self.service.abort(lease)
