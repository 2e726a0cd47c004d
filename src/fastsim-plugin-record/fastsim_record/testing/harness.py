"""A test harness: the Record plugin wired to the fake Core, plus config builders.

    h = Harness.started(channels=numeric_channels(3))
    h.run_ticks(100, control=True, events_every=10)
    result = h.finish()
    reader = h.reader()          # FsrReader over the committed bytes
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from fastsim_contract.values import CapturePlan, ChannelDescriptor, CompletionKind, FinalizerResult
from fastsim_record.bootstrap import create_plugin
from fastsim_record.config.model import (
    BatchingConfig,
    ObservationChannel,
    ObservationsConfig,
    QueueConfig,
    QueuesConfig,
    RecordConfig,
    StreamsConfig,
)
from fastsim_record.pipeline.plugin import RecordPlugin
from fastsim_record.pipeline.wiring import Wiring
from fastsim_record.testing.fake_core import FakeCore, numeric_channels
from fastsim_recording_format.reader import FsrReader

__all__ = ["Harness", "make_config", "plan_for", "summary_of"]


def plan_for(config: RecordConfig, channels: Sequence[ChannelDescriptor]) -> CapturePlan:
    """The capture plan a Core compiles for ``config`` in a scene with ``channels``."""
    numeric = config.selected_numeric_channels([c.name for c in channels if c.kind == "numeric"])
    sources = {"lifecycle", "events", "control.audit", "control.result"}
    if numeric:
        sources.add("observations")
    return CapturePlan(frozenset(sources), tuple(numeric))


def summary_of(result: FinalizerResult) -> dict[str, Any]:
    """A finalizer summary as a plain dict for assertions."""
    return dict(result.summary)


def make_config(
    *,
    observations: str = "all_numeric",
    include: Mapping[str, tuple[str, bool]] | None = None,
    critical: tuple[int, int, str] | None = None,
    numeric: tuple[int, int, str] | None = None,
    batching: tuple[int, int, float] | None = None,
    integrity: str = "structural",
    timeout_s: float = 60.0,
) -> RecordConfig:
    """A ``RecordConfig`` with the given overrides (lanes as ``(items, bytes, overload)``)."""
    base = RecordConfig()
    obs = ObservationsConfig(
        mode=observations,
        include={a: ObservationChannel(ch, required=req) for a, (ch, req) in (include or {}).items()},
    )
    queues = base.queues
    if critical is not None:
        queues = attrs.evolve(queues, critical=QueueConfig(*critical))
    if numeric is not None:
        queues = attrs.evolve(queues, numeric=QueueConfig(*numeric))
    return attrs.evolve(
        base,
        integrity=integrity,
        streams=attrs.evolve(StreamsConfig(), observations=obs),
        queues=queues if isinstance(queues, QueuesConfig) else base.queues,
        batching=BatchingConfig(*batching) if batching is not None else base.batching,
        finalize=attrs.evolve(base.finalize, requested_timeout_s=timeout_s),
    )


@attrs.define(eq=False)
class Harness:
    """One fake Core and one Record plugin."""

    core: FakeCore
    plugin: RecordPlugin
    results: list[FinalizerResult] = attrs.field(factory=list)

    @property
    def wiring(self) -> Wiring:
        """What ``bootstrap.wire`` built for the plugin (it is prepared)."""
        wiring = self.plugin.wiring
        if wiring is None:
            raise AssertionError("the plugin is not wired")
        return wiring

    @classmethod
    def started(
        cls,
        config: RecordConfig | None = None,
        *,
        channels: Sequence[ChannelDescriptor] | None = None,
        before_prepare: int = 0,
        **core_kwargs: Any,
    ) -> Harness:
        """A prepared and started plugin; ``before_prepare`` lifecycle items precede it."""
        config = config or RecordConfig()
        declared = numeric_channels(3) if channels is None else tuple(channels)
        if "capture" not in core_kwargs:
            core_kwargs["capture"] = plan_for(config, declared)
        core = FakeCore(channels=declared, **core_kwargs)
        for i in range(before_prepare):
            core.publish("lifecycle", {"event": "boot", "i": i})
        plugin = create_plugin(core.context(config))
        plugin.prepare()
        plugin.start()
        core.start_producers()
        return cls(core, plugin)

    def run_ticks(
        self, n: int, *, control: bool = True, events_every: int = 0, unpaced: bool = False
    ) -> int:
        """Publish ``n`` ticks (observation, control audit and result, some events).

        ``unpaced`` ends each tick as an unpaced host loop does: it waits while Record's
        gauge is pressed (flow control), and stops once a completion was requested.
        Returns the ticks published.
        """
        core = self.core
        for i in range(n):
            if unpaced and core.winner is not None:
                return i
            core.publish_tick()
            if control:
                core.publish("control.audit", {"command": "move", "i": i})
                core.publish("control.result", {"ok": True, "i": i})
            if events_every and i % events_every == 0:
                core.publish("events", {"event": "marker", "i": i})
            if unpaced:
                core.end_tick()
        return n

    def finish(
        self, kind: CompletionKind = CompletionKind.NORMAL, *, timeout_s: float | None = None,
        reason: str = "done", keep_recorded: bool = False,
    ) -> FinalizerResult:
        """Complete (host side; ``keep_recorded``: the data source failed, contract FR2), cut,
        finalize; then stop and close the plugin."""
        self.results = self.core.terminate(kind, reason, timeout_s=timeout_s, keep_recorded=keep_recorded)
        self.plugin.stop()
        self.plugin.close()
        return self.results[0]

    def data(self, name: str = "episode.fsr") -> bytes:
        """The committed file's bytes."""
        return self.core.outputs.committed[name]

    def reader(self, name: str = "episode.fsr") -> FsrReader:
        """A reader over the committed file."""
        return FsrReader(io.BytesIO(self.data(name)))
