"""The exports carry the action and animate the robot, read back by each format's own reader:

- LeRobot: ``action`` from the recorded commands (``rec.actions()``) for a scripted Run, a Run driven through
  ``FastSimRun-v0`` and a Gymnasium recording; ``observation.state`` float32 with names per element;
- MCAP (``mcap`` reader): ``foxglove.JointStates``, ``foxglove.Log``, the MJCF and meshes as attachments with their
  SHA-256 in the metadata;
- Rerun (``RrdReader``): the recorded commands beside the joint states.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import fastsim_record as fr
from fastsim_record.cli import main

ROOT = Path(__file__).resolve().parents[3]


def _lerobot(out: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``(features, rows)`` of an exported dataset: LeRobot's own reader when importable, else pyarrow."""
    if importlib.util.find_spec("lerobot") is not None:  # pragma: no cover - lerobot needs Python >= 3.12 here
        from lerobot.datasets.lerobot_dataset import LeRobotDataset

        ds = LeRobotDataset("local/fsr-actions", root=out, video_backend="pyav")
        rows = [{k: np.asarray(v) for k, v in ds.hf_dataset[i].items()} for i in range(len(ds.hf_dataset))]
        return dict(ds.meta.features), rows
    import pyarrow.parquet as pq

    table = pq.read_table(out / "data" / "chunk-000" / "file-000.parquet")
    info = json.loads((out / "meta" / "info.json").read_text())
    for key in ("observation.state", "action"):  # what is on disk is what info.json says
        assert str(table.schema.field(key).type.value_type) == "float"
        assert table.schema.field(key).type.list_size == len(info["features"][key]["names"])
    rows = [{k: np.asarray(v) for k, v in row.items()} for row in table.to_pylist()]
    return info["features"], rows


def _held(acts: fr.Actions, g: int, t: int) -> np.ndarray:
    """The action of the latest tick at or before ``t`` that has an accepted one; before the first, the first."""
    ok = (acts.generation == g) & acts.issued & acts.accepted
    rows = np.flatnonzero(ok & (acts.time_ns <= t))
    return np.asarray(acts.values[rows[-1] if len(rows) else np.flatnonzero(ok)[0]], np.float32)


def _check_lerobot(paths: list[Path], out: Path, camera: str) -> None:
    """Export ``paths`` and compare dtype, names and every row's state and action with the recording."""
    # every episode, stopped ones too (a driven Run's last episode is stopped by close())
    assert main(["export", *map(str, paths), "--to", "lerobot", "-o", str(out), "--quiet",
                 "--include", "all"]) == 0
    features, rows = _lerobot(out)
    segments = [(p, g) for p in paths for g in fr.open(p).generations()]
    for k, row in enumerate(rows):
        path, g = segments[int(row["episode_index"])]
        with fr.open(path) as rec:
            acts = rec.actions()
            q, v = rec.numeric("robot.joint_position"), rec.numeric("robot.joint_velocity")
            t = rec.segment(g).frame(camera, int(row["frame_index"])).time_ns
        if k == 0:
            assert features["action"]["dtype"] == features["observation.state"]["dtype"] == "float32"
            assert features["action"]["names"] == list(acts.names)
            assert features["observation.state"]["names"] == [*q.names, *v.names]
        np.testing.assert_array_equal(row["action"], _held(acts, g, t))
        j = int(np.flatnonzero((q.generation == g) & (q.time_ns <= t))[-1])
        np.testing.assert_array_equal(row["observation.state"],
                                      np.concatenate([q.values[j], v.values[j]]).astype(np.float32))


def test_lerobot_action_of_a_scripted_run_is_the_control_audit(droid_fsr: Path, tmp_path: Path) -> None:
    """The scripted DROID pick: each frame's action is the command issued after its tick (rec.actions())."""
    pytest.importorskip("av")
    _check_lerobot([droid_fsr], tmp_path / "ds", "wrist")
    with fr.open(droid_fsr) as rec:
        acts = rec.actions()
        audit = [e.data["args"]["targets"] for e in rec.control() if e.stream == "control.audit"]
    issued = acts.values[acts.issued]
    assert len(issued) == len(audit) - 2  # the first command of each segment precedes every observation
    assert {tuple(a) for a in issued} <= {tuple(a) for a in audit}


def test_lerobot_action_of_a_driven_run_is_what_the_policy_sent(tmp_path: Path) -> None:
    """FastSimRun-v0 on the MuJoCo pick: the exported actions are the actions sent (finger_joint's target in rad)."""
    pytest.importorskip("av")
    pytest.importorskip("gymnasium")
    from fastsim_embedded.gym import FastSimRunEnv

    env = FastSimRunEnv(ROOT / "examples" / "policy" / "pick.yaml", tmp_path / "out")
    env.action_space.seed(5)
    env.reset(seed=5)
    sent = [env.action_space.sample() for _ in range(6)]
    for action in sent:
        env.step(action)
    env.close()
    path = Path(env.committed[0])
    with fr.open(path) as rec:
        np.testing.assert_array_equal(rec.actions().values[:6], np.array(sent, np.float64))
    _check_lerobot([path], tmp_path / "ds", "wrist")


def test_lerobot_action_of_a_gymnasium_recording_is_its_action_channel(tmp_path: Path) -> None:
    """A recorded HalfCheetah episode: rec.actions() is rec.numeric('action') (the audit agrees), and so is LeRobot's."""
    pytest.importorskip("av")
    gym = pytest.importorskip("gymnasium")
    pytest.importorskip("mujoco")
    from fastsim_record.gym import RecordEpisodes

    env = RecordEpisodes(gym.make("HalfCheetah-v5", max_episode_steps=8, render_mode="rgb_array", width=64,
                                  height=48), tmp_path / "gym")
    env.action_space.seed(2)
    env.reset(seed=2)
    done = False
    while not done:
        _, _, terminated, truncated, _ = env.step(env.action_space.sample())
        done = terminated or truncated
    env.close()
    path = env.files[0].path
    with fr.open(path) as rec:
        acts, channel = rec.actions(), rec.numeric("action")
        audited = rec.actions("robot.gym.action")  # the same actions, read from the control audit
    assert acts.command == "action"
    assert len(acts) == len(channel) + 1 == 9
    np.testing.assert_array_equal(acts.values[:8], channel.values)
    assert acts.issued.tolist() == [True] * 8 + [False]
    np.testing.assert_array_equal(audited.values, acts.values)
    assert audited.issued.tolist() == acts.issued.tolist()
    _check_lerobot([Path(path)], tmp_path / "ds", "render")


def test_mcap_joint_states_logs_and_the_model_as_attachments(droid_fsr: Path, tmp_path: Path) -> None:
    """JointStates equal the recorded joints; lifecycle and events are Logs; the attached MJCF is the Run's model."""
    pytest.importorskip("foxglove")
    mujoco = pytest.importorskip("mujoco")
    from mcap.reader import make_reader
    from mcap_protobuf.decoder import DecoderFactory

    out = tmp_path / "droid.mcap"
    assert main(["export", str(droid_fsr), "--to", "mcap", "-o", str(out), "--quiet"]) == 0
    with fr.open(droid_fsr) as rec:
        q, v = rec.numeric("robot.joint_position"), rec.numeric("robot.joint_velocity")
        logs = [*rec.lifecycle(), *rec.events()]
        mjcf = rec.info.attributes["scene"]["backend"]["mjcf"]["text"]
    with out.open("rb") as f:
        reader = make_reader(f, validate_crcs=True, decoder_factories=[DecoderFactory()])
        states, texts = [], []
        for schema, channel, _, msg in reader.iter_decoded_messages(topics=["/robot/joint_states", "/lifecycle",
                                                                            "/events"]):
            if channel.topic == "/robot/joint_states":
                assert schema is not None
                assert schema.name == "foxglove.JointStates"
                states.append(msg)
            else:
                assert schema is not None
                assert schema.name == "foxglove.Log"
                texts.append(msg.message)
        attachments = {a.name: a for a in reader.iter_attachments()}
        meta = {m.name: m.metadata for m in reader.iter_metadata()}
    assert len(states) == len(q)
    assert [j.name for j in states[0].joints] == list(q.names)
    np.testing.assert_array_equal([[j.position for j in s.joints] for s in states], q.values)
    np.testing.assert_array_equal([[j.velocity for j in s.joints] for s in states], v.values)
    assert len(texts) == len(logs)
    assert sorted(str(e.data.get("event")) for e in logs) == sorted(t.split(" ", 2)[1].rstrip(":") for t in texts)
    model = attachments["mjcf/droid_like.xml"]
    assert model.media_type == "application/xml"
    assert model.data.decode() == mjcf
    digest = json.loads(meta["fsr.attachments"]["mjcf/droid_like.xml"])
    assert digest["sha256"] == hashlib.sha256(model.data).hexdigest()
    assert digest["bytes"] == len(model.data)
    compiled = mujoco.MjModel.from_xml_string(model.data.decode())  # the model Foxglove's joints animate
    assert {compiled.joint(i).name for i in range(compiled.njnt)} >= set(q.names)
    assert "text" not in json.loads(meta["fsr.run"]["attributes"])["scene"]["backend"]["mjcf"]


def test_mcap_attaches_small_meshes_as_stl(geometry_fsr: Path, tmp_path: Path) -> None:
    """Each recorded mesh is an STL attachment whose triangles are the mesh's, its SHA-256 in fsr.attachments."""
    pytest.importorskip("foxglove")
    from mcap.reader import make_reader

    from fastsim_recording_format.codecs.geometry import decode_assets, record_kind
    from fastsim_recording_format.reading.decoded import GeometryRecord, iter_decoded

    out = tmp_path / "geo.mcap"
    assert main(["export", str(geometry_fsr), "--to", "mcap", "-o", str(out), "--quiet"]) == 0
    meshes: dict[str, tuple[Any, Any]] = {}
    for r in iter_decoded(geometry_fsr):
        if isinstance(r, GeometryRecord) and record_kind(r.payload) == "assets":
            assets = decode_assets(r.payload)
            meshes |= {rid: assets.mesh(rid) for rid in assets.blobs}
    assert meshes
    with out.open("rb") as f:
        reader = make_reader(f)
        attachments = {a.name: a.data for a in reader.iter_attachments()}
        meta = {m.name: m.metadata for m in reader.iter_metadata()}["fsr.attachments"]
    for rid, (vertices, faces) in meshes.items():
        data = attachments[f"meshes/{rid}.stl"]
        assert json.loads(meta[f"meshes/{rid}.stl"])["sha256"] == hashlib.sha256(data).hexdigest()
        (n,) = np.frombuffer(data, np.uint32, 1, 80)
        assert n == len(faces)
        tri = np.frombuffer(data[84:], np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]))["v"]
        np.testing.assert_array_equal(tri, np.asarray(vertices, np.float32)[np.asarray(faces)])


def test_rerun_keeps_the_recorded_commands_beside_the_joint_states(droid_fsr: Path, tmp_path: Path) -> None:
    """command/robot.set_joint_targets holds every audited command's targets, on the joint states' timeline."""
    pytest.importorskip("rerun")
    from rerun.chunk import RrdReader

    out = tmp_path / "droid.rrd"
    assert main(["export", str(droid_fsr), "--to", "rerun", "-o", str(out), "--quiet"]) == 0
    with fr.open(droid_fsr) as rec:
        audit = np.array([e.data["args"]["targets"] for e in rec.control() if e.stream == "control.audit"])
        joints = len(rec.numeric("robot.joint_position"))
    values: dict[str, list[Any]] = {"/command/robot.set_joint_targets": [], "/numeric/robot.joint_position": []}
    for chunk in RrdReader(str(out)).stream().to_chunks():
        if chunk.is_static or chunk.entity_path not in values:
            continue
        batch = chunk.to_record_batch()
        (column,) = [c for c in batch.schema.names if c.endswith("Scalars:scalars")]
        assert "sim_time" in batch.schema.names
        assert "tick" in batch.schema.names
        values[chunk.entity_path] += batch.column(column).to_pylist()
    np.testing.assert_array_equal(np.array(values["/command/robot.set_joint_targets"]), audit)
    assert len(values["/numeric/robot.joint_position"]) == joints
