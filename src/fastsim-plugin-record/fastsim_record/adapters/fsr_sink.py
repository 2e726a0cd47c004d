"""The FSR sink: drives ``fastsim_recording_format``'s writer over Core's opaque write lease.

The sink never sees a path.  The write lease is wrapped as a write-only binary file for
``FsrWriter``; the validator reads through the exact readback lease object, wrapped as
a read-only seekable binary file.

At construction the sink opens the write lease and at once writes and flushes the file
header and run metadata through it, so every staged ``.incomplete`` starts with a valid
header (durability beyond the page cache is the lease's: its ``flush`` is the only hook).

Output transaction (``finish``), each step only after the previous one succeeded:

    | # | step                                                      | FormatError / Core error |
    |---|-----------------------------------------------------------|--------------------------|
    | 1 | writer.seal(fence, degraded); lease flush + close          | OutputError              |
    | 2 | outputs.seal(write)                                       | OutputError              |
    | 3 | rb = outputs.open_readback(write)                         | OutputError              |
    | 4 | receipt = validate(rb) (structural / fast / strong)       | OutputError (no commit)  |
    | 5 | rb.close(); outputs.confirm_validation(rb, receipt)       | ContractError (no commit)|
    | 6 | outputs.commit(write)                                     | OutputError              |

``abort`` is idempotent and a no-op after commit.

Record columns (the columnar numeric path) become ``RecordBlock`` values, or rows when
they hold one record (``fsr_columns.batch_records``: the same bytes either way).
"""

from __future__ import annotations

import contextlib
import io
import time
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any, BinaryIO, cast

from fastsim_contract.errors import CoreError, LeaseError
from fastsim_contract.protocols import OutputService, ReadbackLease, WriteLease
from fastsim_record.adapters.fsr_columns import batch_records
from fastsim_record.errors import ContractError, OutputError
from fastsim_record.ports.sinks import OutRecord, RecordColumns, StreamDecl
from fastsim_recording_format.errors import FormatError
from fastsim_recording_format.model import RunMetadata, StreamSpec
from fastsim_recording_format.validate import ValidationReceipt, validate
from fastsim_recording_format.writer import FsrWriter

__all__ = [
    "FsrSink", "LeaseReader", "LeaseWriter", "receipt_mapping", "validate_readback",
]

_BIG_WRITE = 16 * 1024  #: parts this big on average: one ``write`` each costs less than joining them


class LeaseWriter(io.RawIOBase):
    """A write lease as a write-only binary file (no fileno: Core owns durability)."""

    def __init__(self, lease: WriteLease) -> None:
        super().__init__()
        self._lease = lease

    def writable(self) -> bool:
        """File protocol."""
        return True

    def write(self, data: Any) -> int:
        """Write all of ``data`` to the lease."""
        view = memoryview(data)
        n = self._lease.write(view)
        return view.nbytes if n is None else int(n)

    def writev(self, parts: Sequence[Any], nbytes: int) -> int:
        """Write ``parts`` (``nbytes`` in all) in order: one vectored call when the lease has
        one (``FileWriteLease.writev``), else one ``write`` each of large parts (as bytes), or
        of all of them joined."""
        vectored = getattr(self._lease, "writev", None)
        if vectored is not None:
            return int(vectored(parts, nbytes))
        if nbytes >= _BIG_WRITE * len(parts):
            return sum(self.write(view) for view in (memoryview(p).cast("B") for p in parts) if view.nbytes)
        return self.write(b"".join(parts))

    def flush(self) -> None:
        """Flush the lease."""
        self._lease.flush()


class LeaseReader(io.RawIOBase):
    """A readback lease as a read-only seekable binary file; counts bytes read."""

    def __init__(self, lease: ReadbackLease) -> None:
        super().__init__()
        self._lease = lease
        self.bytes_read = 0

    def readable(self) -> bool:
        """File protocol."""
        return True

    def seekable(self) -> bool:
        """File protocol."""
        return True

    def read(self, size: int | None = -1) -> bytes:
        """Read up to ``size`` bytes."""
        data = self._lease.read(-1 if size is None else size)
        self.bytes_read += len(data)
        return data

    def readinto(self, buffer: Any) -> int:
        """Read into ``buffer``."""
        view = memoryview(buffer).cast("B")
        data = self._lease.read(len(view))
        view[: len(data)] = data
        self.bytes_read += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = 0) -> int:
        """Seek the lease."""
        return self._lease.seek(offset, whence)

    def tell(self) -> int:
        """Position in the lease."""
        return self._lease.tell()


def validate_readback(
    readback: ReadbackLease, *, profile: str, policy_integrity: str, completion_id: str
) -> tuple[dict[str, object], int]:
    """Validate through the readback lease object; the Core receipt and the bytes read."""
    reader = LeaseReader(readback)
    receipt = validate(cast(BinaryIO, reader), profile, policy_integrity)
    if receipt.completion_identity != completion_id:
        raise OutputError(f"validated file names completion {receipt.completion_identity!r}, expected {completion_id!r}")
    return receipt_mapping(receipt), reader.bytes_read


def receipt_mapping(receipt: ValidationReceipt) -> dict[str, object]:
    """The format's receipt in Core's ``confirm_validation`` vocabulary (immutable copy)."""
    return {
        "validator": f"{receipt.validator_schema}:{receipt.profile}",
        "validator_schema": receipt.validator_schema, "profile": receipt.profile,
        "validated_bytes": receipt.validated_bytes, "integrity": receipt.profile,
        "policy_integrity": receipt.policy_integrity, "content_sha256": receipt.content_sha256,
        "footer": receipt.footer_identity, "completion_id": receipt.completion_identity,
    }


class FsrSink:
    """One FSR artifact over one write lease; all methods run on the writer worker."""

    accepts_columns = True  # a ``ColumnSink``: column runs become ``RecordBlock`` values

    def __init__(
        self,
        outputs: OutputService,
        name: str,
        *,
        run_id: str,
        completion_id: str,
        streams: Sequence[StreamDecl],
        integrity: str,
        policy_integrity: str,
        producer: Mapping[str, object],
        mode: str = "record",
        source_sha256: str | None = None,
        fence_extra: Mapping[str, object] | None = None,
        run_attributes: Mapping[str, object] | None = None,
        payload_crc: bool = False,
    ) -> None:
        self._outputs = outputs
        self._name = name
        self._integrity = integrity
        self._payload_crc = payload_crc  # the trusted output policy's runtime.output.payload_crc
        self._policy_integrity = policy_integrity
        self._completion_id = completion_id
        self._ids = {decl.name: i + 1 for i, decl in enumerate(streams)}
        self._specs = [
            StreamSpec(
                self._ids[d.name], d.name, d.kind, dict(d.codec),
                {**d.attributes, "required": d.required},
            )
            for d in streams
        ]
        self._run = RunMetadata(
            run_id, completion_id, dict(producer), mode=mode, source_sha256=source_sha256,
            attributes=dict(run_attributes or {}),  # the Run's name, backend, seed, config, scene
        )
        self._fence_extra = dict(fence_extra or {})  # e.g. a render Replay's source sequence
        try:
            self._lease: WriteLease = outputs.open_write(name)
        except Exception as exc:
            raise _translate(exc, f"open_write {name!r}") from exc
        self._writer: FsrWriter | None = None
        # The header and run metadata go out now, not with batch 0, so an .incomplete
        # left by any kill holds at least a valid header (docs/fsr-format.md section 7).
        try:
            self._open_writer()
            self._lease.flush()
        except ValueError as exc:
            self._abort_quietly()
            raise OutputError(f"FSR writer refused the run metadata: {exc}") from exc
        except Exception as exc:
            self._abort_quietly()
            raise _translate(exc, "write the file header") from exc
        self._state = "open"  # open | committed | aborted
        self.readback_lease: ReadbackLease | None = None
        self.receipt: Mapping[str, object] | None = None

    def _abort_quietly(self) -> None:
        with contextlib.suppress(Exception):  # the header error is the one to report
            self._outputs.abort(self._lease)
        self._state = "aborted"

    @property
    def lease(self) -> WriteLease:
        """The write lease (identity checks in tests)."""
        return self._lease

    def _open_writer(self) -> FsrWriter:
        writer = self._writer
        if writer is None:
            target = cast(BinaryIO, LeaseWriter(self._lease))
            writer = FsrWriter(
                target, self._run, self._specs, integrity=self._integrity, payload_crc=self._payload_crc
            )
            self._writer = writer
        return writer

    def write_batch(self, records: Sequence[OutRecord | RecordColumns]) -> int:
        """Append one batch."""
        batch = batch_records(self._ids, records)
        try:
            return self._open_writer().write_batch(batch)
        except ValueError as exc:
            raise OutputError(f"FSR writer refused a batch: {exc}") from exc

    def finish(self, *, degraded: bool, fence: Mapping[str, object]) -> dict[str, object]:
        """Steps 1-6; returns the facts for the finalizer summary."""
        outputs = self._outputs
        lease = self._lease
        try:
            sealed = self._open_writer().seal(
                terminal_fence={**fence, **self._fence_extra}, degraded=degraded
            )
            lease.flush()
            lease.close()
            outputs.seal(lease)
            readback = outputs.open_readback(lease)
        except (ValueError, OSError, CoreError) as exc:
            raise _translate(exc, "seal") from exc
        self.readback_lease = readback
        started = time.perf_counter()
        try:
            receipt, bytes_read = validate_readback(
                readback, profile=self._integrity, policy_integrity=self._policy_integrity,
                completion_id=self._completion_id,
            )
        except FormatError as exc:
            raise OutputError(f"readback validation failed: {exc}", offset=exc.offset) from exc
        except (ValueError, OSError, CoreError) as exc:
            raise _translate(exc, "readback validation") from exc
        finally:
            readback.close()
        readback_elapsed = time.perf_counter() - started
        frozen = MappingProxyType(receipt)
        try:
            outputs.confirm_validation(readback, frozen)
        except Exception as exc:
            raise _translate(exc, "confirm_validation") from exc
        self.receipt = receipt
        try:
            committed = outputs.commit(lease)
        except Exception as exc:
            raise _translate(exc, "commit") from exc
        self._state = "committed"
        return {
            "committed_name": committed,
            "file_bytes": sealed.size,
            "readback_elapsed_s": readback_elapsed,
            "readback_bytes_read": bytes_read,
            "receipt": receipt,
        }

    def abort(self) -> None:
        """Abort the transaction (idempotent; nothing after commit)."""
        if self._state != "open":
            return
        self._state = "aborted"
        try:
            self._outputs.abort(self._lease)
        except Exception as exc:
            raise _translate(exc, "abort") from exc


def _translate(exc: BaseException, what: str) -> OutputError | ContractError:
    if isinstance(exc, LeaseError | ContractError):
        return ContractError(f"{what}: {exc}")
    if isinstance(exc, OutputError):
        return exc
    if isinstance(exc, FormatError):
        return OutputError(f"{what}: {exc}", offset=exc.offset)
    return OutputError(f"{what}: {exc}")
