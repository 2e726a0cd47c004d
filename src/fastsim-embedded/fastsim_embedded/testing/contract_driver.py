"""The embedded host as a contract-suite ``CoreDriver`` (``contracts/implementations.py``).

Observation ticks go the scripted driver's way: at the first tick the driver binds its
observation path, as ``loop.TickStepper`` does at its first step.  When the Run declares
the planned channels and every ``observations`` subscriber opted in to blocks
(``max_block > 1``), the ticks are packed and stamped as rows of observation blocks (the
host's bound ``SCRIPTED_MAX_BLOCK``, BK1-BK8); otherwise each tick's values are published
as they are (``publish_observation``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from types import MappingProxyType
from typing import Any

import attrs
import numpy as np

from fastsim_contract.harness import FinalizerReport, Finish, HarnessSpec, Profile
from fastsim_contract.values import CompletionRequest, Envelope, SourceKind
from fastsim_embedded.backends.base import CameraReading, ControlCommand, ControlOutcome
from fastsim_embedded.host.core import EmbeddedHost
from fastsim_embedded.host.services import EmbeddedCore
from fastsim_embedded.session.loop import SCRIPTED_MAX_BLOCK

__all__ = ["EmbeddedDriver", "make_driver"]


@attrs.define(eq=False)
class EmbeddedDriver:
    """Drives one :class:`EmbeddedHost` Run for the contract suite."""

    host: EmbeddedHost
    output_dir: Path
    _tick: int = attrs.field(init=False, default=0)
    _observe: Callable[[Mapping[str, object]], object] | None = attrs.field(init=False, default=None)

    def core(self, component: str) -> EmbeddedCore:
        """The component's Core services."""
        return self.host.core_for(component)

    def publish_lifecycle(self, event: str, **data: object) -> Envelope | None:
        """A lifecycle event."""
        return self.host.events.publish_lifecycle(event, **data)

    def publish_plugin_event(self, name: str, data: Mapping[str, object] | None = None) -> Envelope | None:
        """A plugin event."""
        return self.host.events.publish_plugin_event(name, data)

    def start_producers(self) -> None:
        """The prepare boundary: history closes, control producers start."""
        self.host.bus.close_history()
        self.host.control_producers_started()

    def issue_control(self, command_id: str) -> None:
        """Audit then result of one command."""
        command = ControlCommand(command_id, "noop", "robot")
        self.host.events.publish_control_issued(command)
        self.host.events.publish_control_applied(command, ControlOutcome(True))

    def tick(self, values: Mapping[str, object]) -> None:
        """One tick with these channel values."""
        self._tick += 1
        self.host.advance(self._tick, round(self._tick * 1e9 / self.host.context.sensor_hz))
        if self._observe is None:
            self._observe = self._bind_observations()
        self._observe(values)

    def _bind_observations(self) -> Callable[[Mapping[str, object]], object]:
        """Packed rows of observation blocks when the bus grants them, else per tick."""
        observations = self.host.observations
        names = self.host.context.capture.observation_channels
        declared = {c.name: c for c in self.host.context.channels if c.kind == "numeric"}
        if not names or any(name not in declared for name in names):
            return observations.publish_observation
        packing = [(name, np.dtype(declared[name].dtype).str, tuple(declared[name].shape)) for name in names]
        if not observations.bind_numeric_packing(packing):
            return observations.publish_observation
        staged: list[Any] = []
        observe = observations.packed_observer(staged.pop, SCRIPTED_MAX_BLOCK)
        if self.host.bus.block_size == 1:
            return observations.publish_observation

        def rows(values: Mapping[str, object]) -> object:
            raw = b"".join(np.ascontiguousarray(values[name]).tobytes() for name in names)  # the values' own bytes
            staged.append(np.frombuffer(raw, np.uint8))
            return observe()

        return rows

    def publish_camera(
        self, channel: str, value: object, calibration_digest: str, profile: Profile = None
    ) -> None:
        """One camera channel sample in the current tick."""
        for camera in self.host.context.capture.cameras:
            for role, name in camera.channels().items():
                if name == channel:
                    reading = CameraReading(camera.alias, channel, role, value, calibration_digest, profile)  # type: ignore[arg-type]
                    self.host.observations.publish_cameras([reading])
                    return
        raise KeyError(channel)

    def publish_render(self, source: str, payload: Mapping[str, object]) -> Envelope | None:
        """One render-side item (``render.state``, ``geometry``, ``fluid.emissions``), as
        ``RenderCapture`` publishes it: a read-only mapping in the current tick."""
        return self.host.events.publish_now(SourceKind(source), MappingProxyType(dict(payload)), portable_size=256)

    def reset(self) -> None:
        """A new generation."""
        self.host.events.begin_generation("reset")

    def end_tick(self, *, paced: bool = False) -> float:
        """What ``run_loop`` does at the end of a tick (rule 10): settle only unpaced."""
        if paced:
            return 0.0
        return self.host.flow.settle(self.host.terminal.completion_requested)

    def finish(self, completion: CompletionRequest | None = None) -> Finish:
        """Complete, cut, finalize."""
        if completion is not None:
            self.host.terminal.request_completion(completion)
        cut = self.host.take_cut()
        outcomes = self.host.finalize(cut)
        outcome = self.host.outcome(cut, outcomes)
        return Finish(
            cut=cut,
            status=outcome.status,
            reason=outcome.reason,
            finalizers=tuple(
                FinalizerReport(o.request.component, o.result.ok, o.result.reason, o.timed_out) for o in outcomes
            ),
        )

    def artifact(self, name: str) -> bytes | None:
        """The committed file's bytes."""
        path = self.output_dir / name
        return path.read_bytes() if path.is_file() else None

    def leftovers(self, name: str) -> Sequence[str]:
        """Every file (relative to the output dir) derived from ``name`` but not the final name."""
        if not self.output_dir.exists():
            return ()
        return tuple(
            str(p.relative_to(self.output_dir))
            for p in sorted(self.output_dir.rglob(f"{name}*"))
            if p.is_file() and p != self.output_dir / name
        )

    def close(self) -> None:
        """Core's cleanup of anything left open."""
        self.host.cleanup(0.0)


#: The ``HarnessSpec`` fields an ``EmbeddedHost`` takes as they are.
_FROM_SPEC = (
    "capture", "channels", "sensor_hz", "output_policy", "portable_sizes",
    "max_finalizer_timeout_s", "flow_stall_s",
)


def make_driver(spec: HarnessSpec, workdir: Path) -> EmbeddedDriver:
    """A fresh embedded host for one contract test."""
    output_dir = workdir / "out"
    carried = {name: getattr(spec, name) for name in _FROM_SPEC}
    host = EmbeddedHost.create(output_dir=output_dir, revoke_grace_s=2.0, **carried)
    host.context.services = spec.services
    return EmbeddedDriver(host, output_dir)
