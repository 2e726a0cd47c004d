"""``create_plugin(context)``: the one composition root of the Record plugin.

Wiring (``prepare``), in this order so that a fault at any step is undone:

    | # | step                                                                      |
    |---|---------------------------------------------------------------------------|
    | 1 | select sources from the config and the scene's declared channels          |
    | 2 | lanes: critical always; numeric only with a numeric source; media only    |
    |   | with a camera source                                                      |
    | 3 | payload encoders and stream declarations (worker-side only)               |
    | 4 | the FSR sink opens the opaque write lease                                 |
    | 5 | the writer worker starts (it alone owns the lease from here)             |
    | 6 | the required finalizer is registered                                      |
    | 7 | the Observation grant is requested only with selected numeric channels    |
    | 8 | one pump per selected source subscribes (history from sequence 1;         |
    |   | control before its producers start)                                      |

Lifecycle:

    | # | call     | effect                                                             |
    |---|----------|--------------------------------------------------------------------|
    | 1 | prepare  | steps 1-8; on any fault everything done so far is undone (pumps    |
    |   |          | cancelled, finalizer unregistered, worker stopped, lease aborted)  |
    |   |          | and one ``RecordError`` line is raised                             |
    | 2 | start    | arm the monitor                                                    |
    | 3 | stop     | disarm the monitor (idempotent); capture continues to the cut      |
    | 4 | close    | cancel pumps, stop the worker; abort the output unless it was      |
    |   |          | committed or the host cancelled at the deadline (idempotent)       |
"""

from __future__ import annotations

import contextlib
import json
import threading

import attrs

from fastsim_contract.protocols import FinalizerRegistration, PluginContext, RunContext
from fastsim_contract.values import ChannelDescriptor
from fastsim_record import COMPONENT_ID, __version__
from fastsim_record.adapters.core_binding import (
    CoreBinding,
    EnvelopeConverter,
    materialize,
    translate,
)
from fastsim_record.adapters.fsr_sink import FsrSink
from fastsim_record.adapters.payloads import JsonEncoder, NumericTickEncoder
from fastsim_record.config.model import GRANT_CAMERA, GRANT_OBSERVATION, RecordConfig
from fastsim_record.core.batching import BatchLimits
from fastsim_record.core.envelope import LaneName
from fastsim_record.core.errors import CoreError
from fastsim_record.core.lane import Lane, LaneSpec, OverloadPolicy
from fastsim_record.errors import ConfigError, ConfigIssue, ContractError, RecordError
from fastsim_record.pipeline.camera_pump import CameraPump
from fastsim_record.pipeline.camera_wiring import CameraSelection, select_cameras
from fastsim_record.pipeline.finalizer import RecordFinalizer
from fastsim_record.pipeline.monitor import Monitor
from fastsim_record.pipeline.pumps import PUMP_KINDS, LaneHandle, PressureGauge, Pump
from fastsim_record.pipeline.render_streams import (
    RENDER_KINDS,
    render_grants,
    render_specs,
    render_stream,
    replay_identity,
)
from fastsim_record.pipeline.worker import WriterWorker
from fastsim_record.ports.sinks import PayloadEncoder, StreamDecl
from fastsim_record.ports.sources import SOURCE_LANES, Closeable, SourceSpec

__all__ = ["RecordPlugin", "Selection", "create_plugin", "select_sources"]

_CRITICAL = ("lifecycle", "events", "control.audit", "control.result")
_STREAM_KINDS = {
    "lifecycle": "lifecycle", "events": "events", "control.audit": "control",
    "control.result": "control", "observations": "observations",
}


@attrs.frozen
class Selection:
    """What a config selects in one scene."""

    sources: tuple[SourceSpec, ...]
    numeric: tuple[ChannelDescriptor, ...]


def select_sources(config: RecordConfig, run: RunContext) -> Selection:
    """Step 1: the selected sources (only these get pumps) and numeric channels."""
    streams = config.streams
    specs: list[SourceSpec] = []
    for name, on in (
        ("lifecycle", streams.lifecycle), ("events", streams.events),
        ("control.audit", streams.control), ("control.result", streams.control),
    ):
        if on:
            specs.append(SourceSpec(name, name, SOURCE_LANES[name]))
    declared = {c.name: c for c in run.channels}
    scene_numeric = [c.name for c in run.channels if c.kind == "numeric"]
    selected = config.selected_numeric_channels(scene_numeric)
    missing = [n for n in selected if n not in declared]
    if missing:
        raise ConfigError([ConfigIssue(
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
        specs.append(SourceSpec(
            "observations", "observations", SOURCE_LANES["observations"], required,
            tuple(c.name for c in numeric),
        ))
    specs.extend(render_specs(config, run))  # render.state, geometry, fluid.emissions
    return Selection(tuple(specs), numeric)


def _barrier_json(payload: object) -> bytes:
    data = attrs.asdict(payload) if attrs.has(type(payload)) else {"barrier": str(payload)}  # type: ignore[arg-type]
    return json.dumps(data, sort_keys=True, separators=(",", ":")).encode()


def create_plugin(context: PluginContext) -> RecordPlugin:
    """The ``fastsim.plugins`` / ``record`` entry point."""
    return RecordPlugin(context)


class RecordPlugin:
    """One Record instance in one Run."""

    def __init__(self, context: PluginContext) -> None:
        config = context.config
        if not isinstance(config, RecordConfig):
            raise ConfigError([ConfigIssue(
                "plugins.record.config",
                f"expected the compiled RecordConfig, got {type(config).__name__}",
            )])
        self.context = context
        self.config = config
        self.component = context.component_id or COMPONENT_ID
        self.selection: Selection | None = None
        self.lanes: dict[str, LaneHandle] = {}
        self.pumps: list[Pump] = []
        self.monitor = Monitor(lambda _reason: False)
        self.worker: WriterWorker | None = None
        self.sink: FsrSink | None = None
        self.finalizer: RecordFinalizer | None = None
        self.registration: FinalizerRegistration | None = None
        self.flow: Closeable | None = None  # the gauge's registration (None: an older Core)
        self.encoders: dict[str, PayloadEncoder] = {}
        self.cameras: CameraSelection | None = None  # issue 6: the media lane's cameras
        self._state = "new"  # new | prepared | started | stopped | closed

    # -- lifecycle ---------------------------------------------------------------------
    def prepare(self) -> None:
        """Steps 1-8 (row 1)."""
        if self._state != "new":
            raise ContractError(f"prepare called on a {self._state} Record plugin")
        try:
            self._prepare()
        except BaseException as exc:
            self._cleanup()
            self._state = "closed"
            if isinstance(exc, RecordError):
                raise
            if isinstance(exc, CoreError):
                raise ConfigError([ConfigIssue("plugins.record.config", exc.reason)]) from exc
            raise translate(exc, "prepare") from exc
        self._state = "prepared"

    def _prepare(self) -> None:
        core = self.context.core
        run = core.run
        config = self.config
        binding = CoreBinding(core, self.component)
        self.monitor = Monitor(binding.completion_requester())
        selection = self.selection = select_sources(config, run)
        cameras = self.cameras = select_cameras(config, run)
        if cameras is not None:  # the media lane exists only with a camera source
            selection = self.selection = attrs.evolve(
                selection, sources=(*selection.sources, cameras.spec)
            )
        wake = threading.Event()  # one wake-up for the worker, set by any pump
        gauge = PressureGauge()  # one backpressure signal for an unpaced host
        queues = config.queues
        by_lane: dict[str, list[SourceSpec]] = {}
        for spec in selection.sources:
            by_lane.setdefault(spec.lane, []).append(spec)
        for lane_name, specs in by_lane.items():
            q = getattr(queues, lane_name)
            lane = Lane(
                LaneSpec(name=LaneName(lane_name), max_items=q.max_items, max_bytes=q.max_bytes,
                         overload=OverloadPolicy(q.overload)),
                [s.required for s in specs],
                materialize=materialize,
            )
            self.lanes[lane_name] = LaneHandle(lane, wake, gauge=gauge)
        decls: list[StreamDecl] = []
        tick_encoder: NumericTickEncoder | None = None
        for spec in selection.sources:
            if spec.kind == "cameras" and cameras is not None:
                decls.extend(cameras.stage.streams())
            elif spec.kind == "observations":
                tick_encoder = NumericTickEncoder(spec.name, selection.numeric)
                self.encoders[spec.name] = tick_encoder
                decls.append(StreamDecl(
                    spec.name, "observations", tick_encoder.codec,
                    {**tick_encoder.attributes, "sensor_hz": run.sensor_hz,
                     "rate_policy": run.rate_policy, "atomic_tick": True,
                     # per-element names of each channel, in the channels' order (issue 13)
                     "element_names": {c.name: list(c.attributes.get("element_names") or [])  # type: ignore[call-overload]
                                       for c in selection.numeric}},
                    spec.required,
                ))
            elif spec.kind in RENDER_KINDS:
                self.encoders[spec.name], decl = render_stream(spec, config)
                decls.append(decl)
            else:
                encoder = JsonEncoder(spec.name)
                self.encoders[spec.name] = encoder
                decls.append(StreamDecl(spec.name, _STREAM_KINDS[spec.kind], encoder.codec, {}, spec.required))
        policy = run.output_policy
        if config.integrity != "structural" and policy.integrity != "sha256":
            raise ConfigError([ConfigIssue(
                "plugins.record.config.integrity",
                f"{config.integrity} requires the Run output policy integrity 'sha256' "
                f"(got {policy.integrity!r})",
            )])
        mode, source_sha256, fence_extra = replay_identity(run)
        self.sink = FsrSink(
            core.outputs, config.output.name, run_id=run.run_id, completion_id=run.completion_id,
            streams=decls, integrity=config.integrity, policy_integrity=policy.integrity,
            producer={"name": "fastsim-plugin-record", "version": __version__,
                      "component": self.component},
            mode=mode, source_sha256=source_sha256, fence_extra=fence_extra,
            run_attributes={  # a host may describe the Run (``metadata``: name, backend, seed, scene)
                **dict(getattr(run, "metadata", None) or {}), "record_config": config.to_mapping(),
            },
        )
        batching = config.batching
        self.worker = WriterWorker(
            lanes=self.lanes, wake=wake, encoders=self.encoders,
            barrier_encoder=_barrier_json, sink=self.sink,
            limits=BatchLimits.from_config(batching.max_items, batching.max_bytes,
                                           batching.max_sim_duration_s),
            monitor=self.monitor,
            camera_stage=cameras.stage if cameras is not None else None,
            gauge=gauge,
        )
        self.worker.start()
        self.flow = binding.register_flow_gauge(gauge)
        # the cut names camera sources per channel (cameras.<alias>.<role>)
        consumed = [
            key
            for s in selection.sources
            for key in (cameras.channel_keys if s.kind == "cameras" and cameras else (s.name,))
        ]
        self.finalizer = RecordFinalizer(
            component=self.component, sources=consumed,
            worker=self.worker, monitor=self.monitor, cancel_pumps=self._cancel_pumps,
        )
        self.registration = binding.register_finalizer(
            config.finalize.requested_timeout_s, consumed, self.finalizer
        )
        if selection.numeric:
            binding.request_grant(GRANT_OBSERVATION)
        for grant in render_grants(selection.sources):
            binding.request_grant(grant)
        if cameras is not None:
            binding.request_grant(GRANT_CAMERA)
        for spec in selection.sources:
            if spec.kind == "cameras" and cameras is not None:
                camera_pump = CameraPump(cameras.aliases, self.lanes[spec.lane], self.monitor)
                self.pumps.append(camera_pump)
                camera_pump.subscription = binding.subscribe(spec, camera_pump)
                continue
            kinds, barriers = PUMP_KINDS[spec.kind]
            convert = EnvelopeConverter(
                spec.name, spec.name, LaneName(spec.lane), spec.required, kinds,
                tick_encoder.record_bytes if spec.kind == "observations" and tick_encoder else None,
            )
            pump = Pump(spec.name, convert, self.lanes[spec.lane], self.monitor,
                        carries_barriers=barriers)
            self.pumps.append(pump)
            pump.subscription = binding.subscribe(spec, pump)

    def start(self) -> None:
        """Row 2: arm the monitor."""
        if self._state != "prepared":
            raise ContractError(f"start called on a {self._state} Record plugin")
        self._state = "started"
        self.monitor.arm()

    def stop(self) -> None:
        """Row 3 (idempotent)."""
        if self._state in ("started", "prepared"):
            self._state = "stopped"
        self.monitor.disarm()

    def close(self) -> None:
        """Row 4 (idempotent)."""
        if self._state == "closed":
            return
        self._state = "closed"
        self._cleanup()

    # -- helpers -----------------------------------------------------------------------
    def _cancel_pumps(self) -> None:
        for pump in self.pumps:
            pump.cancel()

    def _cleanup(self) -> None:
        self.monitor.disarm()
        self._cancel_pumps()
        flow, self.flow = self.flow, None
        if flow is not None:
            with contextlib.suppress(Exception):  # Core drops gauges at the cut anyway
                flow.close()
        finalizer = self.finalizer
        host_cancelled = finalizer is not None and finalizer.cancelled
        committed = finalizer is not None and finalizer.committed
        registration = self.registration
        self.registration = None
        if registration is not None and (finalizer is None or finalizer.result is None):
            with contextlib.suppress(Exception):  # after the cut Core refuses; nothing to undo
                registration.unregister()
        worker = self.worker
        if worker is not None:
            if host_cancelled:
                worker.cancel()
            else:
                worker.stop()
                worker.join(2.0)
        if self.sink is not None and not committed and not host_cancelled:
            try:
                self.sink.abort()
            except RecordError as exc:
                self.monitor.latch(exc)

    @property
    def state(self) -> str:
        """new | prepared | started | stopped | closed."""
        return self._state
