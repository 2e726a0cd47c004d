"""Early writeback of the output lease (``fastsim_embedded.output.writeback``): disk work
moves into the Run; what is durable, named, read back and published does not change."""

from __future__ import annotations

import errno
import importlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import types
from pathlib import Path

import pytest

from fastsim_contract.errors import LeaseError
from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_embedded.output.transaction import FileOutputService, FileWriteLease

writeback = importlib.import_module("fastsim_embedded.output.writeback")

CID = "run-completion-1"
STEP = 64 << 10
CHUNK = bytes(range(256)) * 96  # 24 KiB, every byte value


def _service(tmp_path: Path) -> FileOutputService:
    return FileOutputService(tmp_path / "out", RunOutputPolicy(), CID)


def _receipt(size: int) -> dict[str, object]:
    return {"validator": "t", "validated_bytes": size, "integrity": "structural", "completion_id": CID}


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """``WRITEBACK_STEP`` = 64 KiB; yields the file size at every background sync."""
    sizes: list[int] = []
    real = writeback._sync

    def spy(fd: int) -> None:
        sizes.append(os.fstat(fd).st_size)
        real(fd)

    monkeypatch.setattr(writeback, "WRITEBACK_STEP", STEP)
    monkeypatch.setattr(writeback, "_sync", spy)
    return sizes


def _write(lease: FileWriteLease, chunks: int) -> bytes:
    """``chunks`` numbered chunks, by ``write`` and ``writev`` in turn; every byte written."""
    out = []
    for k in range(chunks):
        data = k.to_bytes(4, "little") + CHUNK
        if k % 2:
            lease.writev([data[:100], memoryview(data)[100:]], len(data))
        else:
            lease.write(data)
        out.append(data)
    return b"".join(out)


def _wait(sizes: list[int], n: int) -> None:
    deadline = time.monotonic() + 10
    while len(sizes) < n and time.monotonic() < deadline:
        time.sleep(0.01)


def test_writes_past_each_step_start_a_background_sync(tmp_path: Path, synced: list[int]) -> None:
    """Every 64 KiB written wakes the writeback thread; seal waits for it; the bytes published are the bytes written."""
    service = _service(tmp_path)
    lease = service.open_write("episode.fsr")
    lease.write(b"head")
    lease.flush()
    written = b"head" + _write(lease, 40)  # about 1 MiB: 15 steps
    _wait(synced, 1)
    assert synced  # while the Run still writes, not at seal
    assert synced[0] >= STEP
    tx = service.transactions()[0]
    assert tx.writeback is not None
    service.seal(lease)
    during = len(synced)
    assert tx.writeback.syncs == during  # every sync finished before seal's own fsync
    readback = service.open_readback(lease)
    assert readback.read() == written
    readback.close()
    service.confirm_validation(readback, _receipt(len(written)))
    service.commit(lease)
    assert (tmp_path / "out" / "episode.fsr").read_bytes() == written
    assert len(synced) == during  # none after seal
    assert not any(t.name == "fastsim-output-writeback" for t in threading.enumerate())


def test_a_short_file_never_starts_the_thread(tmp_path: Path) -> None:
    """A file shorter than one step (an episode) runs no writeback thread at all."""
    service = _service(tmp_path)
    lease = service.open_write("episode.fsr")
    _write(lease, 3)
    tx = service.transactions()[0]
    assert tx.writeback is not None
    assert tx.writeback.next_at == writeback.WRITEBACK_STEP
    assert not any(t.name == "fastsim-output-writeback" for t in threading.enumerate())
    service.seal(lease)
    assert tx.writeback.syncs == 0


def test_readback_reads_the_right_bytes_from_disk(tmp_path: Path, synced: list[int]) -> None:
    """With the written pages dropped from the page cache, the readback lease reads every byte back exactly."""
    service = _service(tmp_path)
    lease = service.open_write("episode.fsr")
    written = _write(lease, 60)
    service.seal(lease)
    assert synced
    staging = service.transactions()[0].staging
    fd = os.open(staging, os.O_RDONLY)
    try:  # sealed: clean pages, so DONTNEED drops them and reads go to the disk
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)
    readback = service.open_readback(lease)
    for at in (len(written) - 7, 0, 3 * len(CHUNK) + 5, STEP - 1, len(written) // 2):
        readback.seek(at)
        assert readback.read(4096) == written[at:at + 4096]
    readback.seek(0)
    assert readback.read() == written
    readback.close()


def test_a_failed_background_sync_fails_seal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An I/O error met by the background sync is raised by seal (the kernel reports it once); abort still disposes."""
    def broken(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(writeback, "WRITEBACK_STEP", STEP)
    monkeypatch.setattr(writeback, "_sync", broken)
    service = _service(tmp_path)
    lease = service.open_write("episode.fsr")
    _write(lease, 10)
    for thread in threading.enumerate():  # the sync failed and its thread ended
        if thread.name == "fastsim-output-writeback":
            thread.join(10)
    with pytest.raises(OSError, match="Input/output error"):
        service.seal(lease)
    assert service.transactions()[0].state == "open"
    service.abort(lease)
    assert (tmp_path / "out" / ".quarantine" / CID / "episode.fsr.incomplete").exists()


def _stall_syncs(monkeypatch: pytest.MonkeyPatch) -> tuple[threading.Event, threading.Event]:
    """Background syncs every STEP bytes, each stuck until ``release`` is set: (``stuck``, ``release``)."""
    stuck, release = threading.Event(), threading.Event()

    def stalled(fd: int) -> None:
        stuck.set()
        release.wait(10)

    monkeypatch.setattr(writeback, "WRITEBACK_STEP", STEP)
    monkeypatch.setattr(writeback, "_sync", stalled)
    return stuck, release


def test_abort_and_revocation_never_wait_for_a_stalled_sync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A background sync stuck on the disk holds up neither abort nor revocation; its thread ends once it returns."""
    stuck, release = _stall_syncs(monkeypatch)
    service = _service(tmp_path)
    first = service.open_write("a.fsr")
    second = service.open_write("b.fsr")
    _write(first, 10)
    _write(second, 10)
    assert stuck.wait(10)
    started = time.monotonic()
    service.abort(first)
    assert service.revoke_open(time.monotonic() + 5)
    assert time.monotonic() - started < 2
    threads = [t for t in threading.enumerate() if t.name == "fastsim-output-writeback"]
    assert threads
    release.set()
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()


_KILLED = textwrap.dedent("""
    import sys
    import time
    from pathlib import Path
    import fastsim_embedded.output.writeback as writeback
    from fastsim_contract.output_policy import RunOutputPolicy
    from fastsim_embedded.output.transaction import FileOutputService
    writeback.WRITEBACK_STEP = 64 << 10
    service = FileOutputService(Path(sys.argv[1]), RunOutputPolicy(), "cid")
    lease = service.open_write("episode.fsr")
    lease.write(b"head")
    lease.flush()
    for k in range(100):
        lease.write(bytes([k]) * 10000)
    tx = service.transactions()[0]
    while not tx.writeback.syncs:
        time.sleep(0.01)
    print("written", flush=True)
    sys.stdin.read()
""")


def test_a_killed_writer_leaves_the_same_incomplete_file(tmp_path: Path) -> None:
    """kill -9 after background syncs: <name>.incomplete holds every byte written, and nothing else is left."""
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-c", _KILLED, str(out)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.stdout is not None
    assert proc.stdout.readline() == b"written\n"
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    assert sorted(p.name for p in out.iterdir()) == [".episode.fsr.lock", "episode.fsr.incomplete"]
    data = (out / "episode.fsr.incomplete").read_bytes()
    assert data == b"head" + b"".join(bytes([k]) * 10000 for k in range(100))


class _NoThread(threading.Thread):
    """A thread that cannot start (``RuntimeError``, as at thread exhaustion or interpreter exit)."""

    def start(self) -> None:
        """Refuse, as ``threading.Thread.start`` does when no thread can be created."""
        raise RuntimeError("can't start new thread")


def _open_fds() -> set[str]:
    return set(os.listdir("/proc/self/fd"))


def _no_dup(fd: int) -> int:
    raise OSError(errno.EMFILE, "Too many open files")


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
@pytest.mark.parametrize("missing", ["thread", "fd"])
def test_no_writeback_thread_leaves_the_write_whole(
    missing: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the writeback thread or its fd cannot be had, writes still succeed, no fd leaks, seal publishes every byte."""
    monkeypatch.setattr(writeback, "WRITEBACK_STEP", STEP)
    if missing == "thread":
        monkeypatch.setattr(writeback, "threading", types.SimpleNamespace(Thread=_NoThread, Event=threading.Event))
    else:
        monkeypatch.setattr(writeback, "os", types.SimpleNamespace(dup=_no_dup, close=os.close))
    service = _service(tmp_path)
    before = _open_fds()
    lease = service.open_write("episode.fsr")
    written = _write(lease, 10)  # three steps: each would start the thread
    service.seal(lease)
    readback = service.open_readback(lease)
    assert readback.read() == written
    readback.close()
    service.confirm_validation(readback, _receipt(len(written)))
    service.commit(lease)
    assert _open_fds() == before  # the staging fd, the name lock's and no dup of either
    assert (tmp_path / "out" / "episode.fsr").read_bytes() == written


def test_a_revocation_while_seal_waits_for_the_sync_fails_seal_as_revoked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Revoked (deadline overrun) while seal waits for a stalled background sync: seal then says so, touching no fd."""
    stuck, release = _stall_syncs(monkeypatch)
    service = _service(tmp_path)
    lease = service.open_write("episode.fsr")
    _write(lease, 10)
    assert stuck.wait(10)
    tx = service.transactions()[0]
    failures: list[BaseException] = []

    def seal() -> None:
        try:
            service.seal(lease)
        except BaseException as exc:  # the test reports what seal raised
            failures.append(exc)

    sealing = threading.Thread(target=seal)
    sealing.start()
    deadline = time.monotonic() + 10
    while not (tx.named and tx.lock.locked()) and time.monotonic() < deadline:
        time.sleep(0.01)  # seal named the file and now waits for the sync, under the lock
    time.sleep(0.05)
    assert service.revoke_open(time.monotonic() + 5)
    assert tx.state == "revoked"
    release.set()
    sealing.join(10)
    assert len(failures) == 1
    assert isinstance(failures[0], LeaseError), repr(failures[0])
    assert "revoked" in str(failures[0])
