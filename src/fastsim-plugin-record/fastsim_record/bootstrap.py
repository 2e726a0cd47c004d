"""The composition root: the one place that builds concrete adapters and wires the pipeline.

``RecordPlugin.prepare`` (``pipeline/plugin.py``) calls :func:`wire`, which returns one
frozen :class:`~fastsim_record.pipeline.wiring.Wiring` holding everything it built (the
plugin keeps it as ``plugin.wiring`` and holds it through ports).  Each selected source's lane, contract
kinds, barriers, stream kind, encoder and grant come from its row of the source registry
(``fastsim_record.sources.SOURCES``).  Wiring, in this order so that a fault at any step
is undone (``Wiring.undo`` on the part built so far):

    | # | step                                                                      |
    |---|---------------------------------------------------------------------------|
    | 1 | select sources from the config and the scene's declared channels          |
    | 2 | lanes: one per lane some selected source feeds (critical always; numeric  |
    |   | only with a numeric-lane source; media only with a camera source)         |
    | 3 | payload encoders and stream declarations (worker-side only)               |
    | 4 | the FSR sink opens the opaque write lease                                 |
    | 5 | the writer worker starts (it alone owns the lease from here)             |
    | 6 | the required finalizer is registered                                      |
    | 7 | each selected source's grant is requested once (observation only with     |
    |   | selected numeric channels)                                                |
    | 8 | one pump per selected source subscribes (history from sequence 1;         |
    |   | control before its producers start)                                      |
"""

from __future__ import annotations

import functools
import threading

import attrs

from fastsim_contract.protocols import FinalizerRegistration, PluginContext, RunContext
from fastsim_contract.run_errors import RunIssue
from fastsim_record import __version__
from fastsim_record.adapters.core_binding import CoreBinding, EnvelopeConverter
from fastsim_record.adapters.fsr_sink import FsrSink
from fastsim_record.camera_wiring import select_cameras
from fastsim_record.config.model import RecordConfig
from fastsim_record.core.batching import BatchLimits
from fastsim_record.core.captured import LaneName
from fastsim_record.core.lane import Lane, LaneSpec, OverloadPolicy
from fastsim_record.errors import ConfigError
from fastsim_record.pipeline.camera_pump import CameraPump
from fastsim_record.pipeline.camera_stage import CameraSelection
from fastsim_record.pipeline.finalizer import RecordFinalizer
from fastsim_record.pipeline.monitor import Monitor
from fastsim_record.pipeline.plugin import RecordPlugin
from fastsim_record.pipeline.pumps import LaneHandle, PressureGauge, Pump
from fastsim_record.pipeline.render_streams import render_kinds, replay_identity
from fastsim_record.pipeline.wiring import Wiring, cancel_all
from fastsim_record.pipeline.worker import WriterWorker
from fastsim_record.ports.sinks import PayloadEncoder, StreamDecl
from fastsim_record.ports.sources import Closeable, Selection, SourceSpec
from fastsim_record.sources import SOURCES, StreamContext
from fastsim_recording_format.encoding import canonical_json

__all__ = ["Wiring", "barrier_json", "create_plugin", "select_sources", "wire"]

_SWITCHED = ("lifecycle", "events", "control.audit", "control.result")


def _spec(kind: str, required: bool = True, channels: tuple[str, ...] = ()) -> SourceSpec:
    return SourceSpec(kind, kind, SOURCES[kind].lane, required, channels)


def select_sources(config: RecordConfig, run: RunContext) -> Selection:
    """Step 1: the selected sources (only these get pumps) and numeric channels."""
    streams = config.streams
    switches = (streams.lifecycle, streams.events, streams.control, streams.control)
    specs = [_spec(kind) for kind, on in zip(_SWITCHED, switches, strict=True) if on]
    declared = {c.name: c for c in run.channels}
    scene_numeric = [c.name for c in run.channels if c.kind == "numeric"]
    selected = config.selected_numeric_channels(scene_numeric)
    missing = [n for n in selected if n not in declared]
    if missing:
        raise ConfigError([RunIssue(
            "plugins.record.config.streams.observations.include",
            f"channel {missing[0]!r} is not declared by the scene",
        )])
    plan_channels = tuple(run.capture.observation_channels)
    if plan_channels and set(plan_channels) == set(selected):
        selected = plan_channels  # Core's delivery order
    numeric = tuple(declared[n] for n in selected)
    if numeric:
        obs = streams.observations
        required = obs.mode != "explicit" or any(c.required for c in obs.include.values())
        specs.append(_spec("observations", required, tuple(c.name for c in numeric)))
    specs.extend(_spec(kind) for kind in render_kinds(config, run))
    return Selection(tuple(specs), numeric)


def barrier_json(payload: object) -> bytes:
    """A generation barrier's record payload: its fields as canonical JSON."""
    data = attrs.asdict(payload) if attrs.has(type(payload)) else {"barrier": str(payload)}  # type: ignore[arg-type]
    return canonical_json(data)


def wire(plugin: RecordPlugin) -> Wiring:
    """Steps 1-8 (module table): the :class:`Wiring` that holds what they built.

    On a fault at any step, what was built so far is undone (``Wiring.undo``) and the
    fault propagates."""
    core = plugin.context.core
    binding = CoreBinding(core, plugin.component)
    monitor = Monitor(binding.completion_requester())
    lanes: dict[LaneName, LaneHandle] = {}
    encoders: dict[str, PayloadEncoder] = {}
    pumps: list[Pump] = []
    selection: Selection | None = None
    cameras: CameraSelection | None = None
    sink: FsrSink | None = None
    worker: WriterWorker | None = None
    flow: Closeable | None = None
    finalizer: RecordFinalizer | None = None
    registration: FinalizerRegistration | None = None

    def built() -> Wiring:
        return Wiring(
            monitor=monitor, selection=selection, cameras=cameras, lanes=lanes, encoders=encoders,
            sink=sink, worker=worker, flow=flow, finalizer=finalizer, registration=registration,
            pumps=tuple(pumps),
        )

    try:
        config, run = plugin.config, core.run
        selection = select_sources(config, run)
        cameras = select_cameras(config, run)
        if cameras is not None:  # the media lane exists only with a camera source
            selection = attrs.evolve(selection, sources=(*selection.sources, cameras.spec))
        sources = selection.sources
        wake = threading.Event()  # one wake-up for the worker, set by any pump
        gauge = PressureGauge()  # one backpressure signal for an unpaced host
        lanes.update(_lanes(config, sources, wake, gauge))
        decls, record_bytes = _streams(StreamContext(config, run, selection.numeric), sources, cameras, encoders)
        sink = _sink(plugin, decls)
        batching = config.batching
        worker = WriterWorker(
            lanes=lanes, wake=wake, encoders=encoders, barrier_encoder=barrier_json, sink=sink,
            limits=BatchLimits.from_config(batching.max_items, batching.max_bytes, batching.max_sim_duration_s),
            monitor=monitor, camera_stage=cameras.stage if cameras is not None else None, gauge=gauge,
        )
        worker.start()
        flow = binding.register_flow_gauge(gauge)
        # the cut names camera sources per channel (cameras.<alias>.<role>)
        consumed = [
            key for s in sources
            for key in (cameras.channel_keys if s.kind == "cameras" and cameras else (s.name,))
        ]
        finalizer = RecordFinalizer(
            component=plugin.component, sources=consumed, worker=worker, monitor=monitor,
            cancel_pumps=functools.partial(cancel_all, pumps),
        )
        registration = binding.register_finalizer(config.finalize.requested_timeout_s, consumed, finalizer)
        for grant in dict.fromkeys(SOURCES[s.kind].grant for s in sources):
            if grant is not None:
                binding.request_grant(grant)
        for spec in sources:
            pump = _pump(spec, lanes[spec.lane], monitor, cameras, record_bytes)
            pumps.append(pump)
            pump.subscription = binding.subscribe(spec, pump)
    except BaseException:
        built().undo()
        raise
    return built()


def _lanes(
    config: RecordConfig, sources: tuple[SourceSpec, ...], wake: threading.Event, gauge: PressureGauge
) -> dict[LaneName, LaneHandle]:
    """Step 2: one lane per lane some selected source feeds."""
    lanes: dict[LaneName, LaneHandle] = {}
    for lane_name in dict.fromkeys(s.lane for s in sources):
        q = getattr(config.queues, lane_name)
        lane = Lane(
            LaneSpec(name=lane_name, max_items=q.max_items, max_bytes=q.max_bytes,
                     overload=OverloadPolicy(q.overload)),
            [s.required for s in sources if s.lane is lane_name],
        )
        lanes[lane_name] = LaneHandle(lane, wake, gauge=gauge)
    return lanes


def _streams(
    context: StreamContext, sources: tuple[SourceSpec, ...], cameras: CameraSelection | None,
    encoders: dict[str, PayloadEncoder],
) -> tuple[list[StreamDecl], dict[str, int | None]]:
    """Step 3: each source's encoder (into ``encoders``), stream declarations, record sizes."""
    decls: list[StreamDecl] = []
    record_bytes: dict[str, int | None] = {}
    for spec in sources:
        factory = SOURCES[spec.kind].encoder
        if factory is None:  # cameras: the camera stage declares and encodes their streams
            if cameras is not None:
                decls.extend(cameras.stage.streams())
            continue
        built = factory(spec, context)
        encoders[spec.name] = built.encoder
        record_bytes[spec.name] = built.record_bytes
        decls.append(StreamDecl(
            spec.name, SOURCES[spec.kind].stream_kind, built.encoder.codec, built.attributes, spec.required
        ))
    return decls, record_bytes


def _sink(plugin: RecordPlugin, decls: list[StreamDecl]) -> FsrSink:
    """Step 4: the FSR sink, which opens the write lease (after the integrity check)."""
    config, core = plugin.config, plugin.context.core
    run = core.run
    policy = run.output_policy
    if config.integrity != "structural" and policy.integrity != "sha256":
        raise ConfigError([RunIssue(
            "plugins.record.config.integrity",
            f"{config.integrity} requires the Run output policy integrity 'sha256' "
            f"(got {policy.integrity!r})",
        )])
    mode, source_sha256, fence_extra = replay_identity(run)
    return FsrSink(
        core.outputs, config.output.name, run_id=run.run_id, completion_id=run.completion_id,
        streams=decls, integrity=config.integrity, policy_integrity=policy.integrity,
        producer={"name": "fastsim-plugin-record", "version": __version__, "component": plugin.component},
        mode=mode, source_sha256=source_sha256, fence_extra=fence_extra,
        payload_crc=bool(getattr(policy, "payload_crc", False)),  # runtime.output.payload_crc
        run_attributes={  # a host may describe the Run (``metadata``: name, backend, seed, scene)
            **dict(getattr(run, "metadata", None) or {}), "record_config": config.to_mapping(),
        },
    )


def _pump(
    spec: SourceSpec, handle: LaneHandle, monitor: Monitor, cameras: CameraSelection | None,
    record_bytes: dict[str, int | None],
) -> Pump:
    """Step 8: the pump of one selected source (not yet subscribed)."""
    row = SOURCES[spec.kind]
    if row.encoder is None and cameras is not None:
        return CameraPump(cameras.aliases, handle, monitor)
    convert = EnvelopeConverter(
        spec.name, spec.name, spec.lane, spec.required, row.contract_kinds, record_bytes[spec.name]
    )
    return Pump(spec.name, convert, handle, monitor, carries_barriers=row.carries_barriers)


def create_plugin(context: PluginContext) -> RecordPlugin:
    """The ``fastsim.plugins`` / ``fastsim.record`` entry point: a plugin that :func:`wire` builds."""
    return RecordPlugin(context, wire)
