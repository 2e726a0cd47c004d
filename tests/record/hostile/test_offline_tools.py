"""The offline tools under attack, as real processes with real signals: every source stays
byte-identical, and no process, staging file or lock is left behind.

Attacks: OUT equal to a source, its folder or a parent (with --overwrite); concurrent
writers; SIGINT/SIGTERM at three moments; kill -9 of the parent; a malformed OUT; a
full disk (a 3 MiB tmpfs when this process may mount one, else skipped with the reason);
flipped payload bytes; a stop signal in the first second of `fsr record`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fastsim_recording_format import (
    FormatError,
    FsrReader,
    FsrWriter,
    RecordIn,
    RunMetadata,
    StreamSpec,
)
from fastsim_recording_format.codecs.numeric import channel_entries, codec_description
from fastsim_recording_format.reading import open as open_recording

FSR = [sys.executable, "-m", "fastsim_record.cli"]
ENV = {**os.environ, "PYTHONWARNINGS": "ignore", "MUJOCO_GL": "egl"}
RUN = Path(__file__).resolve().parents[3] / "examples" / "minimal" / "run.yaml"
STAGING_MARKS = (".exporting-", ".indexing-", ".synth-", ".recovering", ".uploading-", ".replaced-", ".lock")


def fsr(*argv: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run `fsr ARGV` as the console script does (it owns its process: signals installed)."""
    return subprocess.run([*FSR, *argv], capture_output=True, text=True, timeout=timeout, env=ENV)


def start(*argv: str) -> subprocess.Popen[str]:
    """Start `fsr ARGV` in the background."""
    return subprocess.Popen([*FSR, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)


def digests(folder: Path) -> dict[str, str]:
    """SHA-256 of every file below ``folder``."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def leftovers(folder: Path) -> list[str]:
    """Staging files and locks below ``folder``."""
    return [str(p) for p in folder.rglob("*") if any(m in p.name for m in STAGING_MARKS)]


def descendants(pid: int) -> set[int]:
    """Every process below ``pid`` now (from /proc)."""
    found: set[int] = set()
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            tasks = list(Path(f"/proc/{p}/task").glob("*"))
        except OSError:  # the process ended while it was listed: it has no children left
            continue
        for task in tasks:
            with contextlib.suppress(OSError):
                for child in (task / "children").read_text().split():
                    if int(child) not in found:
                        found.add(int(child))
                        todo.append(int(child))
    return found


def alive(pids: set[int], within: float = 15.0) -> set[int]:
    """The ones of ``pids`` still running (not zombies) after ``within`` seconds."""
    deadline = time.monotonic() + within
    while True:
        left = set()
        for pid in pids:
            with contextlib.suppress(OSError):
                if Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z":
                    left.add(pid)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.2)


def write_numeric(path: Path, ticks: int, *, payload_crc: bool = True, frame: int = 0) -> None:
    """A file with a numeric-tick stream of 4 float64 channels (and raw frames of ``frame`` bytes)."""
    record_bytes, layout = channel_entries([(f"robot.ch{k}", "<f8", [1], ["rad"], None) for k in range(4)])
    streams = [StreamSpec(1, "observations", "observations", codec_description(record_bytes), {"channels": layout})]
    if frame:
        streams.append(StreamSpec(2, "cameras.top.rgb", "camera.rgb",
                                  {"payload_codec": "raw_rgb", "width": frame // 3, "height": 1},
                                  {"camera": "top", "role": "rgb"}))
    with FsrWriter(path, RunMetadata("hostile", "hostile-1"), streams, payload_crc=payload_crc) as writer:
        g, batch = 0, []
        for t in range(ticks):
            g += 1
            batch.append(RecordIn.data(1, g, t + 1, 0, t * 1000, struct.pack("<4d", t, t + 0.5, -t, t * 2.0)))
            if frame:
                g += 1
                batch.append(RecordIn.data(2, g, t + 1, 0, t * 1000, bytes([t % 251]) * frame))
            if len(batch) >= 64 or t == ticks - 1:
                writer.write_batch(batch)
                batch = []
        writer.seal({"last_global_sequence": g})


@pytest.fixture(scope="module")
def sources(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A read-only folder: two synthetic files and one real recording of the minimal Run."""
    root = tmp_path_factory.mktemp("sources")
    data = root / "data"
    data.mkdir()
    assert fsr("synth", str(data / "a.fsr"), "--records", "400").returncode == 0
    assert fsr("synth", str(data / "b.fsr"), "--records", "600", "--camera-every", "4",
               "--camera-bytes", str(640 * 480 * 3)).returncode == 0
    rec = fsr("record", str(RUN), "--output-dir", str(data), "--duration", "1")
    assert rec.returncode == 0, rec.stderr
    assert fsr("synth", str(root / "crashed.incomplete"), "--records", "100", "--unsealed").returncode == 0
    return root


@pytest.fixture
def work(sources: Path, tmp_path: Path) -> Iterator[Path]:
    """A fresh copy of the sources; after the test, every source is byte-identical and nothing is left over."""
    shutil.copytree(sources, tmp_path / "w")
    before = digests(tmp_path / "w")
    yield tmp_path / "w"
    after = digests(tmp_path / "w")
    assert {k: v for k, v in after.items() if k in before} == before, "a source changed"
    assert leftovers(tmp_path) == []


# -- OUT is a source, its folder, or a parent of it ----------------------------------------------
def _commands(w: Path, out: Path) -> dict[str, list[str]]:
    return {
        "export mcap": ["export", str(w / "data"), "--to", "mcap", "-o", str(out), "--overwrite"],
        "export rerun": ["export", str(w / "data" / "a.fsr"), "--to", "rerun", "-o", str(out), "--overwrite"],
        "export lerobot": ["export", str(w / "data" / "episode.fsr"), "--to", "lerobot", "-o", str(out),
                           "--overwrite"],
        "index": ["index", str(w / "data"), "-o", str(out), "--overwrite"],
        "upload": ["upload", str(w / "data"), f"file://{out}", "--jobs", "1"],
    }


@pytest.mark.parametrize("which", ["source", "folder", "parent"])
@pytest.mark.parametrize("command", ["export mcap", "export rerun", "export lerobot", "index", "upload"])
def test_out_overlapping_a_source_is_refused_even_with_overwrite(work: Path, which: str, command: str) -> None:
    """OUT = a source, the source folder or its parent: exit 2, one line, nothing read is touched."""
    target = {"source": work / "data" / ("a.fsr" if command == "export rerun" else "episode.fsr"),
              "folder": work / "data", "parent": work}[which]
    if command == "upload" and which != "folder":
        # upload's URL is a prefix: only the source folder makes objects the sources themselves;
        # a parent gets new copies beside them (the fixture checks the sources are untouched)
        if which == "source":
            pytest.skip("upload's URL is a prefix, not a file: the 'folder' case is the overlapping one")
        assert fsr(*_commands(work, target)[command]).returncode == 0
        return
    done = fsr(*_commands(work, target)[command])
    assert done.returncode == 2, done.stderr
    assert "refusing to replace a file this command reads" in done.stderr
    assert done.stderr.count("\n") == 1


def test_recover_refuses_its_input_a_link_to_it_and_its_folder(work: Path) -> None:
    """recover -o the input, a hard link to it, or its folder: exit 2, the .incomplete untouched."""
    src = work / "crashed.incomplete"
    os.link(src, work / "link.fsr")
    for out in (src, work / "link.fsr", work):
        done = fsr("recover", str(src), "-o", str(out), "--overwrite")
        assert done.returncode == 2, done.stderr
        assert done.stderr.count("\n") == 1
    (work / "link.fsr").unlink()


def test_record_refuses_to_commit_over_its_run_file(work: Path) -> None:
    """A Run whose output name is the Run file itself: exit 2 even with --overwrite."""
    run = work / "run.yaml"
    run.write_text(RUN.read_text().replace("use: plugin://fastsim/record",
                                           "use: plugin://fastsim/record\n    config: {output: {name: run.yaml}}"))
    text = run.read_text()
    done = fsr("record", str(run), "--output-dir", str(work), "--overwrite", "--duration", "0.1")
    assert done.returncode == 2, done.stderr
    assert "refusing to replace a file this command reads" in done.stderr
    assert run.read_text() == text
    run.unlink()


def test_synth_over_a_folder_is_refused_and_overwrite_is_atomic(work: Path) -> None:
    """synth -o a folder is refused; --overwrite replaces a file only with a whole new one."""
    assert fsr("synth", str(work / "data"), "--records", "5", "--overwrite").returncode == 2
    out = work / "s.fsr"
    assert fsr("synth", str(out), "--records", "5").returncode == 0
    assert fsr("synth", str(out), "--records", "50", "--overwrite").returncode == 0
    with FsrReader(out) as reader:
        assert sum(1 for _ in reader.records()) == 50
    out.unlink()


# -- stop signals at three moments, kill -9 of the parent ----------------------------------------
def _wait_for(predicate: object, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)


def _handlers_installed(pid: int) -> bool:
    """Whether fsr's stop handlers are installed: SIGTERM is caught (Python never catches it itself)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = next((int(line.split()[1], 16) for line in status.splitlines() if line.startswith("SigCgt:")), 0)
    return bool(caught >> (signal.SIGTERM - 1) & 1)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
@pytest.mark.parametrize("moment", ["at start", "when staging appears", "while writing"])
@pytest.mark.parametrize("target", ["mcap", "rerun"])
def test_export_stops_on_a_signal_and_removes_its_staging(work: Path, sig: int, moment: str, target: str) -> None:
    """SIGINT/SIGTERM at start, when the staging appears, and while it grows: 128+N, one line, no staging."""
    out = work / f"out.{target}"
    proc = start("export", str(work / "data" / "b.fsr"), "--to", target, "-o", str(out))
    if moment == "at start":  # once fsr's handlers are in: before them it is Python's own start-up (README)
        _wait_for(lambda: _handlers_installed(proc.pid) or proc.poll() is not None)
    else:
        def grown() -> bool:
            found = [p for p in work.iterdir() if ".exporting-" in p.name]
            return bool(found) and (moment == "when staging appears" or found[0].stat().st_size > 1 << 20)
        _wait_for(lambda: grown() or proc.poll() is not None)
    children = descendants(proc.pid)
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:  # the export won the race: it is complete, and that is fine
        assert out.exists()
        out.unlink()
    else:
        assert proc.returncode == 128 + sig, err
        assert f"interrupted by {signal.Signals(sig).name}" in err
        assert err.strip().count("\n") == 0, err
        assert not out.exists()
    assert alive(children) == set()


def test_a_dead_exports_staging_is_removed_by_the_next_run(work: Path) -> None:
    """kill -9 of an export leaves .OUT.exporting-<pid>; the next export removes it and succeeds."""
    out = work / "out.mcap"
    proc = start("export", str(work / "data" / "b.fsr"), "--to", "mcap", "-o", str(out))
    _wait_for(lambda: any(".exporting-" in p.name for p in work.iterdir()) or proc.poll() is not None)
    proc.kill()
    proc.wait()
    done = fsr("export", str(work / "data" / "b.fsr"), "--to", "mcap", "-o", str(out), "--overwrite")
    assert done.returncode == 0, done.stderr
    assert [p.name for p in work.iterdir() if ".exporting-" in p.name] == []
    out.unlink()


@pytest.mark.parametrize("command", ["validate", "info", "index"])
def test_kill_9_of_a_batch_parent_leaves_no_worker(work: Path, command: str) -> None:
    """kill -9 of `fsr validate/info/index --jobs 2`: its forkserver workers end too (PR_SET_PDEATHSIG)."""
    (work / "many").mkdir()
    for k in range(12):
        shutil.copy2(work / "data" / "b.fsr", work / "many" / f"{k}.fsr")
    argv = [command, str(work / "many"), "--jobs", "2"]
    if command == "validate":
        argv += ["--integrity", "crc"]
    if command == "index":
        argv += ["-o", str(work / "index.parquet"), "--integrity", "crc"]
    proc = start(*argv)
    _wait_for(lambda: len(descendants(proc.pid)) >= 3 or proc.poll() is not None, 60)
    children = descendants(proc.pid)
    proc.kill()
    proc.wait()
    assert alive(children) == set()
    shutil.rmtree(work / "many")
    with contextlib.suppress(FileNotFoundError):
        (work / "index.parquet").unlink()


def test_kill_9_of_a_sweep_ends_its_episodes(work: Path) -> None:
    """kill -9 of `fsr record --episodes 2`: each episode gets SIGTERM, commits what it has and ends."""
    run = work / "sweep.yaml"
    run.write_text(RUN.read_text().replace("use: plugin://fastsim/record",
                                           "use: plugin://fastsim/record\n    config: {output: {name: 'ep-{episode}.fsr'}}"))
    out = work / "sweep"
    proc = start("record", str(run), "--episodes", "2", "--jobs", "2", "--output-dir", str(out), "--duration", "60",
                 "--realtime")
    _wait_for(lambda: len(list(out.glob("*.incomplete"))) >= 2 or proc.poll() is not None, 120)
    children = descendants(proc.pid)
    proc.kill()
    proc.wait()
    assert alive(children, within=60) == set()
    for path in out.glob("ep-*.fsr"):
        with FsrReader(path) as reader:
            assert (reader.footer.get("terminal_fence") or {}).get("completion") == "stopped"
    shutil.rmtree(out)
    run.unlink()


def test_a_signal_in_the_first_second_of_fsr_record_is_never_lost(work: Path) -> None:
    """SIGINT 0.5 s after `fsr record` starts: exit 130 with one line (or a stopped commit), never a full Run."""
    out = work / "early"
    proc = subprocess.Popen([str(Path(sys.executable).with_name("fsr")), "record", str(RUN), "--output-dir",
                             str(out), "--duration", "30", "--realtime"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    stdout, err = proc.communicate(timeout=120)
    assert proc.returncode in (130, 3), err
    if proc.returncode == 130:
        assert err.strip().count("\n") == 0, err
        assert not out.exists() or not any(out.iterdir())
    else:
        assert "completion stopped" in stdout
    shutil.rmtree(out, ignore_errors=True)


# -- bad bytes ------------------------------------------------------------------------------------
def _flip(path: Path, record: int = 5) -> None:
    with FsrReader(path) as reader:
        at = next(r for k, r in enumerate(reader.records()) if k == record).payload_offset + 2
    data = bytearray(path.read_bytes())
    data[at] ^= 0x40
    path.write_bytes(bytes(data))


def test_a_flipped_payload_byte_never_passes_export_or_the_reading_api(tmp_path: Path) -> None:
    """A payload byte flipped after writing: export exit 1 naming the stream and offset; the reading API raises."""
    path = tmp_path / "rot.fsr"
    write_numeric(path, 300)
    _flip(path)
    for target in ("mcap", "rerun"):
        done = fsr("export", str(path), "--to", target, "-o", str(tmp_path / f"out.{target}"))
        assert done.returncode == 1
        assert "payload CRC-32C mismatch (streams observations) at offset" in done.stderr
        assert not (tmp_path / f"out.{target}").exists()
    with open_recording(path) as rec, pytest.raises(FormatError, match=r"rot.fsr: batch payload CRC-32C mismatch "
                                                                           r"\(streams observations\).* at offset \d+"):
        rec.numeric("robot.ch0")
    with open_recording(path, verify=False) as rec:
        assert len(rec.numeric("robot.ch0").values) == 300  # asked for: unchecked


def test_a_file_without_payload_crcs_is_read_and_exported_unchecked(tmp_path: Path) -> None:
    """A file written without payload CRCs is never failed for it: export and reads succeed."""
    path = tmp_path / "nocrc.fsr"
    write_numeric(path, 100, payload_crc=False)
    with open_recording(path) as rec:
        assert rec.payload_crc is False
        assert rec.numeric("robot.ch1").values[:2, 0].tolist() == [0.5, 1.5]
    assert fsr("export", str(path), "--to", "mcap", "-o", str(tmp_path / "o.mcap")).returncode == 0


# -- a full disk ----------------------------------------------------------------------------------
@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB tmpfs (skipped, with the reason, where this process may not mount one)."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mount)],
                          capture_output=True, text=True) if shutil.which("mount") else None
    if done is None or done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({(done.stderr.strip() if done else 'no mount command')}): "
                    "the full-disk cases need root or CAP_SYS_ADMIN")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.parametrize("command", ["export mcap", "export rerun", "synth", "recover", "index"])
def test_a_full_disk_is_one_line_naming_enospc(work: Path, full_disk: Path, command: str) -> None:
    """Writing OUT onto a full 3 MiB tmpfs: one line naming ENOSPC (or the disk), exit non-zero, no staging."""
    out = full_disk / "out"
    argv = {
        "export mcap": ["export", str(work / "data" / "b.fsr"), "--to", "mcap", "-o", str(out)],
        "export rerun": ["export", str(work / "data" / "b.fsr"), "--to", "rerun", "-o", str(out)],
        "synth": ["synth", str(out), "--records", "200", "--camera-every", "2", "--camera-bytes", str(640 * 480 * 3)],
        "recover": ["recover", str(work / "data" / "b.fsr"), "-o", str(out)],
        "index": ["index", str(work / "data"), "-o", str(out)],
    }[command]
    if command == "index":  # an index is small: fill the disk first
        (full_disk / "filler").write_bytes(b"\0" * ((3 << 20) - 4096))
    done = fsr(*argv)
    assert done.returncode != 0
    assert done.stderr.strip().count("\n") == 0, done.stderr
    assert "ENOSPC" in done.stderr or "No space left" in done.stderr
    assert [p.name for p in full_disk.iterdir() if p.name != "filler"] == []
