"""The output transaction over the filesystem lease adapter."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fastsim_recording_format import (
    FilesystemLeases,
    FormatError,
    FsrWriter,
    LeaseError,
    OutputLeases,
    ReadbackLease,
    RecordIn,
    ValidationReceipt,
    WriteLease,
    finish_output,
    validate,
)
from fastsim_recording_format import transaction as transaction_module

from .helpers import RUN, STREAMS, small_batches


def _written(leases: FilesystemLeases, name: str = "episode.fsr") -> tuple[WriteLease, FsrWriter]:
    lease = leases.open_write(name)
    writer = FsrWriter(lease.file, RUN, STREAMS)
    for batch in small_batches():
        writer.write_batch(batch)
    return lease, writer


def _sealed(leases: FilesystemLeases) -> WriteLease:
    lease, writer = _written(leases)
    writer.seal()
    leases.seal(lease)
    return lease


def _validated(leases: FilesystemLeases, lease: WriteLease) -> None:
    readback = leases.open_readback(lease)
    receipt = validate(readback.file)
    leases.close_readback(readback)
    leases.confirm_validation(readback, receipt)


def test_the_happy_path_publishes_atomically(tmp_path: Path) -> None:
    """seal -> readback -> validate -> confirm -> commit publishes the final name only."""
    leases = FilesystemLeases(tmp_path / "out")
    _: OutputLeases = leases
    lease, writer = _written(leases)
    assert (tmp_path / "out" / "episode.fsr.incomplete").exists()
    receipt, published = finish_output(leases, lease, writer, terminal_fence={"cut": 10})
    assert published == str(tmp_path / "out" / "episode.fsr")
    assert sorted(os.listdir(tmp_path / "out")) == ["episode.fsr"]
    assert validate(published) == receipt


def test_a_crash_between_seal_and_commit_publishes_nothing(tmp_path: Path) -> None:
    """Whatever state the transaction dies in before commit, the final name does not exist."""
    leases = FilesystemLeases(tmp_path)
    lease = _sealed(leases)
    assert not (tmp_path / "episode.fsr").exists()
    _validated(leases, lease)
    del leases, lease  # the process "dies" here
    assert not (tmp_path / "episode.fsr").exists()
    assert (tmp_path / "episode.fsr.incomplete").exists()


def test_a_stale_readback_lease_is_refused(tmp_path: Path) -> None:
    """Only the readback lease currently bound to the sealed write may confirm it."""
    leases = FilesystemLeases(tmp_path)
    lease = _sealed(leases)
    stale = leases.open_readback(lease)
    current = leases.open_readback(lease)
    receipt = validate(current.file)
    with pytest.raises(LeaseError, match="not the one bound"):
        leases.confirm_validation(stale, receipt)
    with pytest.raises(LeaseError, match="is sealed"):
        leases.commit(lease)
    leases.confirm_validation(current, receipt)
    assert leases.commit(lease).endswith("episode.fsr")


def test_a_foreign_readback_lease_is_refused(tmp_path: Path) -> None:
    """A readback lease from another output, or any other object, cannot confirm."""
    mine, other = FilesystemLeases(tmp_path / "a"), FilesystemLeases(tmp_path / "b")
    lease, foreign_write = _sealed(mine), _sealed(other)
    foreign = other.open_readback(foreign_write)
    receipt = validate(foreign.file)
    with pytest.raises(LeaseError, match="not issued by this output"):
        mine.confirm_validation(foreign, receipt)
    with pytest.raises(LeaseError, match="not issued by this output"):
        mine.confirm_validation(lease, receipt)
    with pytest.raises(LeaseError, match="not a write lease of this output"):
        mine.commit(foreign_write)


def test_commit_is_refused_after_failed_validation(tmp_path: Path) -> None:
    """A rejected validation latches: a later confirm and commit are refused."""
    leases = FilesystemLeases(tmp_path)
    lease = _sealed(leases)
    readback = leases.open_readback(lease)
    receipt = validate(readback.file)
    leases.reject_validation(readback, "corrupt")
    with pytest.raises(LeaseError):
        leases.confirm_validation(readback, receipt)
    with pytest.raises(LeaseError, match="is failed"):
        leases.commit(lease)
    assert not (tmp_path / "episode.fsr").exists()


def _refused_receipt(leases: FilesystemLeases) -> tuple[WriteLease, ReadbackLease, ValidationReceipt]:
    """A sealed write whose readback was offered a receipt one byte too long (refused)."""
    lease = _sealed(leases)
    readback = leases.open_readback(lease)
    receipt = validate(readback.file)
    wrong = ValidationReceipt("structural", receipt.validated_bytes + 1, "none", None, "x", "y")
    with pytest.raises(LeaseError, match="does not cover"):
        leases.confirm_validation(readback, wrong)
    return lease, readback, receipt


def test_commit_needs_a_receipt_for_the_exact_bytes(tmp_path: Path) -> None:
    """A receipt whose byte count is not the sealed file's size is refused."""
    leases = FilesystemLeases(tmp_path)
    lease, _, _ = _refused_receipt(leases)
    with pytest.raises(LeaseError):
        leases.commit(lease)


def test_a_staged_file_changed_after_seal_is_not_published(tmp_path: Path) -> None:
    """Bytes appended to the staged file after sealing make commit refuse."""
    leases = FilesystemLeases(tmp_path)
    lease = _sealed(leases)
    _validated(leases, lease)
    with open(tmp_path / "episode.fsr.incomplete", "ab") as f:
        f.write(b"tamper")
    with pytest.raises(LeaseError, match="changed after it was sealed"):
        leases.commit(lease)
    assert not (tmp_path / "episode.fsr").exists()


def test_a_staged_file_replaced_before_readback_is_not_read_back(tmp_path: Path) -> None:
    """A readback lease only opens the exact file that was sealed; a replaced one fails the lease."""
    leases = FilesystemLeases(tmp_path)
    lease = _sealed(leases)
    staged = tmp_path / "episode.fsr.incomplete"
    data = staged.read_bytes()
    staged.rename(tmp_path / "kept-aside")  # keeps the inode in use
    staged.write_bytes(data)  # same bytes, another file
    with pytest.raises(LeaseError, match="changed after it was sealed"):
        leases.open_readback(lease)
    with pytest.raises(LeaseError, match="is failed"):
        leases.commit(lease)
    assert not (tmp_path / "episode.fsr").exists()


def test_commit_is_idempotent(tmp_path: Path) -> None:
    """A second commit returns the same path and changes nothing; abort afterwards is refused."""
    leases = FilesystemLeases(tmp_path)
    lease = _sealed(leases)
    _validated(leases, lease)
    first = leases.commit(lease)
    before = Path(first).read_bytes()
    assert leases.commit(lease) == first
    with pytest.raises(LeaseError, match="is committed"):
        leases.abort(lease)
    assert Path(first).read_bytes() == before


@pytest.mark.parametrize("preserve", [True, False])
def test_abort_never_publishes_and_follows_the_preserve_policy(tmp_path: Path, preserve: bool) -> None:
    """abort leaves no final file; the .incomplete is kept only when preservation is on."""
    leases = FilesystemLeases(tmp_path, preserve_incomplete=preserve)
    lease = _sealed(leases)
    _validated(leases, lease)
    leases.abort(lease)
    leases.abort(lease)
    assert not (tmp_path / "episode.fsr").exists()
    assert (tmp_path / "episode.fsr.incomplete").exists() is preserve
    with pytest.raises(LeaseError, match="aborted"):
        leases.commit(lease)


def test_abort_while_writing(tmp_path: Path) -> None:
    """Aborting an unsealed write closes it and publishes nothing."""
    leases = FilesystemLeases(tmp_path, preserve_incomplete=False)
    lease, _writer = _written(leases)
    leases.abort(lease)
    assert os.listdir(tmp_path) == []
    with pytest.raises(LeaseError):
        leases.open_readback(lease)


def test_out_of_order_operations_are_refused(tmp_path: Path) -> None:
    """Readback before seal, commit before confirmation and double seal are refused."""
    leases = FilesystemLeases(tmp_path)
    lease, writer = _written(leases)
    with pytest.raises(LeaseError, match="is open"):
        leases.open_readback(lease)
    with pytest.raises(LeaseError, match="is open"):
        leases.commit(lease)
    writer.seal()
    leases.seal(lease)
    with pytest.raises(LeaseError, match="is sealed"):
        leases.seal(lease)
    with pytest.raises(LeaseError, match="already open"):
        leases.open_write("episode.fsr")


@pytest.mark.parametrize("name", ["../x.fsr", "/abs.fsr", "a/b.fsr", "..", ".", "", "a\\b.fsr", "x..fsr"])
def test_output_name_must_be_a_bare_file_name(tmp_path: Path, name: str) -> None:
    """Separators, '..' and absolute paths are rejected before any file is created."""
    with pytest.raises(LeaseError):
        FilesystemLeases(tmp_path).open_write(name)
    assert os.listdir(tmp_path) == []


def test_finish_output_aborts_when_validation_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A readback that fails validation aborts: nothing is published, the error propagates."""
    def corrupt(*args: object) -> ValidationReceipt:
        raise FormatError(42, "record table CRC mismatch")

    monkeypatch.setattr(transaction_module, "validate", corrupt)
    leases = FilesystemLeases(tmp_path, preserve_incomplete=True)
    lease, writer = _written(leases)
    with pytest.raises(FormatError, match="at offset 42"):
        finish_output(leases, lease, writer)
    assert os.listdir(tmp_path) == ["episode.fsr.incomplete"]


def test_finish_output_with_strong_integrity(tmp_path: Path) -> None:
    """A strong file committed under a sha256 policy carries the content digest."""
    leases = FilesystemLeases(tmp_path)
    lease = leases.open_write("s.fsr")
    writer = FsrWriter(lease.file, RUN, STREAMS, "strong")
    writer.write_batch([RecordIn.data(1, 1, 1, 0, 0, b"abc")])
    receipt, published = finish_output(leases, lease, writer, integrity="strong", policy_integrity="sha256")
    assert receipt.content_sha256 is not None
    assert validate(published, "strong", "sha256") == receipt


# -- the one lease state table (fastsim_recording_format.lease) ---------------------------


def test_the_lease_table_covers_every_state_and_event_once() -> None:
    """Every (state, event) pair is a transition, an accepted repeat, or refused; never two of these."""
    from fastsim_recording_format.lease import IGNORED, TRANSITIONS, LeaseEvent, LeaseState

    assert not set(TRANSITIONS) & IGNORED
    for state in LeaseState:
        for event in LeaseEvent:
            if (state, event) in TRANSITIONS:
                assert TRANSITIONS[(state, event)] in LeaseState
    ended = (LeaseState.COMMITTED, LeaseState.ABORTED, LeaseState.REVOKED)
    assert not [key for key in TRANSITIONS if key[0] in ended]


@pytest.mark.parametrize(
    ("state", "event", "outcome"),
    [
        ("open", "write", "open"), ("open", "seal", "sealed"), ("open", "open_readback", "refused"),
        ("sealed", "write", "refused"), ("sealed", "open_readback", "sealed"), ("sealed", "commit", "refused"),
        ("sealed", "confirm_validation", "confirmed"), ("confirmed", "commit", "committed"),
        ("confirmed", "open_readback", "refused"), ("failed", "commit", "refused"),
        ("committed", "commit", "ignored"), ("committed", "abort", "refused"),
        ("aborted", "abort", "ignored"), ("aborted", "commit", "refused"),
        ("revoked", "write", "refused"), ("revoked", "abort", "ignored"), ("open", "revoke", "revoked"),
    ],
)
def test_the_lease_machine_follows_the_table(state: str, event: str, outcome: str) -> None:
    """accept/advance move along the table; refused pairs raise LeaseError naming the state."""
    from fastsim_recording_format.lease import LeaseEvent, LeaseMachine, LeaseState

    machine = LeaseMachine("a.fsr", LeaseState(state))
    if outcome == "refused":
        with pytest.raises(LeaseError, match=f"'a.fsr' is {state}"):
            machine.fire(LeaseEvent(event))
        assert machine.state is LeaseState(state)
    elif outcome == "ignored":
        assert machine.fire(LeaseEvent(event)) is False
        assert machine.state is LeaseState(state)
    else:
        assert machine.fire(LeaseEvent(event)) is True
        assert machine.state is LeaseState(outcome)


def test_a_refused_receipt_keeps_the_write_sealed(tmp_path: Path) -> None:
    """A receipt for the wrong byte count is refused, and a matching one may still confirm."""
    leases = FilesystemLeases(tmp_path)
    lease, readback, receipt = _refused_receipt(leases)
    leases.confirm_validation(readback, receipt)
    assert leases.commit(lease).endswith("episode.fsr")
