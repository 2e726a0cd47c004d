"""The fake Core as a contract-suite ``CoreDriver`` (registered in ``contracts/implementations.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

import attrs

from fastsim_contract.harness import FinalizerReport, Finish, HarnessSpec, Profile
from fastsim_contract.values import CompletionRequest, Envelope
from fastsim_record.testing.fake_core import FakeCore, FakeServices

__all__ = ["FakeDriver", "make_driver"]


@attrs.define(eq=False)
class FakeDriver:
    """Drives one :class:`FakeCore` Run for the contract suite."""

    fake: FakeCore

    def core(self, component: str) -> FakeServices:
        """The component's Core services."""
        return self.fake.services_for(component)

    def publish_lifecycle(self, event: str, **data: object) -> Envelope | None:
        """A lifecycle event."""
        return self.fake.publish("lifecycle", {"event": event, **data})

    def publish_plugin_event(self, name: str, data: Mapping[str, object] | None = None) -> Envelope | None:
        """A plugin event."""
        return self.fake.publish("events", {"event": name, "emitter": "scene", "data": dict(data or {})})

    def start_producers(self) -> None:
        """The prepare boundary."""
        self.fake.start_producers()

    def issue_control(self, command_id: str) -> None:
        """Audit then result of one command."""
        self.fake.publish("control.audit", {"event": "command.issued", "command_id": command_id})
        self.fake.publish("control.result", {"event": "command.applied", "command_id": command_id, "ok": True})

    def tick(self, values: Mapping[str, object]) -> None:
        """One tick with these channel values."""
        self.fake.publish_tick(values)

    def publish_camera(
        self, channel: str, value: object, calibration_digest: str, profile: Profile = None
    ) -> None:
        """One camera sample (the optional camera capability)."""
        self.fake.publish_camera(channel, value, calibration_digest, profile)

    def publish_render(self, source: str, payload: Mapping[str, object]) -> Envelope | None:
        """One render-side item (the optional render capability)."""
        return self.fake.publish_render(source, payload)

    def reset(self) -> None:
        """A new generation."""
        self.fake.reset()

    def end_tick(self, *, paced: bool = False) -> float:
        """The fake's rule 8 (flow control)."""
        return self.fake.end_tick(paced=paced)

    def finish(self, completion: CompletionRequest | None = None) -> Finish:
        """Complete, cut, finalize."""
        if completion is not None:
            self.fake.request_completion(completion)
        cut = self.fake.take_cut()
        results = self.fake.terminate(cut.completion.kind, cut.completion.reason)
        active = [r for r in self.fake.registrations if r.active]
        status, reason = self.fake.status()
        return Finish(
            cut=cut,
            status=status,
            reason=reason,
            finalizers=tuple(
                FinalizerReport(res.component, res.ok, res.reason, reg.timed_out)
                for reg, res in zip(active, results)
            ),
        )

    def artifact(self, name: str) -> bytes | None:
        """The committed bytes."""
        return self.fake.outputs.committed.get(name)

    def leftovers(self, name: str) -> Sequence[str]:
        """Staging artifacts of ``name`` left by abort or revocation."""
        return tuple(sorted(k for k in self.fake.outputs.leftovers if name in k))

    def close(self) -> None:
        """Core's cleanup: revoke anything left open."""
        self.fake.outputs.release_stall()
        self.fake.outputs.revoke_open()


def make_driver(spec: HarnessSpec, workdir: Path) -> FakeDriver:
    """A fresh fake Core for one contract test (``workdir`` is unused: all in memory)."""
    del workdir
    fake = FakeCore(
        channels=spec.channels,
        capture=spec.capture,
        output_policy=spec.output_policy,
        sensor_hz=spec.sensor_hz,
        services=spec.services,
        portable_sizes=spec.portable_sizes,
        max_finalizer_timeout_s=spec.max_finalizer_timeout_s,
        flow_stall_s=spec.flow_stall_s,
        max_block=120,  # blocks whenever every observations subscriber opts in (fake_bus doc)
    )
    return FakeDriver(fake)
