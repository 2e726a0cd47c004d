"""The per-episode cost of the output service: no revocation thread when nothing is left to revoke."""

from __future__ import annotations

import threading
import time
import types
from pathlib import Path

import pytest

from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_embedded.output import transaction
from fastsim_embedded.output.transaction import FileOutputService

CID = "run-completion-1"


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads the output service starts."""
    names: list[str] = []

    class Counted(threading.Thread):
        def start(self) -> None:
            names.append(self.name)
            super().start()

    monkeypatch.setattr(transaction, "threading", types.SimpleNamespace(Thread=Counted))
    return names


def _committed(service: FileOutputService, name: str, owner: str = "record") -> None:
    lease = service.open_write(name, owner=owner)
    lease.write(b"abc")
    service.seal(lease)
    readback = service.open_readback(lease)
    size = len(readback.read())
    receipt = {"validator": "t", "validated_bytes": size, "integrity": "structural", "completion_id": CID}
    service.confirm_validation(readback, receipt)
    service.commit(lease)


def test_cleanup_after_every_commit_starts_no_thread(tmp_path: Path, started: list[str]) -> None:
    """An episode's Run that committed its file revokes nothing: no helper thread, in time."""
    service = FileOutputService(tmp_path, RunOutputPolicy(), CID)
    _committed(service, "episode.fsr")
    assert service.revoke_open(time.monotonic() + 5, "record") is True
    assert service.revoke_open(0.0) is True  # nothing to do is always in time
    assert started == []
    assert (tmp_path / "episode.fsr").read_bytes() == b"abc"
    assert service.transactions()[0].state == "committed"


def test_an_open_lease_or_a_reservation_is_still_revoked_on_the_helper(tmp_path: Path, started: list[str]) -> None:
    """Unfinished work of the owner, or a reservation at the final cleanup, still goes to the helper thread."""
    service = FileOutputService(tmp_path, RunOutputPolicy(preserve_incomplete=False), CID)
    _committed(service, "done.fsr")
    open_lease = service.open_write("open.fsr", owner="record")
    open_lease.write(b"x")
    assert service.revoke_open(time.monotonic() + 5, "other") is True  # another owner's: none of its own
    assert started == []
    assert service.revoke_open(time.monotonic() + 5, "record") is True
    assert started == ["fastsim-output-revoke"]
    assert [tx.state for tx in service.transactions()] == ["committed", "revoked"]
    service.reserve("later.fsr")
    assert (tmp_path / ".later.fsr.lock").exists()
    assert service.revoke_open(time.monotonic() + 5) is True
    assert started == ["fastsim-output-revoke"] * 2
    assert not (tmp_path / ".later.fsr.lock").exists()  # the reservation was released
