"""fr.open(): round trips against what fsr record wrote, episodes, errors, pickling."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.decode import decode_frame

import fastsim_record as fr
from fastsim_embedded.backends.mujoco_scene import JOINT_NAMES
from fastsim_record.ports.encoders import ImageDescriptor
from fastsim_recording_format import FormatError, FsrReader, RecordKind
from fastsim_recording_format.reading import BadArgument, OutOfRange, UnknownName
from fastsim_recording_format.reading.calibration_history import rebuild_calibration_history

CAMERAS = ("exterior_left", "exterior_right", "wrist")


def _records(path: Path, stream: str, kind: RecordKind = RecordKind.DATA) -> list[Any]:
    with FsrReader(path) as reader:
        return [(r, r.payload) for r in reader.records(stream) if r.kind == kind]


def _channel_entry(path: Path, channel: str) -> dict[str, Any]:
    with FsrReader(path) as reader:
        for entry in reader.stream("observations").attributes["channels"]:
            if entry["name"] == channel:
                return dict(entry)
    raise AssertionError(channel)


@pytest.mark.parametrize("channel", ["robot.joint_position", "robot.joint_velocity"])
def test_droid_joints_round_trip(droid_fsr: Path, channel: str) -> None:
    """numeric() equals each tick's payload bytes at the channel's offset, with per-joint names."""
    entry = _channel_entry(droid_fsr, channel)
    expected = [
        np.frombuffer(p, "<f8", count=13, offset=entry["offset"]) for _, p in _records(droid_fsr, "observations")
    ]
    times = [r.sim_time_ns for r, _ in _records(droid_fsr, "observations")]
    with fr.open(droid_fsr) as rec:
        series = rec.numeric(channel)
        assert series.values.dtype == np.float64
        assert series.values.shape == (30, 13)
        np.testing.assert_array_equal(series.values, np.stack(expected))
        assert series.time_ns.tolist() == times
        assert series.time_ns.dtype == np.int64
        assert series.names == tuple(JOINT_NAMES)  # the recorder's element names, in order
        assert series.units == tuple(entry["units"])
        both = rec.numeric_all()
        np.testing.assert_array_equal(both[channel].values, series.values)


def test_droid_frames_equal_decoded_payloads(droid_fsr: Path) -> None:
    """frames(), frame() and frame_at() return the recorded JPEGs decoded to RGB."""
    with fr.open(droid_fsr) as rec, FsrReader(droid_fsr) as reader:
        assert rec.cameras() == CAMERAS
        for camera in CAMERAS:
            stream = f"cameras.{camera}.rgb"
            descriptor = ImageDescriptor.from_dict(reader.stream(stream).codec)
            recorded = [(r.sim_time_ns, r.generation, decode_frame(p, descriptor)) for r, p in _records(droid_fsr, stream)]
            frames = list(rec.frames(camera))
            assert [f.index for f in frames] == list(range(len(recorded)))
            for frame, (t, g, image) in zip(frames, recorded, strict=True):
                assert (frame.time_ns, frame.generation) == (t, g)
                assert frame.image.dtype == np.uint8
                assert frame.image.shape == (240, 320, 3)
                np.testing.assert_array_equal(frame.image, image)
            np.testing.assert_array_equal(rec.frame(camera, 7).image, recorded[7][2])
            np.testing.assert_array_equal(rec.frame(camera, -1).image, recorded[-1][2])
            at = rec.frame_at(camera, recorded[11][0] + 1)
            assert at.index == 11
            np.testing.assert_array_equal(at.image, recorded[11][2])
        picked = list(rec.frames("wrist", start_ns=recorded[3][0], stop_ns=recorded[20][0], step=4))
        assert [f.index for f in picked] == [3, 7, 11, 15, 19]
        assert all(f.generation == 1 for f in rec.frames("wrist", generation=1))


def test_droid_calibration_equals_recorded(droid_fsr: Path) -> None:
    """calibration() equals the recorded K, translation and quaternion, and the rebuilt epochs."""
    with fr.open(droid_fsr) as rec, FsrReader(droid_fsr) as reader:
        history = rebuild_calibration_history(reader.streams, reader.records())
        for camera in CAMERAS:
            cal = rec.calibration(camera)
            for role, array, shape in (
                ("intrinsics", cal.k, (3, 3)),
                ("extrinsics.translation", cal.translation, (3,)),
                ("extrinsics.quaternion_xyzw", cal.quaternion_xyzw, (4,)),
            ):
                rows = _records(droid_fsr, f"cameras.{camera}.{role}")
                np.testing.assert_array_equal(array, np.stack([np.frombuffer(p, "<f8").reshape(shape) for _, p in rows]))
                assert cal.time_ns.tolist() == [r.sim_time_ns for r, _ in rows]
            intrinsics = _records(droid_fsr, f"cameras.{camera}.intrinsics")
            assert cal.digest == tuple(r.metadata["calibration_digest"] for r, _ in intrinsics)
            assert [(e.generation, e.digest) for e in cal.epochs] == [
                (e.generation, e.digest) for e in history.epochs if e.camera == camera
            ]
            assert cal.problems == ()
            profile = cal.epochs[0].profile
            assert cal.k[0][0, 0] == profile["fx"]
            assert cal.k[0][1, 2] == profile["cy"]
            assert {e.generation for e in cal.epochs} == {0, 1}


@pytest.mark.parametrize("call", ["events", "lifecycle", "control"])
def test_json_records_equal_their_payloads(synthetic_fsr: Path, call: str) -> None:
    """events(), lifecycle() and control() return each record's JSON with its time, in order."""
    streams = {"events": ["events"], "lifecycle": ["lifecycle"], "control": ["control.audit", "control.result"]}[call]
    expected = sorted(
        (r.global_sequence, s, r.sim_time_ns, r.generation, json.loads(p))
        for s in streams for r, p in _records(synthetic_fsr, s)
    )
    with fr.open(synthetic_fsr) as rec:
        got = getattr(rec, call)()
    assert [(e.global_sequence, e.stream, e.time_ns, e.generation, e.data) for e in got] == expected
    assert got


def test_info_describes_the_run(synthetic_fsr: Path) -> None:
    """info names the run, backend, completion, generations, span and per-stream counts."""
    with fr.open(synthetic_fsr) as rec, FsrReader(synthetic_fsr) as reader:
        info = rec.info
        assert info.run_id == reader.run.run_id
        assert info.name == "recorded-run"
        assert info.backend == "synthetic"
        assert info.completion == "normal"
        assert info.completion_reason
        assert info.generations == (0, 1, 2)
        assert info.records["observations"] == 180
        assert info.integrity == "structural"
        assert info.degraded is False
        assert info.mode == "record"
        assert info.sim_time_ns == (0, 1_500_000_000)
        assert info.size_bytes == synthetic_fsr.stat().st_size
        run = reader.run.attributes["run"]  # the Run's facts, as the recorder writes them
        assert isinstance(info.seed, int)
        assert (info.name, info.backend, info.seed) == (run["name"], run["backend"], run["seed"])


def test_episodes_split_exactly_at_barriers(synthetic_fsr: Path, droid_fsr: Path) -> None:
    """Each episode holds the DATA records of one generation: they start right after its barrier."""
    for path, channel in ((synthetic_fsr, "robot.joint_position"), (droid_fsr, "robot.joint_velocity")):
        with FsrReader(path) as reader:
            records = [r for r in reader.records("observations")]
        barriers = [r for r in records if r.kind == RecordKind.BARRIER]
        with fr.open(path) as rec:
            episodes = rec.segments()
            assert [e.generation for e in episodes] == list(rec.info.generations)
            assert len(barriers) == len(episodes) - 1
            whole = rec.numeric(channel)
            parts = [e.numeric(channel) for e in episodes]
            np.testing.assert_array_equal(np.concatenate([p.values for p in parts]), whole.values)
            for episode, part in zip(episodes, parts, strict=True):
                assert set(part.generation.tolist()) == {episode.generation}
                data = [r for r in records if r.kind == RecordKind.DATA and r.generation == episode.generation]
                assert part.time_ns.tolist() == [r.sim_time_ns for r in data]
                if episode.generation:
                    barrier = barriers[episode.generation - 1]
                    assert barrier.generation == episode.generation
                    before = [r for r in records if r.global_sequence < barrier.global_sequence]
                    after = [r for r in records if r.global_sequence > barrier.global_sequence]
                    assert all(r.generation < episode.generation for r in before)
                    assert after[0].generation == episode.generation
                    assert after[0].sim_time_ns == part.time_ns[0]
    with fr.open(droid_fsr) as rec:
        for episode in rec.segments():
            frames = list(episode.frames("wrist"))
            assert frames
            assert {f.generation for f in frames} == {episode.generation}
            assert [f.index for f in frames] == list(range(len(frames)))
            assert episode.frame("wrist", 0).time_ns == frames[0].time_ns
            assert set(episode.calibration("wrist").generation.tolist()) == {episode.generation}


def test_unknown_names_and_bad_indexes_list_what_exists(droid_fsr: Path) -> None:
    """Every call refuses a bad argument with one line naming what the recording has."""
    with fr.open(droid_fsr) as rec:
        with pytest.raises(UnknownName, match=r"unknown numeric channel 'robot\.nope'; the recording has: robot\.joint_position, robot\.joint_velocity"):
            rec.numeric("robot.nope")
        for call in (rec.frame, rec.frame_at):
            with pytest.raises(UnknownName, match="unknown camera 'top'; the recording has: exterior_left, exterior_right, wrist"):
                call("top", 0)
        with pytest.raises(UnknownName, match="unknown camera 'top'"):
            rec.frames("top")
        with pytest.raises(UnknownName, match="unknown camera 'top'"):
            rec.calibration("top")
        with pytest.raises(OutOfRange, match=r"frame index 30 out of range: camera 'wrist' has 30 frames \(0\.\.29\)"):
            rec.frame("wrist", 30)
        with pytest.raises(OutOfRange, match="frame index -31"):
            rec.frame("wrist", -31)
        with pytest.raises(OutOfRange, match="no frame at or before time_ns 0; the first is at"):
            rec.frame_at("wrist", 0)
        with pytest.raises(BadArgument, match="index must be an integer, got str"):
            rec.frame("wrist", "3")  # type: ignore[arg-type]
        with pytest.raises(BadArgument, match="step must be a positive integer"):
            rec.frames("wrist", step=0)
        with pytest.raises(UnknownName, match="unknown generation 5; the recording has: 0, 1"):
            rec.segment(5)
        with pytest.raises(UnknownName, match="unknown generation 7; the recording has: 0, 1"):
            rec.frames("wrist", generation=7)
        with pytest.raises(BadArgument, match="channel must be a string"):
            rec.numeric(3)  # type: ignore[arg-type]
        with pytest.raises(BadArgument, match="channels must be a sequence"):
            rec.numeric_all("robot.joint_position")
        assert isinstance(UnknownName("x"), KeyError)
        assert isinstance(OutOfRange("x"), IndexError)
    with pytest.raises(FileNotFoundError, match=r"no-such\.fsr"):
        fr.open(droid_fsr.parent / "no-such.fsr")
    with pytest.raises(BadArgument, match=r"path must be a str or os\.PathLike, got int"):
        fr.open(3)  # type: ignore[arg-type]


def test_a_corrupt_record_table_is_one_error_naming_its_offset(synthetic_fsr: Path, tmp_path: Path) -> None:
    """A flipped byte in a record table fails the table CRC check with the batch's offset."""
    with FsrReader(synthetic_fsr) as reader:
        offset = int(reader.batch_index[0]["offset"])
    data = bytearray(synthetic_fsr.read_bytes())
    data[offset + 120 + 48] ^= 0xFF  # record 0's sim_time_ns
    bad = tmp_path / "bad.fsr"
    bad.write_bytes(bytes(data))
    with fr.open(bad) as rec, pytest.raises(FormatError, match=f"record table CRC mismatch at offset {offset + 112}"):
        rec.numeric("robot.joint_position")


def test_a_broken_frame_payload_is_one_error_naming_its_offset(droid_fsr: Path, tmp_path: Path) -> None:
    """A JPEG whose header is gone fails frame() with the payload's file offset (or its batch's CRC); others still read."""
    with FsrReader(droid_fsr) as reader:
        record = next(iter(reader.records("cameras.wrist.rgb")))
        has_crc = reader.payload_crc
    data = bytearray(droid_fsr.read_bytes())
    data[record.payload_offset:record.payload_offset + 2] = b"\x00\x00"  # no SOI marker
    bad = tmp_path / "bad-frame.fsr"
    bad.write_bytes(bytes(data))
    if has_crc:  # verified by default: the flipped bytes never reach the decoder
        with fr.open(bad) as rec, pytest.raises(FormatError, match=r"bad-frame\.fsr: batch payload CRC-32C mismatch \(streams .* at offset \d+$"):
            rec.frame("wrist", 0)
    with fr.open(bad, verify=False) as rec:
        with pytest.raises(FormatError, match=f"frame payload: .* at offset {record.payload_offset}$"):
            rec.frame("wrist", 0)
        assert rec.frame("wrist", 1).image.shape == (240, 320, 3)


def test_a_recording_pickles_and_reopens_in_another_process(droid_fsr: Path, tmp_path: Path) -> None:
    """A pickled Recording (and Segment) holds only its path and reads in a subprocess."""
    with fr.open(droid_fsr) as rec:
        expected = rec.numeric("robot.joint_position").values.sum()
        image = rec.frame("wrist", 4).image
        blob = tmp_path / "rec.pkl"
        blob.write_bytes(pickle.dumps((rec, rec.segments()[1])))
    assert len(blob.read_bytes()) < 1000
    script = (
        "import pickle, sys, numpy as np\n"
        f"rec, ep = pickle.loads(open({str(blob)!r}, 'rb').read())\n"
        "print(rec.numeric('robot.joint_position').values.sum())\n"
        "print(int(rec.frame('wrist', 4).image.astype(np.int64).sum()))\n"
        "print(ep.generation, len(ep.numeric('robot.joint_position')))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert float(out[0]) == pytest.approx(float(expected), rel=0, abs=1e-9)
    assert int(out[1]) == int(image.astype(np.int64).sum())
    assert out[2:] == ["1", "15"]
