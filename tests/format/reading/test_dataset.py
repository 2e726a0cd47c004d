"""fr.Dataset: samples over files and episodes, windows with pad masks, pickling, workers."""

from __future__ import annotations

import multiprocessing
import pickle
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fastsim_record as fr
from fastsim_recording_format.reading import BadArgument, OutOfRange, UnknownName

JOINTS = "robot.joint_position"


def _two_files(synthetic_fsr: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "set"
    (folder / "b").mkdir(parents=True)
    shutil.copy(synthetic_fsr, folder / "a.fsr")
    shutil.copy(synthetic_fsr, folder / "b" / "c.fsr")
    return folder



def test_segments_are_named_so_and_the_old_episode_names_still_work(synthetic_fsr: Path) -> None:
    """``segments``/``segment_index`` name Runtime generations; ``episodes`` warns, ``episode_index`` stays."""
    ds = fr.Dataset(synthetic_fsr, channels=[JOINTS])
    sample = ds[70]
    assert int(sample["segment_index"]) == int(sample["episode_index"]) == 1
    with pytest.warns(DeprecationWarning, match=r"Dataset\.episodes is deprecated: use Dataset\.segments"):
        old = ds.episodes
    np.testing.assert_array_equal(old, ds.segments)
    assert repr(ds).startswith("Dataset(1 episodes, 3 segments, ")

def test_samples_cover_every_tick_of_every_episode_of_every_file(synthetic_fsr: Path, tmp_path: Path) -> None:
    """A directory's files, each split into its generations; sample i is that tick's values."""
    ds = fr.Dataset(_two_files(synthetic_fsr, tmp_path), channels=[JOINTS, "robot.base_pose"])
    with fr.open(synthetic_fsr) as rec:
        joints = rec.numeric(JOINTS)
        pose = rec.numeric("robot.base_pose")
    assert len(ds) == 2 * len(joints) == 360
    assert ds.segments[:, :2].tolist() == [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    for i in (0, 59, 60, 179, 180, 250, -1):
        sample = ds[i]
        tick = i % 180
        np.testing.assert_array_equal(sample[JOINTS], joints.values[tick])
        np.testing.assert_array_equal(sample["robot.base_pose"], pose.values[tick])
        assert int(sample["time_ns"]) == joints.time_ns[tick]
        assert int(sample["generation"]) == joints.generation[tick]
        assert int(sample["file_index"]) == (i % 360) // 180
        assert int(sample["frame_index"]) == tick % 60
        assert f"{JOINTS}_is_pad" not in sample


def test_a_process_keeps_a_bounded_number_of_files_open(
    synthetic_fsr: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading many files keeps at most MAX_OPEN of them open; a closed one reopens on demand."""
    import fastsim_recording_format.reading._dataset as module

    monkeypatch.setattr(module, "MAX_OPEN", 2)
    for k in range(4):
        shutil.copy(synthetic_fsr, tmp_path / f"f{k}.fsr")
    ds = fr.Dataset(tmp_path, channels=[JOINTS])
    first = ds[0][JOINTS]
    for f in range(4):
        ds[f * 180 + 5]
        assert len(ds._open) <= 2
    np.testing.assert_array_equal(ds[0][JOINTS], first)
    ds.close()
    assert not ds._open


def test_windows_pad_at_episode_edges_with_a_mask(synthetic_fsr: Path) -> None:
    """Offsets outside the episode repeat its edge tick and are flagged; never the next episode."""
    ds = fr.Dataset(synthetic_fsr, channels=[JOINTS], window={JOINTS: [-2, -1, 0, 1]})
    with fr.open(synthetic_fsr) as rec:
        values = rec.numeric(JOINTS).values
    first = ds[60]  # generation 1, tick 0
    assert first[JOINTS].shape == (4, 7)
    assert first[f"{JOINTS}_is_pad"].tolist() == [True, True, False, False]
    np.testing.assert_array_equal(first[JOINTS], values[[60, 60, 60, 61]])
    last = ds[119]  # generation 1, last tick
    assert last[f"{JOINTS}_is_pad"].tolist() == [False, False, False, True]
    np.testing.assert_array_equal(last[JOINTS], values[[117, 118, 119, 119]])
    inner = ds[100]
    assert not inner[f"{JOINTS}_is_pad"].any()
    np.testing.assert_array_equal(inner[JOINTS], values[98:102])


def test_cameras_give_the_latest_frame_of_the_tick(droid_fsr: Path) -> None:
    """A camera key holds each window tick's frame, RGB, with a pad mask."""
    ds = fr.Dataset(droid_fsr, channels=[JOINTS], cameras=["wrist"], window=[-1, 0])
    with fr.open(droid_fsr) as rec:
        frames = [f.image for f in rec.frames("wrist")]
    sample = ds[16]  # generation 1 starts at tick 15
    assert sample["wrist"].shape == (2, 240, 320, 3)
    assert sample["wrist"].dtype == np.uint8
    np.testing.assert_array_equal(sample["wrist"], np.stack(frames[15:17]))
    assert ds[15]["wrist_is_pad"].tolist() == [True, False]
    np.testing.assert_array_equal(ds[15]["wrist"][0], frames[15])


def test_transform_is_applied(synthetic_fsr: Path) -> None:
    """transform receives the sample dict and its result is returned."""
    ds = fr.Dataset(synthetic_fsr, channels=[JOINTS], transform=lambda s: s[JOINTS].sum())
    assert ds[3] == pytest.approx(float(fr.open(synthetic_fsr).numeric(JOINTS).values[3].sum()))


def test_bad_arguments_are_one_clear_error(synthetic_fsr: Path, droid_fsr: Path, tmp_path: Path) -> None:
    """Unknown channels, cameras, window keys, indexes and paths are refused, listing what exists."""
    with pytest.raises(UnknownName, match=r"unknown numeric channel \(in .*\) 'robot\.nope'; the recording has: robot\.base_pose, robot\.joint_position, robot\.joint_velocity"):
        fr.Dataset(synthetic_fsr, channels=["robot.nope"])
    with pytest.raises(UnknownName, match=r"unknown camera \(in .*\) 'top'; the recording has: exterior_left, exterior_right, wrist"):
        fr.Dataset(droid_fsr, channels=[JOINTS], cameras=["top"])
    with pytest.raises(UnknownName, match=r"unknown window key 'x'; the dataset's channels and cameras are: robot\.joint_position"):
        fr.Dataset(synthetic_fsr, channels=[JOINTS], window={"x": [0]})
    with pytest.raises(BadArgument, match="must hold integer tick offsets"):
        fr.Dataset(synthetic_fsr, channels=[JOINTS], window=[0.5])  # type: ignore[list-item]
    with pytest.raises(BadArgument, match="channels must be a sequence"):
        fr.Dataset(synthetic_fsr, channels=JOINTS)
    with pytest.raises(BadArgument, match="at least one numeric channel"):
        fr.Dataset(synthetic_fsr, channels=[])
    with pytest.raises(FileNotFoundError, match="neither a recording file nor a directory"):
        fr.Dataset(tmp_path / "missing", channels=[JOINTS])
    with pytest.raises(BadArgument, match=r"holds no \.fsr files"):
        fr.Dataset(tmp_path, channels=[JOINTS])
    ds = fr.Dataset(synthetic_fsr, channels=[JOINTS])
    with pytest.raises(OutOfRange, match="sample index 180 out of range: the dataset has 180 samples"):
        ds[180]
    with pytest.raises(BadArgument, match="index must be an integer"):
        ds["0"]  # type: ignore[index]


def _sum_in_worker(args: tuple[fr.Dataset, list[int]]) -> float:
    ds, indexes = args
    return float(sum(ds[i][JOINTS].sum() for i in indexes))


def test_a_pickled_dataset_reads_in_worker_processes(synthetic_fsr: Path, tmp_path: Path) -> None:
    """The dataset pickles without open files; spawned workers and a subprocess read it."""
    ds = fr.Dataset(synthetic_fsr, channels=[JOINTS], window=[-1, 0])
    expected = sum(float(ds[i][JOINTS].sum()) for i in range(len(ds)))
    blob = pickle.dumps(ds)
    assert len(blob) < 10_000
    halves = [list(range(0, 90)), list(range(90, 180))]
    with multiprocessing.get_context("spawn").Pool(2) as pool:
        got = pool.map(_sum_in_worker, [(ds, h) for h in halves])
    assert sum(got) == pytest.approx(expected, rel=1e-12)
    (tmp_path / "ds.pkl").write_bytes(blob)
    script = (
        "import pickle\n"
        f"ds = pickle.loads(open({str(tmp_path / 'ds.pkl')!r}, 'rb').read())\n"
        "print(len(ds), float(ds[61]['robot.joint_position'].sum()))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert int(out[0]) == 180
    assert float(out[1]) == pytest.approx(float(ds[61][JOINTS].sum()), rel=1e-12)


_FORKED: dict[str, fr.Dataset] = {}


def _sum_forked(indexes: list[int]) -> float:
    ds = _FORKED["ds"]
    return float(sum(ds[i][JOINTS].sum() for i in indexes))


def test_forked_workers_reopen_files_the_parent_had_open(synthetic_fsr: Path) -> None:
    """After fork (DataLoader's default on Linux) each worker opens its own file descriptors."""
    ds = fr.Dataset(synthetic_fsr, channels=[JOINTS])
    expected = sum(float(ds[i][JOINTS].sum()) for i in range(len(ds)))  # the parent has the file open
    _FORKED["ds"] = ds  # inherited by the forked workers, open caches and all (not pickled)
    try:
        with multiprocessing.get_context("fork").Pool(2) as pool:
            got = pool.map(_sum_forked, [list(range(0, 90)), list(range(90, 180))])
    finally:
        _FORKED.clear()
    assert sum(got) == pytest.approx(expected, rel=1e-12)


def test_torch_dataloader_with_two_workers(synthetic_fsr: Path) -> None:
    """torch's DataLoader batches the dataset with 2 worker processes (duck typing)."""
    torch: Any = pytest.importorskip("torch", reason="torch is not installed: the DataLoader test needs it")
    ds = fr.Dataset(synthetic_fsr, channels=[JOINTS], window=[-1, 0])
    loader = torch.utils.data.DataLoader(ds, batch_size=16, num_workers=2, shuffle=False)
    batches = list(loader)
    assert sum(len(b[JOINTS]) for b in batches) == len(ds)
    first = batches[0][JOINTS].numpy()
    np.testing.assert_array_equal(first[3], ds[3][JOINTS])


def test_numeric_table_is_one_arrow_table(synthetic_fsr: Path) -> None:
    """numeric_table() holds every channel of every tick; to_pandas() works from there."""
    pytest.importorskip("pyarrow", reason="pyarrow (extra 'read') is not installed")
    with fr.open(synthetic_fsr) as rec:
        table = rec.numeric_table()
        assert table.column_names == ["time_ns", "generation", JOINTS, "robot.joint_velocity", "robot.base_pose"]
        assert table.num_rows == 180
        joints = rec.numeric(JOINTS)
        np.testing.assert_array_equal(np.array(table[JOINTS].to_pylist()), joints.values)
        np.testing.assert_array_equal(table["time_ns"].to_numpy(), joints.time_ns)
        episode = rec.segments()[2].numeric_table([JOINTS])
        assert episode.column_names == ["time_ns", "generation", JOINTS]
        assert set(episode["generation"].to_pylist()) == {2}
