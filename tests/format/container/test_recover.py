"""Recovery of unsealed files, including a real writer process killed with SIGKILL."""

from __future__ import annotations

import io
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fastsim_record.cli import main
from fastsim_recording_format import FormatError, FsrReader, recover, validate
from fastsim_recording_format.synth import write_synthetic

from . import killed_writer
from .helpers import STREAMS, small_batches, write_bytes


def _unsealed(records: int = 300) -> tuple[bytes, list[int]]:
    buf = io.BytesIO()
    write_synthetic(buf, records, 100, metadata=True, batch_items=40, integrity="strong", seal=False)
    data = buf.getvalue()
    sealed = io.BytesIO()
    write_synthetic(sealed, records, 100, metadata=True, batch_items=40, integrity="strong")
    with FsrReader(io.BytesIO(sealed.getvalue())) as reader:
        ends = [int(e["offset"] + e["length"]) for e in reader.batch_index]
    return data, ends


def test_every_complete_batch_prefix_recovers_losslessly(tmp_path: Path) -> None:
    """An unsealed file ending on a batch boundary recovers every batch, nothing dropped."""
    data, ends = _unsealed()
    src, out = tmp_path / "a.fsr.incomplete", tmp_path / "a.fsr"
    for k, end in enumerate(ends):
        src.write_bytes(data[:end])
        report = recover(src, out, overwrite=True)
        assert report.lossless
        assert report.batches_kept == k + 1
        validate(out, "strong", "sha256")
        with FsrReader(out) as reader:
            assert reader.recovered
            assert reader.degraded
            assert reader.footer["terminal_fence"] is None
            assert reader.footer["records"] == report.records_kept


def test_a_torn_tail_is_dropped_and_counted(tmp_path: Path) -> None:
    """Cutting inside a batch keeps the batches before it and counts what was dropped."""
    data, ends = _unsealed()
    src, out = tmp_path / "a.fsr.incomplete", tmp_path / "a.fsr"
    rng = random.Random(3)
    for _ in range(40):
        k = rng.randrange(1, len(ends))
        cut = rng.randrange(ends[k - 1] + 1, ends[k])
        src.write_bytes(data[:cut])
        report = recover(src, out, overwrite=True)
        assert not report.lossless
        assert (report.batches_kept, report.bytes_dropped) == (k, cut - ends[k - 1])
        assert report.records_dropped in (0, 40, 20)
        validate(out)


def test_a_sealed_file_recovers_losslessly(tmp_path: Path) -> None:
    """Recovering a file that was in fact sealed drops nothing."""
    src, out = tmp_path / "a.fsr.incomplete", tmp_path / "a.fsr"
    src.write_bytes(write_bytes(STREAMS, small_batches()))
    report = recover(src, out)
    assert report.lossless
    assert report.records_kept == 9
    validate(out)


def test_a_broken_header_is_not_recoverable(tmp_path: Path) -> None:
    """Without an intact header and run metadata recovery raises FormatError."""
    src = tmp_path / "a.fsr.incomplete"
    src.write_bytes(write_bytes(STREAMS, small_batches(), seal=False)[:40])
    with pytest.raises(FormatError):
        recover(src, tmp_path / "a.fsr")
    assert not (tmp_path / "a.fsr").exists()


def test_recovery_refuses_to_overwrite_its_input(tmp_path: Path) -> None:
    """The output path must differ from the input path."""
    src = tmp_path / "a.fsr.incomplete"
    src.write_bytes(write_bytes(STREAMS, small_batches(), seal=False))
    with pytest.raises(ValueError, match="must differ"):
        recover(src, src)


def _verify_recovered(path: Path, flushed_batches: int) -> None:
    with FsrReader(path) as reader:
        batches = reader.footer["batches"]
        assert batches >= flushed_batches
        count = 0
        for g, rec in enumerate(reader.records(), start=1):
            assert (rec.global_sequence, rec.stream_id, rec.metadata) == (g, g % 3, {"g": g})
            assert rec.payload == killed_writer.payload(g)
            count += 1
    assert count == sum(killed_writer.batch_size(k) for k in range(batches))


@pytest.mark.slow
def test_sigkilled_writer_always_leaves_a_recoverable_incomplete_file(tmp_path: Path) -> None:
    """A real writer process killed with SIGKILL at random points leaves only a recoverable .incomplete."""
    rng = random.Random(20261202)
    script = Path(killed_writer.__file__)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    for trial in range(6):
        out_dir = tmp_path / f"trial{trial}"
        proc = subprocess.Popen(
            [sys.executable, str(script), str(out_dir)], stdout=subprocess.PIPE, text=True, env=env
        )
        assert proc.stdout is not None
        flushed = 0
        try:
            wanted = rng.randrange(0, 25)
            for line in proc.stdout:
                flushed = int(line.split()[1])
                if flushed >= wanted:
                    break
            time.sleep(rng.random() * 0.01)
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        assert proc.returncode == -signal.SIGKILL
        assert not (out_dir / "episode.fsr").exists()
        incomplete = out_dir / "episode.fsr.incomplete"
        assert incomplete.exists()
        recovered = tmp_path / f"recovered{trial}.fsr"
        assert main(["recover", str(incomplete), "-o", str(recovered)]) in (0, 3)
        assert main(["validate", str(recovered)]) == 0
        _verify_recovered(recovered, flushed)


def test_a_header_only_file_recovers_to_a_valid_empty_file_with_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An .incomplete holding only its header and run metadata recovers to a valid empty file, exit 3."""
    src = tmp_path / "h.fsr.incomplete"
    src.write_bytes(write_bytes(STREAMS, [], seal=False))
    out = tmp_path / "h.fsr"
    assert main(["recover", str(src), "-o", str(out)]) == 3
    assert "no batch was written" in capsys.readouterr().out
    validate(out)
    with FsrReader(out) as reader:
        assert (reader.footer["records"], reader.recovered) == (0, True)


def test_recover_refuses_an_existing_output_unless_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An existing OUT is refused with exit 2 and one line naming it; --overwrite replaces it."""
    src = tmp_path / "a.fsr.incomplete"
    src.write_bytes(write_bytes(STREAMS, small_batches(), seal=False))
    out = tmp_path / "a.fsr"
    out.write_bytes(b"precious")
    assert main(["recover", str(src), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert str(out) in err
    assert "--overwrite" in err
    assert out.read_bytes() == b"precious"
    assert main(["recover", str(src), "-o", str(out), "--overwrite"]) == 0
    validate(out)


def test_recover_never_follows_or_deletes_a_planted_temporary_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A symlink or file planted at OUT.recovering is refused (exit 2), left in place, its target untouched."""
    src = tmp_path / "a.fsr.incomplete"
    src.write_bytes(write_bytes(STREAMS, small_batches(), seal=False))
    out = tmp_path / "a.fsr"
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"do not touch")
    planted = tmp_path / "a.fsr.recovering"
    planted.symlink_to(victim)
    assert main(["recover", str(src), "-o", str(out)]) == 2
    assert str(planted) in capsys.readouterr().err
    assert planted.is_symlink()
    assert victim.read_bytes() == b"do not touch"
    assert not out.exists()
    planted.unlink()
    planted.write_bytes(b"someone else's")
    assert main(["recover", str(src), "-o", str(out), "--overwrite"]) == 2
    assert planted.read_bytes() == b"someone else's"


def test_overwrite_replaces_a_symlinked_output_not_its_target(tmp_path: Path) -> None:
    """With --overwrite, an OUT that is a symlink is itself replaced; the file it named is untouched."""
    src = tmp_path / "a.fsr.incomplete"
    src.write_bytes(write_bytes(STREAMS, small_batches(), seal=False))
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"do not touch")
    out = tmp_path / "a.fsr"
    out.symlink_to(victim)
    with pytest.raises(FileExistsError):
        recover(src, out)
    recover(src, out, overwrite=True)
    assert not out.is_symlink()
    assert victim.read_bytes() == b"do not touch"
    assert not (tmp_path / "a.fsr.recovering").exists()
