"""The embedded output service on real files: staging, atomic publish, abort, bounded revocation."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from fastsim_contract.errors import LeaseError
from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_embedded.output.transaction import FileOutputService, Transaction

CID = "run-completion-1"


def _service(tmp_path: Path, **policy: bool) -> FileOutputService:
    return FileOutputService(tmp_path / "out", RunOutputPolicy(**policy), CID)  # type: ignore[arg-type]


def _receipt(size: int) -> dict[str, object]:
    return {"validator": "t", "validated_bytes": size, "integrity": "structural", "completion_id": CID}


def test_staging_then_atomic_publish(tmp_path: Path) -> None:
    """Bytes live in a hidden file until the first flush names it <name>.incomplete; commit publishes <name>."""
    service = _service(tmp_path)
    out = tmp_path / "out"
    lease = service.open_write("episode.fsr")
    lease.write(b"abc")
    names = sorted(p.name for p in out.iterdir())
    assert names[0].startswith(".episode.fsr.incomplete-")  # hidden until the first flush
    assert names[1:] == [".episode.fsr.lock"]
    lease.flush()
    lease.write(memoryview(b"def"))
    assert sorted(p.name for p in out.iterdir()) == [".episode.fsr.lock", "episode.fsr.incomplete"]
    service.seal(lease)
    readback = service.open_readback(lease)
    assert readback.read() == b"abcdef"
    readback.close()
    service.confirm_validation(readback, _receipt(6))
    assert sorted(p.name for p in out.iterdir()) == [".episode.fsr.lock", "episode.fsr.incomplete"]
    assert service.commit(lease) == "episode.fsr"
    assert sorted(p.name for p in out.iterdir()) == ["episode.fsr"]
    assert (out / "episode.fsr").read_bytes() == b"abcdef"


def test_abort_publishes_nothing_and_keeps_an_older_final_file(tmp_path: Path) -> None:
    """Abort never touches the final name (even with overwrite); the staging file is quarantined."""
    service = _service(tmp_path)
    service.overwrite = True
    out = tmp_path / "out"
    out.mkdir()
    (out / "episode.fsr").write_bytes(b"previous run")
    lease = service.open_write("episode.fsr")
    lease.write(b"new")
    service.abort(lease)
    assert (out / "episode.fsr").read_bytes() == b"previous run"
    assert (out / ".quarantine" / CID / "episode.fsr.incomplete").read_bytes() == b"new"


def test_readback_lease_of_another_service_is_refused(tmp_path: Path) -> None:
    """A readback lease issued by another output service never confirms this one's write."""
    mine, theirs = _service(tmp_path / "a"), _service(tmp_path / "b")
    lease, other = mine.open_write("x.fsr"), theirs.open_write("x.fsr")
    for service, write in ((mine, lease), (theirs, other)):
        write.write(b"1")
        service.seal(write)
    foreign = theirs.open_readback(other)
    mine.open_readback(lease)
    with pytest.raises(LeaseError):
        mine.confirm_validation(foreign, _receipt(1))
    with pytest.raises(LeaseError):
        mine.seal(other)


def test_one_transaction_per_name(tmp_path: Path) -> None:
    """A second open_write of the same name in one Run is refused."""
    service = _service(tmp_path)
    service.open_write("a.fsr")
    with pytest.raises(LeaseError):
        service.open_write("a.fsr")


def test_revocation_is_bounded_by_its_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A stalled disposal does not hold revoke_open past its deadline; it reports not-in-time."""
    service = _service(tmp_path)
    service.open_write("a.fsr")
    release = threading.Event()

    def stalled(self: FileOutputService, tx: Transaction, event: object) -> None:
        release.wait()

    monkeypatch.setattr(FileOutputService, "_dispose", stalled)
    assert service.revoke_open(time.monotonic() + 0.05) is False
    release.set()


def test_revoked_lease_refuses_everything(tmp_path: Path) -> None:
    """After revocation the write lease and the transaction calls are refused; abort is a no-op."""
    service = _service(tmp_path, preserve_incomplete=False)
    lease = service.open_write("a.fsr")
    lease.write(b"x")
    assert service.revoke_open(time.monotonic() + 5)
    with pytest.raises(LeaseError):
        lease.write(b"y")
    with pytest.raises(LeaseError):
        service.seal(lease)
    service.abort(lease)
    assert list((tmp_path / "out").iterdir()) == []


def test_revocation_after_a_late_finalizer_touches_only_its_owner(tmp_path: Path) -> None:
    """Core revokes the late component's leases and leaves another component's transaction alone."""
    service = _service(tmp_path)
    late = service.open_write("late.fsr", owner="a")
    other = service.open_write("other.fsr", owner="b")
    assert service.revoke_open(time.monotonic() + 5, owner="a")
    with pytest.raises(LeaseError):
        late.write(b"x")
    other.write(b"fine")
    service.seal(other)


def test_the_staging_name_never_holds_less_than_the_first_flush(tmp_path: Path) -> None:
    """<name>.incomplete appears only once the first flushed bytes (the FSR header) are in it."""
    service = _service(tmp_path)
    out = tmp_path / "out"
    lease = service.open_write("episode.fsr")
    assert not (out / "episode.fsr.incomplete").exists()
    lease.write(b"header")
    assert not (out / "episode.fsr.incomplete").exists()
    lease.flush()
    assert (out / "episode.fsr.incomplete").read_bytes() == b"header"
    assert [p.name for p in out.iterdir() if p.name.startswith(".episode.fsr.incomplete")] == []
    service.abort(lease)


def test_a_planted_staging_name_refuses_the_first_flush_and_is_left_alone(tmp_path: Path) -> None:
    """A <name>.incomplete planted after the reservation is never replaced: flush raises LeaseError."""
    service = _service(tmp_path)
    out = tmp_path / "out"
    lease = service.open_write("episode.fsr")
    (out / "episode.fsr.incomplete").write_bytes(b"someone else's")
    lease.write(b"header")
    with pytest.raises(LeaseError):
        lease.flush()
    assert (out / "episode.fsr.incomplete").read_bytes() == b"someone else's"
    service.abort(lease)
