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
the component ``plugin://<ns>/<name>`` is the entry point named ``<name>``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from importlib.metadata import entry_points
from pathlib import Path

import attrs

from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_contract.protocols import Plugin, PluginFactory
from fastsim_contract.run_errors import RunConfigError, RunIssue
from fastsim_contract.values import CompletionKind
from fastsim_embedded.compile import PreparedRun
from fastsim_embedded.core import EmbeddedCore, EmbeddedHost, RunOutcome
from fastsim_embedded.loop import HostWork, Progress, run_loop, tick_count
from fastsim_embedded.output import OutputRefused
from fastsim_embedded.render_capture import RenderCapture

__all__ = ["PLUGINS_ENTRY_POINT_GROUP", "EmbeddedPluginContext", "SessionResult", "discover_plugin", "run_session"]

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
    name = component_id.rstrip("/").rsplit("/", 1)[-1]
    for ep in entry_points(group=PLUGINS_ENTRY_POINT_GROUP):
        if ep.name == name:
            factory: PluginFactory = ep.load()
            return factory
    raise RunConfigError([RunIssue("plugins", f"no installed plugin factory for {component_id}")])


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
    return {
        "run": {
            "name": prepared.run.name, "backend": prepared.backend_name, "seed": prepared.seed,
            "episode": prepared.episode, "sensor_hz": prepared.sensor_hz,
            "physics_hz": prepared.physics_hz, "duration_s": prepared.duration_s,
        },
        "scene": scene,
    }


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__


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
    """Run ``prepared`` to its outcome.  ``factories`` overrides discovery (tests).

    Every output name is reserved before any plugin exists: an existing final file
    (without ``overwrite``), a crashed Run's ``.incomplete`` or another recorder's lock
    raises ``OutputRefused`` and nothing runs.  ``on_cut`` is called just before the
    finalizers start (a watchdog can bound what follows).
    """
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

    plugins: list[tuple[str, Plugin]] = []
    failure: str | None = None
    try:
        for component in prepared.compiled.components:
            factory = (factories or {}).get(component.component_id) or discover_plugin(component.component_id)
            context = EmbeddedPluginContext(
                component.component_id, component.config, host.core_for(component.alias), component.alias
            )
            plugin = factory(context)
            plugins.append((component.alias, plugin))
            plugin.prepare()
        host.publish_lifecycle("run.prepared", plugins=[alias for alias, _ in plugins])
        for _, plugin in plugins:
            plugin.start()
    except RunConfigError:
        _teardown(plugins)
        host.cleanup(time.monotonic() + host.revoke_grace_s)  # and release the output names
        backend.close()
        raise
    except Exception as exc:
        failure = f"prepare failed: {_one_line(exc)}"
    ticks = 0
    if failure is None:
        host.bus.close_history()
        host.control_producers_started()
        host.publish_lifecycle(
            "run.started", sensor_hz=prepared.sensor_hz, physics_hz=prepared.physics_hz,
            wall_time_unix_ns=time.time_ns(),
        )
        ticks = run_loop(
            host,
            backend,
            ticks=tick_count(prepared.duration_s, prepared.sensor_hz),
            substeps=prepared.substeps,
            host_work=host_work,
            progress=progress,
            realtime_factor=realtime_factor,
        )
        cut = host.take_cut()
        if on_cut is not None:
            on_cut(host)
        finalizers = host.finalize(cut)
        errors = _teardown(plugins)
        host.cleanup(time.monotonic() + host.revoke_grace_s)
        backend.close()
        return SessionResult(
            host.outcome(cut, finalizers), ticks, errors, host.flow.waits, host.flow.waited_s
        )
    host.request_completion(CompletionKind.FAILED, failure)
    errors = _teardown(plugins)
    host.cleanup(time.monotonic() + host.revoke_grace_s)
    backend.close()
    return SessionResult(host.outcome(None, (), failure=failure), ticks, errors)


def _teardown(plugins: list[tuple[str, Plugin]]) -> tuple[str, ...]:
    errors: list[str] = []
    for alias, plugin in plugins:
        for step in (plugin.stop, plugin.close):
            try:
                step()
            except Exception as exc:
                errors.append(f"{alias}.{step.__name__}: {_one_line(exc)}")
    return tuple(errors)
