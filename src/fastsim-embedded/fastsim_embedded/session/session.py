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
revokes leftovers.  Plugins are found through the ``fastsim.plugins`` entry points
(``fastsim_embedded.session.plugins``).

A :class:`Session` is that table as an object a driver steps:

    | # | call              | phases | what happens                                              |
    |---|-------------------|--------|-----------------------------------------------------------|
    | 1 | ``Session.open``  | 0-3    | the prepared Run, opened                                  |
    | 2 | ``reset(seed)``   | 5-6, 0-3 | the open Run ends (``stopped``; a closed one stays as it |
    |   |                   |        | ended), then the next episode of the same Run is prepared |
    |   |                   |        | with ``seed`` (episode number + 1) and opened in its place |
    | 3 | ``step(commands)``| 4      | one tick with the driver's commands (``loop.TickStepper``)|
    | 4 | ``close()``       | 5-6    | cut, finalize, teardown; the ``SessionResult``            |

Drivers: ``run_session`` (``fsr record``: ``Session.open`` + the scene's own script +
``close``), ``FastSimRun-v0`` (``fastsim_embedded.gym``: its actions), the Gymnasium
recorder (``fastsim_embedded.gymnasium_host``: the env's steps) and tests.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import attrs

from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.protocols import Plugin, PluginFactory
from fastsim_contract.run_errors import RunConfigError
from fastsim_contract.values import CompletionKind
from fastsim_embedded.backends.base import ControlCommand, ScenePluginEvent, TickScript
from fastsim_embedded.backends.tasks import TASK_RESULT_EVENT
from fastsim_embedded.host.context import RunOutcome
from fastsim_embedded.host.core import EmbeddedHost
from fastsim_embedded.output.transaction import OutputRefused
from fastsim_embedded.render.capture import RenderCapture
from fastsim_embedded.session import loop as _loop
from fastsim_embedded.session.compile import PreparedRun, prepare_run
from fastsim_embedded.session.gc_policy import gc_policy_enabled, run_gc_policy
from fastsim_embedded.session.loop import (
    HostWork,
    Progress,
    TickResult,
    TickStepper,
    run_loop,
    tick_count,
)
from fastsim_embedded.session.metadata import run_metadata, task_of
from fastsim_embedded.session.plugins import (
    EmbeddedPluginContext,
    discover_plugin,
    one_line,
    teardown,
)

__all__ = ["Prepare", "Session", "SessionClosed", "SessionResult", "TickResult", "run_session"]

#: how ``Session.reset`` prepares the next episode: ``(seed, episode) -> PreparedRun``
Prepare = Callable[[int | None, int], PreparedRun]


@attrs.frozen
class SessionResult:
    """The Run's outcome plus what the session observed."""

    outcome: RunOutcome
    ticks: int
    teardown_errors: tuple[str, ...] = ()
    flow_waits: int = 0  # unpaced ticks after which the loop waited on a consumer's gauge
    flow_waited_s: float = 0.0  # how long it waited in all


@attrs.frozen
class _Options:
    """How a Session opens each of its Runs (``Session.open``'s keywords)."""

    output_dir: Path
    output_policy: RunOutputPolicy | None = None
    portable_sizes: bool = True
    factories: Mapping[str, PluginFactory] | None = None
    max_finalizer_timeout_s: float = 300.0
    on_host: Callable[[EmbeddedHost], None] | None = None
    overwrite: bool = False


class SessionClosed(RuntimeError):
    """``Session.step`` after the Run ended (closed, failed to prepare, or cut)."""


def _same_run(prepared: PreparedRun) -> Prepare:
    """The default ``Session.reset``: the same Run file, backend and duration, the next episode."""
    def prepare(seed: int | None, episode: int) -> PreparedRun:
        return prepare_run(prepared.run, backend=prepared.backend_name, duration_s=prepared.duration_s,
                           seed=seed, episode=episode, sweep=True)
    return prepare


class Session:
    """One Run on the embedded host, as an object a driver steps tick by tick (module table).

    Opening raises what ``run_session`` raises before anything runs (``OutputRefused``,
    ``RunConfigError``); any other prepare failure leaves ``failure`` set: ``step``
    refuses and ``close`` returns the failed outcome.
    """

    def __init__(self, prepared: PreparedRun, options: _Options, prepare: Prepare | None = None) -> None:
        self._options = options
        self._prepare = prepare or _same_run(prepared)
        #: the results of the Runs this session ended by ``reset``, in order
        self.previous: list[SessionResult] = []
        self._boot(prepared)

    def _boot(self, prepared: PreparedRun) -> None:
        """Phases 0-3 of ``prepared`` (module table); this session now steps it."""
        options = self._options
        self.prepared = prepared
        self.backend = prepared.backend
        self.plugins: list[tuple[str, Plugin]] = []
        self.failure: str | None = None
        self.result: SessionResult | None = None
        self._stepper: TickStepper | None = None
        run, backend = prepared.run, prepared.backend
        host = self.host = EmbeddedHost.create(
            capture=prepared.capture, channels=prepared.channels, output_dir=options.output_dir,
            sensor_hz=prepared.sensor_hz, physics_hz=prepared.physics_hz, rate_policy=prepared.rate_policy,
            output_policy=options.output_policy or run.runtime.output, portable_sizes=options.portable_sizes,
            max_finalizer_timeout_s=options.max_finalizer_timeout_s,
        )
        host.outputs.overwrite = options.overwrite
        try:
            for name in prepared.output_names:
                host.outputs.reserve(name)
        except OutputRefused:
            host.outputs.release_reservations()
            backend.close()
            raise
        host.context.services = RenderCapture.services_of(backend)  # fluid.audit with an emitter
        host.context.metadata = run_metadata(prepared)
        if options.on_host is not None:
            options.on_host(host)
        backend.reset(0)
        events = host.events
        events.publish_lifecycle("run.created", run_id=host.context.run_id, name=run.name, backend=prepared.backend_name)
        events.publish_lifecycle("generation.started", generation=0, previous=None, reason="start")
        try:
            for component in prepared.compiled.components:
                factories = options.factories or {}
                factory = factories.get(component.component_id) or discover_plugin(component.component_id)
                context = EmbeddedPluginContext(
                    component.component_id, component.config, host.core_for(component.alias), component.alias
                )
                plugin = factory(context)
                self.plugins.append((component.alias, plugin))
                plugin.prepare()
            events.publish_lifecycle("run.prepared", plugins=[alias for alias, _ in self.plugins])
            for _, plugin in self.plugins:
                plugin.start()
        except RunConfigError:
            teardown(self.plugins)
            host.cleanup(time.monotonic() + host.revoke_grace_s)  # and release the output names
            backend.close()
            raise
        except Exception as exc:
            self.failure = f"prepare failed: {one_line(exc)}"
            return
        host.bus.close_history()
        host.control_producers_started()
        events.publish_lifecycle(
            "run.started", sensor_hz=prepared.sensor_hz, physics_hz=prepared.physics_hz,
            wall_time_unix_ns=time.time_ns(),
        )

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
        prepare: Prepare | None = None,
    ) -> Session:
        """Reserve the output names, boot the backend, prepare and start every plugin.

        ``prepare`` is how ``reset`` prepares the next episode (default: ``prepared``'s
        Run file, backend and duration with the new seed and the next episode number).
        """
        options = _Options(output_dir, output_policy, portable_sizes, factories, max_finalizer_timeout_s,
                           on_host, overwrite)
        return cls(prepared, options, prepare)

    def reset(self, seed: int | None = None) -> None:
        """End the open Run (``stopped``; one already closed keeps its result), then prepare
        the next episode with ``seed`` (``None``: the Run's ``runtime.seed``) and open it.

        Every ended Run's result is in ``previous``.  Raises what ``open`` raises; the
        session then has no open Run (``step`` refuses, ``close`` returns the last result).
        """
        if self.result is None:
            self.close(CompletionKind.STOPPED, f"reset after {self.ticks} ticks")
        assert self.result is not None  # noqa: S101 - set by close
        ended = self.result
        self.previous.append(ended)
        try:
            self._boot(self._prepare(seed, self.prepared.episode + 1))
        except BaseException:
            self.result = ended  # nothing open: step refuses, close returns the last result
            raise

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
            raise SessionClosed(self.failure or "the session is closed")
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
        a completion request raises ``SessionClosed``.
        """
        if self.result is not None or self.failure is not None:
            raise SessionClosed(self.failure or "the session is closed")
        if self.host.terminal.completion_requested():  # ``stopping``
            completion = self.host.terminal.completion
            raise SessionClosed(f"the session is stopping: {completion.reason if completion else ''}")
        try:  # the stepper is built on the first step (``stepper``)
            stepper = self._stepper if self._stepper is not None else self.stepper
            result = stepper.tick(TickScript(reset, tuple(commands), tuple(events)))
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
            if self._stepper is None and self.result is None:  # the scripted driver: blocks allowed
                self._stepper = TickStepper(
                    self.host, self.backend, substeps=self.prepared.substeps, max_block=_loop.SCRIPTED_MAX_BLOCK  # read when the Run starts (tests set it)
                )
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
        keep_recorded: bool = False,
    ) -> SessionResult:
        """End the Run: request ``kind`` (it loses if a completion already won), cut,
        finalize (Record commits), stop and close every plugin, release the backend.
        Idempotent: a second call returns the first result.

        ``keep_recorded`` (with ``kind`` ``failed``): the driver's data source (the env it
        steps) failed and what was recorded before it is sound: Record commits it after
        its full validation, completion ``failed`` (contract FR2).  A backend exception
        inside ``step`` stays a plain ``failed`` (nothing published)."""
        if self.result is not None:
            return self.result
        host = self.host
        if self.failure is not None:
            host.request_completion(CompletionKind.FAILED, self.failure)
            errors = teardown(self.plugins)
            host.cleanup(time.monotonic() + host.revoke_grace_s)
            self.backend.close()
            self.result = SessionResult(host.outcome(None, (), failure=self.failure), 0, errors)
            return self.result
        host.request_completion(kind, reason or f"{kind.value} after {self.ticks} ticks", keep_recorded=keep_recorded)
        task = task_of(self.backend)
        if task is not None:  # the episode's result, before the cut seals the bus
            host.events.publish_plugin_event(TASK_RESULT_EVENT, task.result(), emitter="task")
        cut = host.take_cut()
        if on_cut is not None:
            on_cut(host)
        finalizers = host.finalize(cut)
        errors = teardown(self.plugins)
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
    of ``Session``).  ``factories`` overrides discovery (tests).

    Every output name is reserved before any plugin exists: an existing final file
    (without ``overwrite``), a crashed Run's ``.incomplete`` or another recorder's lock
    raises ``OutputRefused`` and nothing runs.  ``on_cut`` is called just before the
    finalizers start (a watchdog can bound what follows).

    The ticks and the finalization run under the collector policy of ``gc_policy``
    (startup heap frozen, gen-0 threshold raised; restored on every exit path), with
    Record on or off alike; ``FASTSIM_RUN_GC=inherit`` opts out (a bad value raises
    ``RunConfigError`` before anything runs).
    """
    try:
        gc_policy = gc_policy_enabled()
    except RunConfigError:
        prepared.backend.close()  # as for a refused output name: nothing has run
        raise
    session = Session.open(
        prepared, output_dir, output_policy=output_policy, portable_sizes=portable_sizes,
        factories=factories, max_finalizer_timeout_s=max_finalizer_timeout_s, on_host=on_host,
        overwrite=overwrite,
    )
    with run_gc_policy(gc_policy):
        session.play_script(
            tick_count(prepared.duration_s, prepared.sensor_hz),
            host_work=host_work, progress=progress, realtime_factor=realtime_factor,
        )
        return session.close(on_cut=on_cut)
