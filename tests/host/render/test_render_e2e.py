"""Whole Runs on the embedded host: render.state, geometry and fluid.emissions in the FSR."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fastsim_embedded.backends.synthetic import SyntheticBackend
from fastsim_embedded.host.bus import CaptureBus
from fastsim_embedded.host.core import EmbeddedHost
from fastsim_embedded.render import capture as render_capture
from fastsim_embedded.render.synthetic import SyntheticGeometry, SyntheticRenderSource
from fastsim_embedded.session.compile import prepare_run
from fastsim_embedded.session.session import run_session
from fastsim_record import sources
from fastsim_record.adapters import fluid, geometry
from fastsim_recording_format import FsrReader, validate
from fastsim_recording_format.codecs.fluid import decode_fluid_batch
from fastsim_recording_format.codecs.geometry import decode_assets, decode_transforms, record_kind
from fastsim_recording_format.codecs.render_state import decode_render_state

_BASE_STREAMS = {"lifecycle", "events", "control.audit", "control.result"}


def _run_file(tmp_path: Path, streams: str, scene_extra: str = "") -> Path:
    path = tmp_path / "run.yaml"
    path.write_text(
        f"""schema: fastsim/2
name: render-e2e
backend: synthetic
scenario:
  scene:
    robots:
      robot:
        use: robot://example/robot
{scene_extra}
plugins:
  record:
    use: plugin://fastsim/record
    config:
      output: {{name: out.fsr}}
      streams:
        observations: {{mode: none, include: {{}}}}
{streams}
""",
        encoding="utf-8",
    )
    return path


class Counter:
    """Counts subscriptions per source and render-side reads during one Run."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.subscriptions: list[str] = []
        self.state_reads = 0
        self.geometry_reads = 0
        self.builds: list[object] = []
        self.render_source_calls = 0
        self.after_steps = 0
        self.hosts: list[EmbeddedHost] = []
        original_subscribe = CaptureBus.subscribe
        original_state = SyntheticRenderSource.render_state
        original_catalog = SyntheticGeometry.catalog
        original_build = render_capture.RenderCapture.build.__func__  # type: ignore[attr-defined]
        original_source = SyntheticBackend.render_source
        original_after = render_capture.RenderCapture.after_step
        counter = self

        def subscribe(bus: CaptureBus, stream: str, sink: Any, **kw: Any) -> Any:
            counter.subscriptions.append(stream)
            return original_subscribe(bus, stream, sink, **kw)

        def state(source: SyntheticRenderSource) -> Any:
            counter.state_reads += 1
            return original_state(source)

        def catalog(service: SyntheticGeometry, kind: str) -> Any:
            counter.geometry_reads += 1
            return original_catalog(service, kind)

        def build(cls: Any, host: Any, backend: Any) -> Any:
            built = original_build(cls, host, backend)
            counter.builds.append(built)
            return built

        def render_source(backend: SyntheticBackend) -> Any:
            counter.render_source_calls += 1
            return original_source(backend)

        def after_step(capture: Any, dt_s: float) -> None:
            counter.after_steps += 1
            original_after(capture, dt_s)

        monkeypatch.setattr(SyntheticBackend, "render_source", render_source)
        monkeypatch.setattr(render_capture.RenderCapture, "after_step", after_step)
        monkeypatch.setattr(CaptureBus, "subscribe", subscribe)
        monkeypatch.setattr(SyntheticRenderSource, "render_state", state)
        monkeypatch.setattr(SyntheticGeometry, "catalog", catalog)
        monkeypatch.setattr(render_capture.RenderCapture, "build", classmethod(build))


def _record(
    tmp_path: Path, streams: str, scene_extra: str = "", duration: float = 1.0,
    counter: Counter | None = None,
) -> FsrReader:
    prepared = prepare_run(_run_file(tmp_path, streams, scene_extra), duration_s=duration)
    on_host = None if counter is None else counter.hosts.append
    result = run_session(prepared, tmp_path / "out", on_host=on_host)
    assert result.outcome.ok, result.outcome.reason
    return FsrReader(tmp_path / "out" / "out.fsr")


def test_disabled_render_state_has_no_subscription_and_no_capture(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Run without render_state/geometry has no render participant (subscription, grant) and no per-tick render work."""
    counter = Counter(monkeypatch)
    reader = _record(tmp_path, "", counter=counter)
    assert "render.state" not in counter.subscriptions
    assert "geometry" not in counter.subscriptions
    assert not {g for _, g in counter.hosts[0].grants} & {"render.state", "scene.geometry@2"}
    assert counter.state_reads == 0
    assert counter.geometry_reads == 0
    assert counter.builds == [None]
    assert counter.after_steps == 0
    assert counter.render_source_calls <= 3  # compile, boot and build look once each: never per tick
    assert {s.name for s in reader.streams} == _BASE_STREAMS


def test_render_state_run_records_the_required_stream_at_rate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """render_state at 30 Hz over 1 s of 120 Hz: one subscription, 31 reads, 31 decodable records."""
    counter = Counter(monkeypatch)
    reader = _record(tmp_path, "        render_state: {enabled: true, rate_hz: 30}", counter=counter)
    assert counter.subscriptions.count("render.state") == 1
    assert ("record", "render.state") in counter.hosts[0].grants
    assert counter.after_steps == 120
    assert counter.state_reads == 31  # the 30 Hz gate decides before any read or sequence
    stream = reader.stream("render.state")
    assert stream.attributes["required"] is True
    assert stream.codec["zlib_level"] == 1
    records = list(reader.records("render.state"))
    assert len(records) == 31
    state = decode_render_state(records[-1].payload)
    assert state.get("articulation", "robot", "joint_position") is not None
    fence = reader.footer["terminal_fence"]
    assert fence["sources"]["render.state"] == 31
    assert validate(tmp_path / "out" / "out.fsr").profile == "structural"


def test_geometry_run_stores_assets_once_and_moving_transforms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """geometry at 10 Hz: one assets record (mesh stored once), then dynamic transforms only."""
    counter = Counter(monkeypatch)
    reader = _record(tmp_path, "        geometry: {enabled: true, rate_hz: 10}")
    assert counter.geometry_reads == 1
    records = list(reader.records("geometry"))
    assert record_kind(records[0].payload) == "assets"
    assets = decode_assets(records[0].payload)
    assert len(assets.blobs) == 1
    assert "material" not in str(assets.manifest)
    assert all(record_kind(r.payload) == "transforms" for r in records[1:])
    assert set(decode_transforms(records[1].payload)) == {"robot"}
    assert len(records) == 11


def test_fluid_run_adds_only_the_fluid_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a scene emitter the FSR gains fluid.emissions (schema JSON); no render state is read."""
    counter = Counter(monkeypatch)
    fluid = "    fluid: {name: water, rate_per_tick: 4, capacity: 100}"
    reader = _record(tmp_path, "", fluid, duration=0.5)
    assert counter.state_reads == 0
    assert "render.state" not in counter.subscriptions
    assert {s.name for s in reader.streams} == _BASE_STREAMS | {"fluid.emissions"}
    documents = [decode_fluid_batch(r.payload) for r in reader.records("fluid.emissions")]
    assert len(documents) == 60
    assert sum(d["accepted"] for d in documents) == 100
    assert documents[-1]["rejected"] == 4


def test_render_state_carries_fluid_positions(tmp_path: Path) -> None:
    """render.state of a fluid scene holds the particles as packed float32 XYZ."""
    fluid = "    fluid: {name: water, rate_per_tick: 2, capacity: 1000}"
    reader = _record(tmp_path, "        render_state: {enabled: true, rate_hz: 30}", fluid, 0.5)
    last = decode_render_state(list(reader.records("render.state"))[-1].payload)
    positions = last.get("fluid", "water", "positions")
    assert positions is not None
    assert positions.dtype.str == "<f4"
    assert positions.shape == (120, 3)


def test_render_side_encoding_runs_only_in_the_writer_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """zlib and JSON encoding of render.state, geometry and fluid.emissions run off the simulation thread; capture publishes raw float arrays."""
    calls: dict[str, list[str]] = {"render.state": [], "geometry": [], "fluid.emissions": []}
    for name, cls in (
        ("render.state", sources.RenderStateEncoder),
        ("geometry", geometry.GeometryEncoder),
        ("fluid.emissions", fluid.FluidEmissionEncoder),
    ):
        def encode(self: Any, payload: object, _name: str = name, _orig: Any = cls.encode) -> bytes:
            calls[_name].append(threading.current_thread().name)
            result: bytes = _orig(self, payload)
            return result

        monkeypatch.setattr(cls, "encode", encode)
    published: list[object] = []

    def on_host(host: EmbeddedHost) -> None:
        host.bus.subscribe("render.state", lambda e: published.append(e.payload))

    fluid_scene = "    fluid: {name: water, rate_per_tick: 2, capacity: 50}"
    streams = "        render_state: {enabled: true, rate_hz: 30}\n        geometry: {enabled: true, rate_hz: 10}"
    prepared = prepare_run(_run_file(tmp_path, streams, fluid_scene), duration_s=0.5)
    result = run_session(prepared, tmp_path / "out", on_host=on_host)
    assert result.outcome.ok, result.outcome.reason
    simulation = threading.current_thread().name
    for name, threads in calls.items():
        assert threads, name
        assert simulation not in threads, name
    assert published
    for payload in published:
        assert isinstance(payload, Mapping)
        assert all(isinstance(v, np.ndarray) and v.dtype.kind == "f" for v in payload.values())
    joints = [p["articulation/robot/joint_position"] for p in published]  # type: ignore[index]
    assert all(j.dtype == np.float64 for j in joints)
