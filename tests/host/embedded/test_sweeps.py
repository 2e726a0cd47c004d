"""Seeds and sweeps: same seed bit-identical, different seeds different, `fsr record --episodes` as real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_recording_format import FsrReader

FSR = str(Path(sys.executable).with_name("fsr"))
ENV = {**os.environ, "MUJOCO_GL": "egl", "PYTHONUNBUFFERED": "1"}
RECORD = "plugin://fastsim/record"


def _write(tmp_path: Path, *, name: str = "episode.fsr", backend: str = "synthetic", duration: float = 0.5,
           scene: dict[str, Any] | None = None, config: dict[str, Any] | None = None,
           sensor_hz: float = 60.0, runtime: dict[str, Any] | None = None) -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({
        "schema": "fastsim/2", "name": "sweep-test", "backend": backend,
        "scenario": {"scene": scene or {}},
        "runtime": {"sensor_hz": sensor_hz, "duration_s": duration, **(runtime or {})},
        "plugins": {"record": {"use": RECORD, "config": {"output": {"name": name}, **(config or {})}}},
    }))
    return path


def _payloads(path: Path, prefix: str) -> dict[str, list[bytes]]:
    with FsrReader(path) as reader:
        return {
            spec.name: [r.payload for r in reader.records(spec.name)]
            for spec in reader.streams if spec.name.startswith(prefix)
        }


def _record(run: Path, out: Path, seed: int | None) -> Path:
    result = run_session(prepare_run(run, seed=seed), out)
    assert result.outcome.ok, result.outcome.reason
    return result.outcome.committed[0]


def test_synthetic_same_seed_is_bit_identical_and_other_seeds_differ(tmp_path: Path) -> None:
    """The synthetic scene: one seed twice gives identical observation payloads, another seed different ones."""
    run = _write(tmp_path)
    a = _payloads(_record(run, tmp_path / "a", 11), "observations")
    b = _payloads(_record(run, tmp_path / "b", 11), "observations")
    c = _payloads(_record(run, tmp_path / "c", 12), "observations")
    assert a["observations"]
    assert a == b
    assert a["observations"] != c["observations"]


def test_runtime_seed_is_the_default_and_the_option_overrides_it(tmp_path: Path) -> None:
    """runtime.seed is used when --seed is absent; an explicit seed wins."""
    run = _write(tmp_path, runtime={"seed": 42})
    assert prepare_run(run).seed == 42
    assert prepare_run(run, seed=3).seed == 3
    (tmp_path / "plain").mkdir()
    assert prepare_run(_write(tmp_path / "plain")).seed == 0


@pytest.mark.mujoco
def test_mujoco_same_seed_is_bit_identical_and_other_seeds_differ_in_joints_and_frames(tmp_path: Path) -> None:
    """The MuJoCo scene: same seed, same joints and frames; another seed moves the trajectory and the pixels."""
    cam = "exterior_left"
    config = {
        "streams": {
            "observations": {"mode": "explicit", "include": {"q": {"channel": "robot.joint_position", "required": True}}},
            "cameras": {cam: {
                "rgb": f"sensors.{cam}.camera.rgb", "intrinsics": f"sensors.{cam}.camera.intrinsics",
                "translation": f"sensors.{cam}.camera.extrinsics.translation",
                "quaternion_xyzw": f"sensors.{cam}.camera.extrinsics.quaternion_xyzw",
                "required": True, "encoding": "png"}},
        },
    }
    scene = {"mujoco": {"width": 64, "height": 48, "cameras": [cam], "reset_every_s": None}}
    run = _write(tmp_path, backend="mujoco", duration=1.0, sensor_hz=15.0, scene=scene, config=config)
    a = _payloads(_record(run, tmp_path / "a", 5), "")
    b = _payloads(_record(run, tmp_path / "b", 5), "")
    c = _payloads(_record(run, tmp_path / "c", 6), "")
    for stream in ("observations", f"cameras.{cam}.rgb", f"cameras.{cam}.extrinsics.translation"):
        assert a[stream] == b[stream], stream
        assert a[stream] != c[stream], stream


def _sweep(run: Path, out: Path, *more: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [FSR, "record", str(run), "--output-dir", str(out), *more],
        capture_output=True, text=True, env=ENV, timeout=300, check=False,
    )


def test_a_sweep_records_seeded_episodes_in_parallel_and_refuses_to_redo_them(tmp_path: Path) -> None:
    """--episodes 3 --jobs 2 --seed 7: three different committed files, one line each and a table; again: exit 2, files untouched."""
    run = _write(tmp_path, name="{name}-s{seed}-e{episode:03d}.fsr")
    out = tmp_path / "out"
    done = _sweep(run, out, "--episodes", "3", "--jobs", "2", "--seed", "7")
    assert done.returncode == 0, done.stderr
    names = [f"sweep-test-s{7 + k}-e{k:03d}.fsr" for k in range(3)]
    assert sorted(p.name for p in out.iterdir()) == names
    for k, name in enumerate(names):
        assert f"episode {k} (seed {7 + k}): committed {out / name}: completion normal" in done.stdout
    assert "sweep of 3 episodes: 3 committed, 0 stopped, 0 failed, 0 not run" in done.stdout
    observations = [_payloads(out / n, "observations")["observations"] for n in names]
    assert observations[0] != observations[1] != observations[2]
    stamps = [(out / n).stat().st_mtime_ns for n in names]
    again = _sweep(run, out, "--episodes", "3", "--jobs", "2", "--seed", "7")
    assert again.returncode == 2
    assert f"{out / names[0]}: already exists; refusing to overwrite it" in again.stderr
    assert "Traceback" not in again.stderr
    assert [(out / n).stat().st_mtime_ns for n in names] == stamps


def test_a_template_that_repeats_a_name_is_rejected_before_anything_runs(tmp_path: Path) -> None:
    """A template without {episode} or {seed} would give two episodes one name: exit 2, nothing created."""
    run = _write(tmp_path, name="{name}.fsr")
    done = _sweep(run, tmp_path / "out", "--episodes", "2")
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "plugins.record.config.output.name: the template '{name}.fsr' gives episodes 0 and 1 the same "
        "name 'sweep-test.fsr'; use {episode} or {seed} in it"
    )
    assert not (tmp_path / "out").exists()


def test_one_failed_episode_neither_stops_nor_corrupts_the_others(tmp_path: Path) -> None:
    """A directory in the way of episode 1 fails that episode only: the others commit, the table says so, exit 1."""
    run = _write(tmp_path)
    out = tmp_path / "out"
    (out / "episode-00001.fsr").mkdir(parents=True)
    done = _sweep(run, out, "--episodes", "3", "--jobs", "2", "--overwrite")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "sweep of 3 episodes: 2 committed, 0 stopped, 1 failed, 0 not run" in done.stdout
    assert "episode 1 (seed 1): refused: " in done.stdout
    for k in (0, 2):
        with FsrReader(out / f"episode-{k:05d}.fsr") as reader:
            assert reader.footer["terminal_fence"]["completion"] == "normal"
    assert (out / "episode-00001.fsr").is_dir()


def test_sigterm_stops_a_sweep_commits_the_running_episode_and_starts_no_other(tmp_path: Path) -> None:
    """SIGTERM to a sweep: the running episode commits as stopped, later episodes are not run, exit 3."""
    run = _write(tmp_path, duration=30.0)
    out = tmp_path / "out"
    proc = subprocess.Popen([FSR, "record", str(run), "--output-dir", str(out), "--episodes", "3", "--jobs", "1",
                             "--realtime", "1"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV)
    end = time.monotonic() + 60
    while not (out / "episode-00000.fsr.incomplete").exists():
        assert proc.poll() is None
        assert time.monotonic() < end
        time.sleep(0.02)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 3, (stdout, stderr)
    assert "Traceback" not in stderr
    assert "sweep of 3 episodes: 0 committed, 1 stopped, 0 failed, 2 not run" in stdout
    with FsrReader(out / "episode-00000.fsr") as reader:
        assert reader.footer["terminal_fence"]["completion"] == "stopped"
    assert sorted(p.name for p in out.iterdir()) == ["episode-00000.fsr"]


@pytest.mark.slow
@pytest.mark.mujoco
def test_the_droid_example_sweep_gives_eight_different_valid_episodes_and_refuses_a_rerun(tmp_path: Path) -> None:
    """`fsr record examples/droid-like/run.yaml --episodes 8 --jobs 2`: 8 valid, different episodes; again: exit 2."""
    run = Path(__file__).resolve().parents[3] / "examples" / "droid-like" / "run.yaml"
    out = tmp_path / "out"
    done = _sweep(run, out, "--episodes", "8", "--jobs", "2", "--duration", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    names = [f"episode-{k:05d}.fsr" for k in range(8)]
    assert sorted(p.name for p in out.iterdir()) == names
    joints, frames = set(), set()
    for k, name in enumerate(names):
        valid = subprocess.run([FSR, "validate", str(out / name)], capture_output=True, text=True, env=ENV,
                               check=False)
        assert valid.returncode == 0, valid.stdout + valid.stderr
        with FsrReader(out / name) as reader:
            assert reader.run.attributes["run"]["seed"] == k
            joints.add(b"".join(r.payload for r in reader.records("observations")))
            frames.add(next(iter(reader.records("cameras.exterior_left.rgb"))).payload)
    assert len(joints) == 8
    assert len(frames) == 8
    again = _sweep(run, out, "--episodes", "8", "--jobs", "2", "--duration", "1")
    assert again.returncode == 2
    assert again.stderr.count("already exists; refusing to overwrite it") == 8


def test_the_host_command_exposes_the_sweep_checks_and_worker_command(tmp_path: Path) -> None:
    """COMMAND.check_sweep gives the plan (first seed, episodes) or the refusals, and worker_command one episode's process."""
    import argparse

    from fastsim_embedded.cli.record import COMMAND

    run = _write(tmp_path, name="ep-{seed}.fsr")
    parser = argparse.ArgumentParser()
    COMMAND.add_arguments(parser)
    args = parser.parse_args([str(run), "--episodes", "2", "--seed", "5", "--output-dir", str(tmp_path)])
    plan, notes = COMMAND.check_sweep(args)
    assert plan is not None
    assert (plan.first, plan.run, notes) == (5, (0, 1), [])
    cmd = COMMAND.worker_command(args, 1, 6)
    assert cmd[1:4] == ["-m", "fastsim_embedded.cli.record", str(run)]
    assert cmd[cmd.index("--seed") + 1] == "6"
    (tmp_path / "ep-6.fsr").write_bytes(b"x")
    first, lines = COMMAND.check_sweep(args)
    assert first is None
    assert lines == [f"fsr record: {tmp_path / 'ep-6.fsr'}: already exists; refusing to overwrite it "
                     "(pass --overwrite to replace it, or --resume to record only the episodes without a file)"]
