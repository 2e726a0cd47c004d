"""The output service never overwrites, deletes or collides: real files, real flock, inode checks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fastsim_contract.errors import LeaseError
from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_embedded.output.names import check_output_name
from fastsim_embedded.output.transaction import FileOutputService, FileWriteLease, OutputRefused

CID = "run-completion-1"


def _service(out: Path, cid: str = CID, **policy: bool) -> FileOutputService:
    return FileOutputService(out, RunOutputPolicy(**policy), cid)  # type: ignore[arg-type]


def _receipt(size: int, cid: str = CID) -> dict[str, object]:
    return {"validator": "t", "validated_bytes": size, "integrity": "structural", "completion_id": cid}


def _commit(service: FileOutputService, lease: FileWriteLease, size: int) -> str:
    service.seal(lease)
    readback = service.open_readback(lease)
    readback.close()
    service.confirm_validation(readback, _receipt(size, service.completion_id))
    return service.commit(lease)


def test_an_existing_final_file_is_refused_and_kept(tmp_path: Path) -> None:
    """A second Run into the same name is refused before writing, naming the file; the first file is intact."""
    (tmp_path / "episode.fsr").write_bytes(b"first run")
    with pytest.raises(OutputRefused, match=r"episode\.fsr: already exists; refusing to overwrite it") as caught:
        _service(tmp_path).reserve("episode.fsr")
    assert "--overwrite" in str(caught.value)
    assert (tmp_path / "episode.fsr").read_bytes() == b"first run"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episode.fsr"]


def test_overwrite_is_the_explicit_opt_in(tmp_path: Path) -> None:
    """With overwrite the committed file replaces the old one."""
    (tmp_path / "episode.fsr").write_bytes(b"first run")
    service = _service(tmp_path)
    service.overwrite = True
    lease = service.open_write("episode.fsr")
    lease.write(b"second")
    _commit(service, lease, 6)
    assert (tmp_path / "episode.fsr").read_bytes() == b"second"


def test_a_crashed_runs_incomplete_file_is_never_deleted_or_reused(tmp_path: Path) -> None:
    """An existing <name>.incomplete refuses the name and points to fsr recover; its bytes are untouched."""
    (tmp_path / "episode.fsr.incomplete").write_bytes(b"crashed data")
    with pytest.raises(OutputRefused, match="fsr recover") as caught:
        _service(tmp_path).open_write("episode.fsr")
    assert str(caught.value).startswith(f"{tmp_path / 'episode.fsr.incomplete'}: ")
    assert (tmp_path / "episode.fsr.incomplete").read_bytes() == b"crashed data"


def test_a_planted_symlink_at_the_staging_name_is_not_followed(tmp_path: Path) -> None:
    """A symlink planted at <name>.incomplete is refused; its target is never written."""
    target = tmp_path / "victim"
    target.write_bytes(b"precious")
    (tmp_path / "out").mkdir()
    os.symlink(target, tmp_path / "out" / "episode.fsr.incomplete")
    with pytest.raises(OutputRefused):
        _service(tmp_path / "out").open_write("episode.fsr")
    assert target.read_bytes() == b"precious"


def test_a_planted_symlink_at_the_lock_name_is_not_followed(tmp_path: Path) -> None:
    """A symlink planted at .<name>.lock is refused rather than followed."""
    target = tmp_path / "victim"
    target.write_bytes(b"precious")
    (tmp_path / "out").mkdir()
    os.symlink(target, tmp_path / "out" / ".episode.fsr.lock")
    with pytest.raises(OutputRefused, match="symbolic link"):
        _service(tmp_path / "out").reserve("episode.fsr")
    assert target.read_bytes() == b"precious"


def test_a_symlinked_quarantine_is_refused(tmp_path: Path) -> None:
    """Under the default policy a symlinked .quarantine refuses the Run before it writes."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "out").mkdir()
    os.symlink(elsewhere, tmp_path / "out" / ".quarantine")
    with pytest.raises(OutputRefused, match=r"\.quarantine: is a symbolic link"):
        _service(tmp_path / "out").reserve("episode.fsr")


def test_a_second_recorder_of_the_same_name_is_refused_at_once(tmp_path: Path) -> None:
    """While one service holds the name, another (its own flock) is refused; after commit the name is free of locks."""
    first, second = _service(tmp_path, "c1"), _service(tmp_path, "c2")
    lease = first.open_write("episode.fsr")
    with pytest.raises(OutputRefused, match="another recorder is writing this output"):
        second.open_write("episode.fsr")
    lease.write(b"abc")
    _commit(first, lease, 3)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["episode.fsr"]  # lock file gone
    with pytest.raises(OutputRefused, match="already exists"):
        second.open_write("episode.fsr")


def test_abort_leaves_alone_a_staging_path_that_is_no_longer_ours(tmp_path: Path) -> None:
    """If someone replaced the staging path, abort neither moves nor deletes it (inode check)."""
    service = _service(tmp_path)
    lease = service.open_write("episode.fsr")
    lease.write(b"mine")
    lease.flush()  # the staging file now holds the name episode.fsr.incomplete
    impostor = tmp_path / "impostor"
    impostor.write_bytes(b"not yours")
    os.replace(impostor, tmp_path / "episode.fsr.incomplete")
    service.abort(lease)
    assert (tmp_path / "episode.fsr.incomplete").read_bytes() == b"not yours"
    assert not (tmp_path / ".quarantine").exists()
    tx = service.transactions()[0]
    assert tx.note is not None
    assert "no longer the file this Run wrote" in tx.note


def test_commit_never_replaces_a_final_file_that_appeared_during_the_run(tmp_path: Path) -> None:
    """A final file created by someone else mid-Run is kept; commit fails and the recording stays staged."""
    service = _service(tmp_path)
    lease = service.open_write("episode.fsr")
    lease.write(b"mine")
    (tmp_path / "episode.fsr").write_bytes(b"theirs")
    with pytest.raises(LeaseError, match="refusing to overwrite"):
        _commit(service, lease, 4)
    assert (tmp_path / "episode.fsr").read_bytes() == b"theirs"
    assert (tmp_path / "episode.fsr.incomplete").read_bytes() == b"mine"


def test_commit_refuses_when_the_staging_inode_changed(tmp_path: Path) -> None:
    """A staging file swapped after the seal is never published."""
    service = _service(tmp_path)
    lease = service.open_write("episode.fsr")
    lease.write(b"mine")
    service.seal(lease)
    readback = service.open_readback(lease)
    readback.close()
    service.confirm_validation(readback, _receipt(4))
    (tmp_path / "swap").write_bytes(b"evil")
    os.replace(tmp_path / "swap", tmp_path / "episode.fsr.incomplete")
    with pytest.raises(LeaseError, match="no longer the file this Run wrote"):
        service.commit(lease)
    assert not (tmp_path / "episode.fsr").exists()


@pytest.mark.parametrize("name", ["a\nb.fsr", "a\rb.fsr", "a\tb.fsr", "a\x1bb.fsr", "a\x7fb.fsr"])
def test_control_characters_in_names_are_refused(tmp_path: Path, name: str) -> None:
    """Newline, CR, tab and other control characters never reach the file system."""
    assert check_output_name(name) is not None
    with pytest.raises(OutputRefused, match="control character"):
        _service(tmp_path).reserve(name)


def test_a_name_too_long_for_its_staging_file_is_refused(tmp_path: Path) -> None:
    """A name whose hidden staging name would exceed NAME_MAX is refused with the sizes."""
    name = "x" * 250 + ".fsr"
    why = check_output_name(name, tmp_path)
    assert why is not None
    assert "254 bytes, over 230" in why


def test_the_longest_name_fsr_check_accepts_is_one_the_host_can_stage(tmp_path: Path) -> None:
    """One limit in one place: the longest name the contract allows stages at exactly NAME_MAX; one byte more is refused."""
    from fastsim_contract.output_names import NAME_MAX, STAGING_OVERHEAD

    longest = "x" * (NAME_MAX - STAGING_OVERHEAD - 4) + ".fsr"
    assert check_output_name(longest, tmp_path) is None
    service = _service(tmp_path)
    lease = service.open_write(longest)
    staged = [p.name for p in tmp_path.iterdir() if ".incomplete-" in p.name]
    assert len(staged) == 1
    assert len(staged[0].encode()) == NAME_MAX  # exactly what the contract budgets
    service.abort(lease)
    assert check_output_name("y" + longest, tmp_path) is not None


def test_a_config_error_at_prepare_releases_the_output_name(tmp_path: Path) -> None:
    """A plugin factory's config error during prepare leaves no lock behind: the same name records at once afterwards."""
    import yaml

    from fastsim_contract.run_errors import RunConfigError, RunIssue
    from fastsim_embedded.session.compile import prepare_run
    from fastsim_embedded.session.session import run_session

    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "n", "backend": "synthetic",
        "plugins": {"record": {"use": "plugin://fastsim/record"}},
    }))

    def refusing(context: object) -> object:
        raise RunConfigError([RunIssue("plugins.record", "refused by the test")])

    out = tmp_path / "out"
    with pytest.raises(RunConfigError):
        run_session(prepare_run(path, duration_s=0.1), out, factories={"plugin://fastsim/record": refusing})  # type: ignore[dict-item]
    assert not (out / ".episode.fsr.lock").exists()
    result = run_session(prepare_run(path, duration_s=0.1), out)
    assert result.outcome.ok, result.outcome.reason


def test_readback_refuses_a_staging_path_swapped_after_the_seal(tmp_path: Path) -> None:
    """A file (or symlink) swapped in after the seal is never read back as this Run's recording."""
    service = _service(tmp_path)
    lease = service.open_write("episode.fsr")
    lease.write(b"mine")
    service.seal(lease)
    (tmp_path / "swap").write_bytes(b"evil")
    os.replace(tmp_path / "swap", tmp_path / "episode.fsr.incomplete")
    with pytest.raises(LeaseError, match="no longer the file this Run wrote"):
        service.open_readback(lease)
    os.unlink(tmp_path / "episode.fsr.incomplete")
    os.symlink(tmp_path / "elsewhere", tmp_path / "episode.fsr.incomplete")
    with pytest.raises(LeaseError, match=r"episode\.fsr\.incomplete"):  # O_NOFOLLOW: ELOOP
        service.open_readback(lease)
