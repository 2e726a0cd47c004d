"""Disk blocks reserved ahead of a staging file's end (``fastsim_embedded.output.preallocate``):
the file's size and bytes are exactly what was written, the reservation is freed at seal
and at disposal, and a filesystem that refuses it changes nothing but the cost."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import pytest

from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_embedded.output.transaction import FileOutputService, FileWriteLease

preallocate = importlib.import_module("fastsim_embedded.output.preallocate")

CID = "run-completion-1"
BATCH = bytes(range(256)) * 2048  # 512 KiB, every byte value

needs_fallocate = pytest.mark.skipif(preallocate._FALLOCATE is None, reason="no fallocate(2) on this platform")


def _receipt(size: int) -> dict[str, object]:
    return {"validator": "t", "validated_bytes": size, "integrity": "structural", "completion_id": CID}


def _write(lease: FileWriteLease, batches: int) -> bytes:
    out = [k.to_bytes(4, "little") + BATCH for k in range(batches)]
    for k, data in enumerate(out):
        if k % 2:
            lease.writev([data[:100], memoryview(data)[100:]], len(data))
        else:
            lease.write(data)
    return b"".join(out)


def _allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


@needs_fallocate
def test_blocks_are_reserved_ahead_and_freed_at_seal(tmp_path: Path) -> None:
    """Past 1 MiB blocks are reserved ahead (the size stays the bytes written); seal frees them; the bytes published are the bytes written."""
    service = FileOutputService(tmp_path / "out", RunOutputPolicy(), CID)
    lease = service.open_write("run.fsr")
    written = _write(lease, 6)  # 3 MiB
    tx = service.transactions()[0]
    assert tx.prealloc is not None
    assert tx.prealloc.calls == 1
    assert os.fstat(tx.fd).st_size == len(written)  # type: ignore[arg-type]  # KEEP_SIZE
    assert os.fstat(tx.fd).st_blocks * 512 >= len(written) + preallocate.CHUNK // 2  # type: ignore[arg-type]
    service.seal(lease)
    assert _allocated(tx.staging if tx.staging.exists() else tmp_path / "out" / "run.fsr.incomplete") < len(written) + (64 << 10)
    readback = service.open_readback(lease)
    assert readback.read() == written
    readback.close()
    service.confirm_validation(readback, _receipt(len(written)))
    service.commit(lease)
    final = tmp_path / "out" / "run.fsr"
    assert final.read_bytes() == written
    assert _allocated(final) < len(written) + (64 << 10)


def test_a_small_file_reserves_nothing(tmp_path: Path) -> None:
    """A file below 1 MiB (an episode) makes no reservation at all."""
    service = FileOutputService(tmp_path / "out", RunOutputPolicy(), CID)
    lease = service.open_write("episode.fsr")
    lease.write(BATCH)
    tx = service.transactions()[0]
    assert tx.prealloc is not None
    assert tx.prealloc.calls == 0
    assert tx.prealloc.reserved == 0
    service.seal(lease)


@needs_fallocate
def test_an_aborted_file_kept_as_incomplete_holds_no_reserved_blocks(tmp_path: Path) -> None:
    """Disposal frees the reservation too: a kept .incomplete holds its bytes and no more."""
    service = FileOutputService(tmp_path / "out", RunOutputPolicy(publish_incomplete=True), CID)
    lease = service.open_write("run.fsr")
    lease.write(b"head")
    lease.flush()  # named <name>.incomplete
    written = b"head" + _write(lease, 4)
    tx = service.transactions()[0]
    assert tx.prealloc is not None
    assert tx.prealloc.calls == 1
    service.abort(lease)
    kept = tmp_path / "out" / "run.fsr.incomplete"
    assert kept.read_bytes() == written
    assert _allocated(kept) < len(written) + (64 << 10)


def test_a_refused_reservation_changes_nothing_but_the_cost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """fallocate failing (no support, a full disk) turns reservations off; every write still lands."""
    calls: list[tuple[int, int]] = []

    def refuse(fd: int, mode: int, offset: int, length: int) -> int:
        calls.append((offset, length))
        return -1

    monkeypatch.setattr(preallocate, "_FALLOCATE", refuse)
    service = FileOutputService(tmp_path / "out", RunOutputPolicy(), CID)
    lease = service.open_write("run.fsr")
    written = _write(lease, 8)
    tx = service.transactions()[0]
    assert tx.prealloc is not None
    assert len(calls) == 1  # tried once, then off
    assert not tx.prealloc.enabled
    service.seal(lease)
    readback = service.open_readback(lease)
    assert readback.read() == written
    readback.close()
