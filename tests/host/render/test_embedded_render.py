"""Embedded host render side: scene.geometry@2 from MuJoCo, render-state sampling, rate gates."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from numpy.typing import NDArray

from fastsim_contract.render_services import GeometryAssets, GeometryTransforms
from fastsim_contract.values import CapturePlan, Envelope, SourceKind
from fastsim_embedded.host.core import EmbeddedHost
from fastsim_embedded.render.capture import RateGate, RenderCapture
from fastsim_embedded.render.fluid import ParticleEmitter
from fastsim_record.adapters.geometry import GeometryEncoder
from fastsim_record.testing.strategies import render_rate_cases
from fastsim_recording_format.codecs.geometry import decode_assets
from fastsim_recording_format.codecs.render_state import decode_render_state, encode_render_state

_MANDATORY = frozenset({"lifecycle", "events", "control.audit", "control.result"})

_MESH_XML = """
<mujoco>
  <asset>
    <mesh name="tetra" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>
    <mesh name="tetra_copy" vertex="0 0 0 1 0 0 0 1 0 0 0 1"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="1 1 0.1"/>
    <body name="base"><geom name="post" type="box" size="0.1 0.1 0.1"/></body>
    <body name="arm" pos="0 0 0.5">
      <joint name="hinge" type="hinge" axis="0 0 1"/>
      <geom name="m1" type="mesh" mesh="tetra"/>
      <geom name="m2" type="mesh" mesh="tetra_copy" pos="0.2 0 0"/>
      <geom name="collide_only" type="sphere" size="0.05" group="3"/>
    </body>
    <body name="puck" pos="0.3 0 0.1"><freejoint/><geom type="cylinder" size="0.05 0.01"/></body>
    <body name="target" mocap="true" pos="0 0.3 0.2"><geom type="sphere" size="0.02" contype="0" conaffinity="0"/></body>
  </worldbody>
</mujoco>
"""


def _plan(*extra: str, render_hz: float | None = None, geometry_hz: float | None = None) -> CapturePlan:
    return CapturePlan(
        sources=_MANDATORY | frozenset(extra), render_state_hz=render_hz, geometry_hz=geometry_hz
    )


class CountingSource:
    """A render source that counts every state read and geometry access."""

    def __init__(self, emitter: ParticleEmitter | None = None) -> None:
        self.state_reads = 0
        self.geometry_reads = 0
        self.emitter = emitter

    def render_state(self) -> Mapping[str, NDArray[Any]]:
        self.state_reads += 1
        pose = np.array([0, 0, 0, 0, 0, 0, 1.0])
        zero = np.zeros(3)
        for array in (pose, zero):
            array.flags.writeable = False
        return {"rigid/a/pose": pose, "rigid/a/linear_velocity": zero, "rigid/a/angular_velocity": zero}

    def scene_geometry(self) -> None:
        self.geometry_reads += 1

    def fluid_emitter(self) -> ParticleEmitter | None:
        return self.emitter


class Backend:
    """A backend stub carrying a render source."""

    name = "stub"

    def __init__(self, source: CountingSource) -> None:
        self.source = source

    def render_source(self) -> CountingSource:
        return self.source


def _drive(host: EmbeddedHost, capture: RenderCapture | None, ticks: int, hz: float = 120.0) -> None:
    for tick in range(1, ticks + 1):
        host.advance(tick, round(tick * 1e9 / hz))
        if capture is not None:
            capture.after_step(1 / hz)


def test_rate_gate_samples_every_fourth_tick_at_30_of_120_hz() -> None:
    """A 30 Hz gate over a 120 Hz loop is due on the first tick, then once per 1/30 s."""
    gate = RateGate(30.0)
    due = [t for t in range(1, 121) if gate.due(0, round(t * 1e9 / 120))]
    assert due == [1, *range(4, 121, 4)]
    assert gate.due(1, 0)  # a new generation is due at once


@given(render_rate_cases())
def test_rate_gate_never_exceeds_its_rate(case: tuple[float, float, int]) -> None:
    """Over any run the gate samples the first tick and then at most once per 1/rate_hz."""
    rate, sensor, ticks = case
    gate = RateGate(rate)
    times = [round(t * 1e9 / sensor) for t in range(1, ticks + 1)]
    due = [t for t in times if gate.due(0, t)]
    assert due[0] == times[0]
    span_s = (times[-1] - times[0]) / 1e9
    assert len(due) <= math.floor(span_s * rate + 1e-6) + 2
    assert len(due) >= min(len(times), math.floor(span_s * rate) - 1)
    assert len(due) == len(set(math.floor(t * rate / 1e9 + 1e-6) for t in due))


def test_disabled_render_state_builds_no_capture_and_reads_nothing(tmp_path: Path) -> None:
    """Without render.state/geometry in the plan there is no capture object, subscription or read."""
    source = CountingSource()
    host = EmbeddedHost.create(capture=_plan(), output_dir=tmp_path)
    assert RenderCapture.build(host, Backend(source)) is None
    _drive(host, None, 120)
    assert source.state_reads == 0
    assert source.geometry_reads == 0
    assert host.bus.last_global_sequence == 0


def test_enabled_render_state_samples_at_the_configured_rate(tmp_path: Path) -> None:
    """At 30 Hz over 120 ticks of 120 Hz the host reads state 31 times and sequences 31 items."""
    source = CountingSource()
    host = EmbeddedHost.create(capture=_plan("render.state", render_hz=30.0), output_dir=tmp_path)
    seen: list[Envelope] = []
    host.bus.subscribe("render.state", seen.append)
    capture = RenderCapture.build(host, Backend(source))
    _drive(host, capture, 120)
    assert source.state_reads == 31
    assert [e.global_sequence for e in seen] == list(range(1, 32))
    assert [e.source_sequence for e in seen] == list(range(1, 32))
    assert all(e.source is SourceKind.RENDER_STATE for e in seen)


def test_fluid_batches_publish_only_when_captured(tmp_path: Path) -> None:
    """An emitter publishes fluid.emissions only when the plan captures it."""
    host = EmbeddedHost.create(capture=_plan("fluid.emissions"), output_dir=tmp_path)
    seen: list[Envelope] = []
    host.bus.subscribe("fluid.emissions", seen.append)
    capture = RenderCapture.build(host, Backend(CountingSource(ParticleEmitter(rate_per_tick=2))))
    _drive(host, capture, 10)
    assert len(seen) == 10
    assert RenderCapture.services_of(Backend(CountingSource(ParticleEmitter()))) == {"fluid.audit"}
    assert RenderCapture.services_of(Backend(CountingSource())) == frozenset()


mujoco = pytest.importorskip("mujoco")


@pytest.fixture
def mesh_scene() -> tuple[Any, Any]:
    model = mujoco.MjModel.from_xml_string(_MESH_XML)
    data = mujoco.MjData(model)
    mujoco.mj_forward(model, data)
    return model, data


@pytest.mark.mujoco
def test_mujoco_geometry_catalog_motion_and_dedup(mesh_scene: tuple[Any, Any]) -> None:
    """The MuJoCo catalog has static/dynamic/kinematic bodies and two equal meshes stored once."""
    from fastsim_embedded.render.geometry import MujocoSceneGeometry

    service = MujocoSceneGeometry(*mesh_scene)
    assert service.catalog_kinds() == {"visual", "collision"}
    catalog = service.catalog("visual")
    motions = {b.name: b.motion for b in catalog.bodies}
    assert motions == {"world": "static", "base": "static", "arm": "dynamic", "puck": "dynamic", "target": "kinematic"}
    assert "collide_only" not in {i.name for i in catalog.items}
    resources = tuple(service.read_resource(r) for r in ("mesh:tetra", "mesh:tetra_copy"))
    encoder = GeometryEncoder()
    payload = encoder.encode({"assets": GeometryAssets(frozenset({"visual", "collision"}), catalog, resources)})
    meta = encoder.last_metadata
    assert meta["resources_stored"] == 1
    decoded = decode_assets(payload)
    assert len(decoded.blobs) == 1
    assert service.transforms(("arm", "puck")).shape == (2, 7)


@pytest.mark.mujoco
def test_mujoco_geometry_falls_back_to_collision(mesh_scene: tuple[Any, Any]) -> None:
    """With no visible group the scene exposes only its collision catalog."""
    from fastsim_embedded.render.geometry import MujocoSceneGeometry

    service = MujocoSceneGeometry(*mesh_scene, visual_groups=())
    assert service.catalog_kinds() == {"collision"}
    assert "collide_only" in {i.name for i in service.catalog("collision").items}


@pytest.mark.mujoco
def test_geometry_capture_reads_once_then_queries_moving_bodies(tmp_path: Path, mesh_scene: tuple[Any, Any]) -> None:
    """Assets are read once; later samples query only dynamic and kinematic transforms."""
    from fastsim_embedded.render.mujoco import MujocoRenderSource

    source = MujocoRenderSource(*mesh_scene)
    backend = type("B", (), {"render_source": lambda self: source})()
    host = EmbeddedHost.create(capture=_plan("geometry", geometry_hz=30.0), output_dir=tmp_path)
    seen: list[Envelope] = []
    host.bus.subscribe("geometry", seen.append)
    capture = RenderCapture.build(host, backend)
    _drive(host, capture, 120)
    service = source.scene_geometry()
    assert service.reads["catalog"] == 1
    assert service.reads["resource"] == 2
    assert service.reads["transforms"] == 30
    assert isinstance(seen[0].payload["assets"], GeometryAssets)  # type: ignore[index]
    assert all(isinstance(e.payload["transforms"], GeometryTransforms) for e in seen[1:])  # type: ignore[index]
    second = seen[1].payload["transforms"]  # type: ignore[index]
    assert isinstance(second, GeometryTransforms)
    assert second.bodies == ("arm", "puck", "target")


@pytest.mark.mujoco
def test_disabled_geometry_never_reads_the_catalog(tmp_path: Path, mesh_scene: tuple[Any, Any]) -> None:
    """With geometry disabled no catalog, resource or transform read happens."""
    from fastsim_embedded.render.mujoco import MujocoRenderSource

    source = MujocoRenderSource(*mesh_scene)
    backend = type("B", (), {"render_source": lambda self: source})()
    host = EmbeddedHost.create(capture=_plan("render.state", render_hz=30.0), output_dir=tmp_path)
    _drive(host, RenderCapture.build(host, backend), 60)
    assert source._geometry is None


@pytest.mark.mujoco
def test_render_state_round_trip_and_exact_apply(mesh_scene: tuple[Any, Any]) -> None:
    """Sampled MuJoCo state survives the codec and poses a fresh model bit for bit."""
    from fastsim_embedded.render.mujoco import MujocoRenderSource

    model, data = mesh_scene
    data.qpos[:] = np.random.default_rng(1).standard_normal(model.nq)
    mujoco.mj_normalizeQuat(model, data.qpos)
    data.qvel[:] = 0.5
    mujoco.mj_forward(model, data)
    state = MujocoRenderSource(model, data).render_state()
    decoded = decode_render_state(encode_render_state(state))
    fresh = mujoco.MjData(model)
    target = MujocoRenderSource(model, fresh)
    target.apply_state(decoded.arrays)
    assert fresh.qpos.tobytes() == data.qpos.tobytes()
    assert decoded.arrays["rigid/puck/linear_velocity"].tolist() == [0.5, 0.5, 0.5]


@pytest.mark.mujoco
def test_mujoco_run_records_scene_geometry_through_record(tmp_path: Path) -> None:
    """A MuJoCo Run with streams.geometry writes one visual assets record, then moving-body transforms at rate_hz."""
    from fastsim_embedded.session.compile import prepare_run
    from fastsim_embedded.session.session import run_session
    from fastsim_recording_format import FsrReader
    from fastsim_recording_format.codecs.geometry import decode_transforms, record_kind

    run = tmp_path / "geo.yaml"
    run.write_text(
        "schema: fastsim/2\nname: geo\nbackend: mujoco\n"
        "scenario: {scene: {robots: {robot: {use: robot://droid/panda-2f85}}, mujoco: {cameras: []}}}\n"
        "plugins:\n  record:\n    use: plugin://fastsim/record\n    config:\n"
        "      output: {name: geo.fsr}\n"
        "      streams: {observations: {mode: none, include: {}}, geometry: {enabled: true, rate_hz: 10}}\n",
        encoding="utf-8",
    )
    result = run_session(prepare_run(run, duration_s=1.0), tmp_path)
    assert result.outcome.ok, result.outcome.reason
    with FsrReader(tmp_path / "geo.fsr") as reader:
        assert reader.stream("geometry").kind == "scene.geometry@2"
        records = [r.payload for r in reader.records("geometry")]
    assert len(records) == 11
    assets = decode_assets(records[0]).manifest
    assert assets["catalog"] == "visual"
    motions = {b["name"]: b["motion"] for b in assets["bodies"]}
    assert {"world", "table"} <= {n for n, m in motions.items() if m == "static"}
    moving = {n for n, m in motions.items() if m != "static"}
    assert {"cube", "hand"} <= moving
    assert all(record_kind(r) == "transforms" for r in records[1:])
    assert set(decode_transforms(records[-1])) == moving


@pytest.mark.mujoco
def test_replay_check_refuses_a_state_that_leaves_a_scene_body_unposed(mesh_scene: tuple[Any, Any]) -> None:
    """check_state accepts the scene's own state and refuses one missing a free body's pose."""
    from fastsim_embedded.render.mujoco import MujocoRenderSource

    source = MujocoRenderSource(*mesh_scene)
    state = dict(source.render_state())
    source.check_state(state)
    del state["rigid/puck/pose"]
    with pytest.raises(ValueError, match="no 'rigid/puck/pose' \\(scene rigid body 'puck'\\)"):
        source.check_state(state)
