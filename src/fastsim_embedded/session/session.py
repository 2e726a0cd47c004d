"""One Run on the embedded host, start to finish.

    | # | phase     | what happens                                                            |
    |---|-----------|-------------------------------------------------------------------------|
    | 0 | reserve   | lock and check every output name (``OutputRefused``: nothing has run)   |
    | 1 | boot      | backend.reset(0); lifecycle run.created, generation.started (gen 0)      |
    | 2 | prepare   | each plugin: factory(context) -> prepare() (subscribe, grants, register) |
    | 3 | start     | lifecycle run.prepared; plugins start(); history closes; control        |
    |   |           | producers start; lifecycle run.started                                 |
    | 4 | run       | the run loop until the duration or a completion request                 |
    | 5 | terminal  | run.stopping -> cut -> finalizers (deadline, cancel, revoke)             |
    | 6 | teardown  | plugins stop() then close(); Core revokes anything left open (bounded)  |

A failure in phases 2-3 fails the Run: completion ``failed``, every created plugin is
closed (close before finalization aborts its output), nothing is finalized, and Core
revokes leftovers.  Plugins are found through the ``fastsim.plugins`` entry points:
the component ``plugin://<ns>/<name>`` is the entry point named ``<ns>.<name>``
(``plugin://fastsim/record`` is ``fastsim.record``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path

import attrs

from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.protocols import Plugin, PluginFactory
from fastsim_contract.run_compiler import entry_point_name
from fastsim_contract.run_errors import RunConfigError, RunIssue
from fastsim_contract.values import CompletionKind
from fastsim_embedded.backends.base import ControlCommand, ScenePluginEvent, TickScript
from fastsim_embedded.backends.tasks import TASK_RESULT_EVENT, TaskTracker
from fastsim_embedded.host.core import EmbeddedCore, EmbeddedHost, RunOutcome
from fastsim_embedded.output.transaction import OutputRefused
from fastsim_embedded.render.capture import RenderCapture
from fastsim_embedded.session.compile import PreparedRun
from fastsim_embedded.session.loop import (
    HostWork,
    Progress,
    TickResult,
    TickStepper,
    run_loop,
    tick_count,
)

__all__ = [
    "PLUGINS_ENTRY_POINT_GROUP", "EmbeddedPluginContext", "Episode", "EpisodeClosed", "SessionResult",
    "TickResult", "discover_plugin", "run_session", "task_of",
]

PLUGINS_ENTRY_POINT_GROUP = "fastsim.plugins"


@attrs.frozen
class EmbeddedPluginContext:
    """What the host hands a plugin factory (``PluginContext``)."""

    component_id: str
    config: object
    core: EmbeddedCore
    alias: str = ""


@attrs.frozen
class SessionResult:
    """The Run's outcome plus what the session observed."""

    outcome: RunOutcome
    ticks: int
    teardown_errors: tuple[str, ...] = ()
    flow_waits: int = 0  # unpaced ticks after which the loop waited on a consumer's gauge
    flow_waited_s: float = 0.0  # how long it waited in all


def discover_plugin(component_id: str) -> PluginFactory:
    """The installed factory for ``component_id`` (``RunConfigError`` if none)."""
    name = entry_point_name(component_id)
    for ep in entry_points(group=PLUGINS_ENTRY_POINT_GROUP):
        if ep.name == name:
            factory: PluginFactory = ep.load()
            return factory
    raise RunConfigError([RunIssue(
        "plugins",
        f"no installed plugin factory for {component_id} "
        f"(no entry point {name!r} in group {PLUGINS_ENTRY_POINT_GROUP!r})",
    )])


def _plain(value: object) -> object:
    """``value`` as JSON-ready data (mappings, lists, numbers, strings)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def run_metadata(prepared: PreparedRun) -> dict[str, object]:
    """What the host records about the Run: name, backend, seed, episode and the scene.

    The scene description is the authored ``scenario.scene``, the backend's own
    ``describe()`` when it has one (e.g. what the seed randomized), and every declared
    channel with its dtype, shape, units and per-element names.
    """
    backend = prepared.backend
    describe = getattr(backend, "describe", None)
    scene: dict[str, object] = {"authored": _plain(prepared.run.scenario.get("scene") or {})}
    if callable(describe):
        scene["backend"] = _plain(describe())
    scene["channels"] = [
        {
            "name": c.name, "kind": c.kind, "dtype": c.dtype, "shape": list(c.shape),
            "units": list(c.units), "entity": c.entity,
            "element_names": _plain(c.attributes.get("element_names", [])),
        }
        for c in prepared.channels
    ]
    metadata: dict[str, object] = {
        "run": {
            "name": prepared.run.name, "backend": prepared.backend_name, "seed": prepared.seed,
            "episode": prepared.episode, "sensor_hz": prepared.sensor_hz,
            "physics_hz": prepared.physics_hz, "duration_s": prepared.duration_s,
        },
        "scene": scene,
    }
    controls = getattr(backend, "controls", None)
    if callable(controls):  # what a driver may command (exports name the command's elements)
        metadata["controls"] = [_plain(attrs.asdict(c)) for c in controls()]
    task = task_of(backend)
    if task is not None:  # the task spec: what the reward and the result mean
        metadata["task"] = {
            **task.spec.to_json(), "target": _plain(task.target.tolist()),
            "channels": [c.name for c in task.channels()], "result_event": TASK_RESULT_EVENT,
        }
    return metadata


def task_of(backend: object) -> TaskTracker | None:
    """The task the scene declares (``scenario.scene.task``), if any."""
    task = getattr(backend, "task", None)
    return task if isinstance(task, TaskTracker) else None


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


class EpisodeClosed(RuntimeError):
    """``Episode.step`` after the episode ended (closed, failed to prepare, or cut)."""


class Episode:
    """One Run on the embedded host, as an object a driver steps tick by tick.

    ``Episode.open`` does phases 0-3 of the table above (reserve, boot, prepare, start);
    ``step`` runs one tick (phase 4, ``fastsim_embedded.session.loop.TickStepper``); ``close``
    does phases 5-6 and returns the ``SessionResult``.  The scripted ``fsr record`` is
    one driver (``run_session``: it plays the scene's script), the Gymnasium environment
    another (it sends its own commands); neither copies the other.

    Opening raises what ``run_session`` raises before anything runs (``OutputRefused``,
    ``RunConfigError``); any other prepare failure leaves the episode ``failure`` set:
    ``step`` refuses and ``close`` returns the failed outcome.
    """

    def __init__(self, prepared: PreparedRun, host: EmbeddedHost, plugins: list[tuple[str, Plugin]]) -> None:
        self.prepared = prepared
        self.host = host
        self.backend = prepared.backend
        self.plugins = plugins
        self.failure: str | None = None
        self.result: SessionResult | None = None
        self._stepper: TickStepper | None = None

    @classmethod
    def open(
        cls,
        prepared: PreparedRun,
        output_dir: Path,
        *,
        output_policy: RunOutputPolicy | None = None,
        portable_sizes: bool = True,
        factories: Mapping[str, PluginFactory] | None = None,
        max_finalizer_timeout_s: float = 300.0,
        on_host: Callable[[EmbeddedHost], None] | None = None,
        overwrite: bool = False,
    ) -> Episode:
        """Reserve the output names, boot the backend, prepare and start every plugin."""
        run = prepared.run
        host = EmbeddedHost.create(
            capture=prepared.capture,
            channels=prepared.channels,
            output_dir=output_dir,
            sensor_hz=prepared.sensor_hz,
            physics_hz=prepared.physics_hz,
            rate_policy=prepared.rate_policy,
            output_policy=output_policy or run.runtime.output,
            portable_sizes=portable_sizes,
            max_finalizer_timeout_s=max_finalizer_timeout_s,
        )
        backend = prepared.backend
        host.outputs.overwrite = overwrite
        try:
            for name in prepared.output_names:
                host.outputs.reserve(name)
        except OutputRefused:
            host.outputs.release_reservations()
            backend.close()
            raise
        host.context.services = RenderCapture.services_of(backend)  # fluid.audit with an emitter
        host.context.metadata = run_metadata(prepared)
        if on_host is not None:
            on_host(host)
        backend.reset(0)
        host.publish_lifecycle("run.created", run_id=host.context.run_id, name=run.name, backend=prepared.backend_name)
        host.publish_lifecycle("generation.started", generation=0, previous=None, reason="start")

        episode = cls(prepared, host, [])
        try:
            for component in prepared.compiled.components:
                factory = (factories or {}).get(component.component_id) or discover_plugin(component.component_id)
                context = EmbeddedPluginContext(
                    component.component_id, component.config, host.core_for(component.alias), component.alias
                )
                plugin = factory(context)
                episode.plugins.append((component.alias, plugin))
                plugin.prepare()
            host.publish_lifecycle("run.prepared", plugins=[alias for alias, _ in episode.plugins])
            for _, plugin in episode.plugins:
                plugin.start()
        except RunConfigError:
            _teardown(episode.plugins)
            host.cleanup(time.monotonic() + host.revoke_grace_s)  # and release the output names
            backend.close()
            raise
        except Exception as exc:
            episode.failure = f"prepare failed: {_one_line(exc)}"
            return episode
        host.bus.close_history()
        host.control_producers_started()
        host.publish_lifecycle(
            "run.started", sensor_hz=prepared.sensor_hz, physics_hz=prepared.physics_hz,
            wall_time_unix_ns=time.time_ns(),
        )
        return episode

    @property
    def ticks(self) -> int:
        """Ticks completed so far."""
        return 0 if self._stepper is None else self._stepper.ticks

    @property
    def stopping(self) -> bool:
        """Whether a completion was requested (by the host, a plugin or a signal)."""
        return self.host.terminal.completion_requested()

    @property
    def stepper(self) -> TickStepper:
        """The per-tick stepper (built on first use, after every plugin started)."""
        if self.result is not None or self.failure is not None:
            raise EpisodeClosed(self.failure or "the episode is closed")
        if self._stepper is None:
            self._stepper = TickStepper(self.host, self.backend, substeps=self.prepared.substeps)
        return self._stepper

    def step(
        self,
        commands: Sequence[ControlCommand] = (),
        *,
        events: Sequence[ScenePluginEvent] = (),
        reset: bool = False,
        settle: bool = True,
    ) -> TickResult:
        """One tick with the driver's own ``commands`` (audited, applied, results
        published) and ``events``; ``reset`` starts a new Runtime generation first.

        Unpaced drivers ``settle`` (flow control FC1-FC6) after the tick.  A backend or
        publisher exception requests a failed completion and is re-raised; a step after
        a completion request raises ``EpisodeClosed``.
        """
        if self.result is not None or self.failure is not None:
            raise EpisodeClosed(self.failure or "the episode is closed")
        if self.stopping:
            completion = self.host.terminal.completion
            raise EpisodeClosed(f"the episode is stopping: {completion.reason if completion else ''}")
        try:
            result = self.stepper.tick(TickScript(reset, tuple(commands), tuple(events)))
        except Exception as exc:
            self.host.request_completion(CompletionKind.FAILED, f"simulation failed at tick {self.ticks + 1}: {exc}")
            raise
        if settle:
            self.host.flow.settle(self.host.terminal.completion_requested)
        return result

    def play_script(
        self,
        ticks: int,
        *,
        host_work: HostWork | None = None,
        progress: Progress | None = None,
        realtime_factor: float | None = None,
    ) -> int:
        """The scripted driver: play the scene's own script for up to ``ticks`` ticks,
        then request a normal completion (``fastsim_embedded.session.loop.run_loop``)."""
        if self.failure is not None:
            return 0
        try:
            stepper = self.stepper
        except Exception as exc:  # the render side could not bind: fail the Run, never hang
            self.host.request_completion(CompletionKind.FAILED, f"simulation failed at tick 1: {exc}")
            return 0
        return run_loop(
            self.host, self.backend, ticks=ticks, substeps=self.prepared.substeps,
            host_work=host_work, progress=progress, realtime_factor=realtime_factor,
            stepper=stepper,
        )

    def close(
        self,
        kind: CompletionKind = CompletionKind.NORMAL,
        reason: str = "",
        *,
        on_cut: Callable[[EmbeddedHost], None] | None = None,
    ) -> SessionResult:
        """End the episode: request ``kind`` (it loses if a completion already won), cut,
        finalize (Record commits), stop and close every plugin, release the backend.
        Idempotent: a second call returns the first result."""
        if self.result is not None:
            return self.result
        host = self.host
        if self.failure is not None:
            host.request_completion(CompletionKind.FAILED, self.failure)
            errors = _teardown(self.plugins)
            host.cleanup(time.monotonic() + host.revoke_grace_s)
            self.backend.close()
            self.result = SessionResult(host.outcome(None, (), failure=self.failure), 0, errors)
            return self.result
        host.request_completion(kind, reason or f"{kind.value} after {self.ticks} ticks")
        task = task_of(self.backend)
        if task is not None:  # the episode's result, before the cut seals the bus
            host.publish_plugin_event(TASK_RESULT_EVENT, task.result(), emitter="task")
        cut = host.take_cut()
        if on_cut is not None:
            on_cut(host)
        finalizers = host.finalize(cut)
        errors = _teardown(self.plugins)
        host.cleanup(time.monotonic() + host.revoke_grace_s)
        self.backend.close()
        self.result = SessionResult(
            host.outcome(cut, finalizers), self.ticks, errors, host.flow.waits, host.flow.waited_s
        )
        return self.result


def run_session(
    prepared: PreparedRun,
    output_dir: Path,
    *,
    output_policy: RunOutputPolicy | None = None,
    portable_sizes: bool = True,
    host_work: HostWork | None = None,
    progress: Progress | None = None,
    factories: Mapping[str, PluginFactory] | None = None,
    max_finalizer_timeout_s: float = 300.0,
    on_host: Callable[[EmbeddedHost], None] | None = None,
    realtime_factor: float | None = None,
    overwrite: bool = False,
    on_cut: Callable[[EmbeddedHost], None] | None = None,
) -> SessionResult:
    """Run ``prepared`` to its outcome, playing the scene's script (the scripted driver
    of ``Episode``).  ``factories`` overrides discovery (tests).

    Every output name is reserved before any plugin exists: an existing final file
    (without ``overwrite``), a crashed Run's ``.incomplete`` or another recorder's lock
    raises ``OutputRefused`` and nothing runs.  ``on_cut`` is called just before the
    finalizers start (a watchdog can bound what follows).
    """
    episode = Episode.open(
        prepared, output_dir, output_policy=output_policy, portable_sizes=portable_sizes,
        factories=factories, max_finalizer_timeout_s=max_finalizer_timeout_s, on_host=on_host,
        overwrite=overwrite,
    )
    episode.play_script(
        tick_count(prepared.duration_s, prepared.sensor_hz),
        host_work=host_work, progress=progress, realtime_factor=realtime_factor,
    )
    return episode.close(on_cut=on_cut)


def _teardown(plugins: list[tuple[str, Plugin]]) -> tuple[str, ...]:
    errors: list[str] = []
    for alias, plugin in plugins:
        for step in (plugin.stop, plugin.close):
            try:
                step()
            except Exception as exc:
                errors.append(f"{alias}.{step.__name__}: {_one_line(exc)}")
    return tuple(errors)
