"""Shared set-up for the Record benchmarks: an embedded-host Run with or without Record.

``RecordRun.build(record=True)`` compiles a synthetic Run (``channels`` numeric channels)
through the real catalog, builds the embedded host exactly as a session does, and --
when ``record`` -- discovers the Record plugin through its ``fastsim.plugins`` entry
point and prepares and starts it.  With ``record=False`` the Run selects no plugin, so
the capture plan is empty and no publish allocates a sequence (Record's cost is zero).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import attrs
import yaml

from fastsim_contract.protocols import Plugin, PluginContext
from fastsim_embedded.host.context import RunOutcome
from fastsim_embedded.host.core import EmbeddedHost
from fastsim_embedded.session.compile import PreparedRun, prepare_run
from fastsim_embedded.session.plugins import EmbeddedPluginContext, discover_plugin

RECORD = "plugin://fastsim/record"


def write_run(directory: Path, *, record: bool, channels: int, sensor_hz: float, **options: Any) -> Path:
    """A synthetic Run YAML."""
    document = {
        "schema": "fastsim/2",
        "name": "bench",
        "backend": "synthetic",
        "scenario": {"scene": {"robots": {"robot": {"use": "robot://example/robot"}},
                               "synthetic": {"numeric_channels": channels, **options}}},
        "runtime": {"sensor_hz": sensor_hz},
        "plugins": {"record": {"use": RECORD}} if record else {},
    }
    path = directory / ("record.yaml" if record else "plain.yaml")
    path.write_text(yaml.safe_dump(document))
    return path


@attrs.define(eq=False)
class RecordRun:
    """One host (and maybe one Record plugin) ready to publish."""

    prepared: PreparedRun
    host: EmbeddedHost
    plugin: Plugin | None
    workdir: tempfile.TemporaryDirectory[str]

    @classmethod
    def build(
        cls, *, record: bool, channels: int = 90, sensor_hz: float = 120.0,
        duration_s: float = 60.0, null_consumer: bool = False, **options: Any,
    ) -> RecordRun:
        """Compile, build the host, and prepare + start Record when ``record``.

        ``null_consumer`` keeps Record's capture plan but subscribes do-nothing sinks
        instead of Record: what Core's capture costs without Record's pumps.
        """
        workdir = tempfile.TemporaryDirectory(prefix="fsr-bench-")
        root = Path(workdir.name)
        run_file = write_run(root, record=record, channels=channels, sensor_hz=sensor_hz, **options)
        prepared = prepare_run(run_file, duration_s=duration_s)
        host = EmbeddedHost.create(
            capture=prepared.capture, channels=prepared.channels, output_dir=root / "out",
            sensor_hz=prepared.sensor_hz, physics_hz=prepared.physics_hz,
            rate_policy=prepared.rate_policy, output_policy=prepared.run.runtime.output,
        )
        prepared.backend.reset(0)
        host.events.publish_lifecycle("run.created", run_id=host.context.run_id)
        host.events.publish_lifecycle("generation.started", generation=0, previous=None, reason="start")
        plugin: Plugin | None = None
        if null_consumer:
            core = host.core_for("record")
            if prepared.capture.observation_channels:
                core.request_grant("observation")
            for source in sorted(prepared.capture.sources):
                core.subscribe(source, _ignore)
            return cls(prepared, host, None, workdir)
        for component in prepared.compiled.components:
            factory = discover_plugin(component.component_id)
            plugin = factory(EmbeddedPluginContext(
                component.component_id, component.config, host.core_for(component.alias), component.alias
            ))
            plugin.prepare()
            plugin.start()
        host.bus.close_history()
        host.control_producers_started()
        host.events.publish_lifecycle("run.started")
        return cls(prepared, host, plugin, workdir)

    def finish(self) -> tuple[RunOutcome, dict[str, Any]]:
        """Cut, finalize, tear down; the outcome and Record's summary (empty without Record)."""
        host = self.host
        cut = host.take_cut()
        outcomes = host.finalize(cut)
        if self.plugin is not None:
            self.plugin.stop()
            self.plugin.close()
        self.prepared.backend.close()
        summary: dict[str, Any] = dict(outcomes[0].result.summary) if outcomes else {}
        outcome = host.outcome(cut, outcomes)
        self.workdir.cleanup()
        return outcome, summary


def _ignore(_: object) -> None:
    return None


class NullConsumer:
    """Stands in for Record with the same capture plan: do-nothing sinks, so a Run pays
    Core's capture (cameras rendered, observations sampled) and none of Record's work."""

    def __init__(self, context: PluginContext) -> None:
        self.core = context.core

    def prepare(self) -> None:
        """Grant and subscribe like Record, without pumps, lanes or a worker."""
        plan = self.core.run.capture
        if plan.observation_channels:
            self.core.request_grant("observation")
        channels: tuple[str, ...] = ()
        if plan.cameras:
            self.core.request_grant("camera")
            channels = tuple(c for camera in plan.cameras for c in camera.channels().values())
        for source in sorted(plan.sources):
            self.core.subscribe(source, _ignore, channels=channels if source == "cameras" else ())

    def start(self) -> None:
        """Nothing to start."""

    def stop(self) -> None:
        """Nothing to stop."""

    def close(self) -> None:
        """Nothing to close."""


def null_factory(context: PluginContext) -> Plugin:
    """The ``fastsim.plugins`` factory of :class:`NullConsumer` (``run_session(factories=...)``)."""
    return NullConsumer(context)


def lane_losses(summary: dict[str, Any]) -> int:
    """Total lost envelopes over every lane of a finalizer summary."""
    lanes: dict[str, dict[str, int]] = summary.get("lanes", {})
    return sum(int(lane.get("lost", 0)) + int(lane.get("failures", 0)) for lane in lanes.values())
