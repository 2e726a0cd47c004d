"""From a Run file to everything the host needs before any plugin starts.

    load_run (fastsim_contract.run)  ->  compile_run with the installed catalogs
    ->  build the backend (its declared channels)  ->  the CapturePlan

The capture plan (the global capture source mask) comes from the one component whose
manifest declares itself the sole ordered capture owner (``recording_sources``), from
its effective config and the scene's numeric channels:

    | # | source                       | captured when                                     |
    |---|------------------------------|---------------------------------------------------|
    | 1 | lifecycle, events, control.* | mandatory sources of the manifest (always)        |
    | 2 | observations (+ barriers)    | the config selects >= 1 numeric channel           |
    | 3 | cameras                      | ``streams.cameras`` names >= 1 camera             |
    | 4 | render.state / geometry      | enabled in config (rate from config)              |
    | 5 | fluid.emissions              | the backend exposes fluid.audit (a particle       |
    |   |                              | emitter) and the owner's manifest records it      |

No capture owner selected: the plan is empty and nothing is sequenced (a Run pays the
recording cost only when Record is selected).  Every problem is a ``RunConfigError``.
"""

from __future__ import annotations

import difflib
import math
import os
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from fastsim_contract.run import RunDocument, is_template, load_run, render_output_name
from fastsim_contract.run_compiler import (
    CompiledComponent,
    CompiledRun,
    compile_run,
    load_and_compile,
)
from fastsim_contract.run_errors import RunConfigError, RunIssue
from fastsim_contract.run_rename import with_output_name
from fastsim_contract.run_structure import unknown_key_message, value_at
from fastsim_contract.values import CameraCapture, CapturePlan, ChannelDescriptor, SourceKind
from fastsim_embedded.backends import UnknownBackend, create_backend
from fastsim_embedded.backends.base import Backend, BackendSpec
from fastsim_embedded.backends.scene_schema import scene_issues
from fastsim_embedded.output.names import check_output_name, with_suffix
from fastsim_embedded.render.capture import RenderCapture
from fastsim_embedded.session.task_capture import with_task_includes

__all__ = ["PreparedRun", "capture_plan", "prepare_built", "prepare_run"]

_MANDATORY = frozenset(
    {
        SourceKind.LIFECYCLE.value,
        SourceKind.PLUGIN_EVENT.value,
        SourceKind.CONTROL_AUDIT.value,
        SourceKind.CONTROL_RESULT.value,
    }
)


@attrs.frozen
class PreparedRun:
    """A compiled Run with its backend built and its capture plan fixed."""

    compiled: CompiledRun
    backend_name: str
    backend: Backend
    channels: tuple[ChannelDescriptor, ...]
    capture: CapturePlan
    capture_owner: str | None  # alias of the capture-owning component
    sensor_hz: float
    physics_hz: float
    substeps: int
    rate_policy: str
    duration_s: float
    output_names: tuple[str, ...] = ()  # every component's ``output.name`` (reserved first)
    seed: int | None = 0  # None: an episode that had no seed (a Gymnasium autoreset)
    episode: int = 0

    @property
    def run(self) -> RunDocument:
        """The Run document."""
        return self.compiled.run


def capture_plan(
    component: CompiledComponent, channels: Sequence[ChannelDescriptor], effective: Mapping[str, Any] | None = None,
) -> CapturePlan:
    """The capture mask of the capture-owning component (the module table); ``effective``:
    its ``config.to_mapping()`` when the caller already has it."""
    numeric = [c.name for c in channels if c.kind == "numeric"]
    if effective is None:
        effective = component.config.to_mapping()
    selector = getattr(component.config, "selected_numeric_channels", None)
    if callable(selector):
        selected = tuple(selector(numeric))
    else:
        mode = value_at(effective, "streams", "observations", "mode") or "all_numeric"
        include = value_at(effective, "streams", "observations", "include") or {}
        selected = (
            tuple(numeric) if mode == "all_numeric"
            else tuple(str(v["channel"]) for v in include.values()) if mode == "explicit"
            else ()
        )
    sources = set(_MANDATORY)
    if selected:
        sources.add(SourceKind.OBSERVATION.value)
    cameras = tuple(
        CameraCapture(
            alias=str(alias),
            rgb=str(cam["rgb"]),
            intrinsics=str(cam["intrinsics"]),
            translation=str(cam["translation"]),
            quaternion_xyzw=str(cam["quaternion_xyzw"]),
        )
        for alias, cam in (value_at(effective, "streams", "cameras") or {}).items()
    )
    if cameras:
        sources.add(SourceKind.CAMERA.value)
    render_hz = geometry_hz = None
    if value_at(effective, "streams", "render_state", "enabled"):
        sources.add(SourceKind.RENDER_STATE.value)
        render_hz = float(value_at(effective, "streams", "render_state", "rate_hz"))
    if value_at(effective, "streams", "geometry", "enabled"):
        sources.add(SourceKind.GEOMETRY.value)
        geometry_hz = float(value_at(effective, "streams", "geometry", "rate_hz"))
    return CapturePlan(
        sources=frozenset(sources),
        observation_channels=selected,
        cameras=cameras,
        render_state_hz=render_hz,
        geometry_hz=geometry_hz,
    )


def with_render_services(plan: CapturePlan, owner: CompiledComponent, backend: Backend) -> CapturePlan:
    """Row 5: add fluid.emissions when the backend has fluid.audit and the owner records it."""
    sources = owner.manifest.recording_sources
    if sources is None or SourceKind.FLUID_EMISSION.value not in sources.sources:
        return plan
    if not RenderCapture.services_of(backend):
        return plan
    return attrs.evolve(plan, sources=plan.sources | {SourceKind.FLUID_EMISSION.value})


def _suggest(name: str, candidates: Sequence[str]) -> str:
    close = difflib.get_close_matches(name, candidates, n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else " (fsr channels RUN.yaml lists them)"


def _check_channels(alias: str, plan: CapturePlan, channels: Sequence[ChannelDescriptor]) -> list[RunIssue]:
    """Selected channels exist and have the kind their use needs, with a did-you-mean."""
    declared = {c.name: c for c in channels}
    numeric = [c.name for c in channels if c.kind == "numeric"]
    issues = []
    for name in plan.observation_channels:
        if name in declared and declared[name].kind != "numeric":
            message = f"channel {name!r} has kind {declared[name].kind!r}, not 'numeric'"
        elif name not in declared:
            message = f"channel {name!r} is not a numeric channel of the scene{_suggest(name, numeric)}"
        else:
            continue
        issues.append(RunIssue(f"plugins.{alias}.config.streams.observations", message))
    for camera in plan.cameras:
        for role, name in camera.channels().items():
            where = f"plugins.{alias}.config.streams.cameras.{camera.alias}.{role}"
            same_kind = [c.name for c in channels if c.kind == role]
            if name not in declared:
                issues.append(RunIssue(where, f"channel {name!r} is not declared by the scene{_suggest(name, same_kind)}"))
            elif declared[name].kind != role:
                issues.append(RunIssue(
                    where, f"channel {name!r} has kind {declared[name].kind!r}; {role} needs a channel of kind "
                    f"{role!r}{_suggest(name, same_kind)}",
                ))
    return issues


def _rates(run: RunDocument) -> tuple[float, float, int]:
    sensor = float(run.runtime.sensor_hz)
    physics = float(run.runtime.physics_hz or sensor)
    ratio = physics / sensor
    if run.runtime.rate_policy == "exact":
        substeps = round(ratio)
        if substeps < 1 or abs(ratio - substeps) > 1e-9:
            raise RunConfigError(
                [RunIssue("runtime.physics_hz", f"with rate_policy exact, physics_hz ({physics:g}) must be a whole multiple of sensor_hz ({sensor:g})")]
            )
    else:
        substeps = max(1, round(ratio))
    return sensor, physics, substeps


def episode_template(name: str) -> str:
    """A sweep's name for a name without fields: ``episode.fsr`` -> ``episode-{episode:05d}.fsr``."""
    if is_template(name):
        return name
    stem, dot, suffix = name.rpartition(".")
    if not dot or not stem:
        return f"{name}-{{episode:05d}}"
    return f"{stem}-{{episode:05d}}.{suffix}"


def _rendered_names(
    document: RunDocument, compiled: CompiledRun, *, seed: int, episode: int, sweep: bool, suffix: str = ""
) -> tuple[dict[str, str], list[RunIssue]]:
    """alias -> this episode's output name, for every component whose name changes."""
    names: dict[str, str] = {}
    issues: list[RunIssue] = []
    for component in compiled.components:
        authored = value_at(component.config.to_mapping(), "output", "name")
        if not isinstance(authored, str):
            continue
        template = episode_template(authored) if sweep else authored
        where = f"plugins.{component.alias}.config.output.name"
        try:
            name = with_suffix(render_output_name(template, name=document.name, seed=seed, episode=episode), suffix)
        except (ValueError, IndexError, KeyError) as exc:
            issues.append(RunIssue(where, str(exc)))
            continue
        problem = check_output_name(name)
        if problem is not None:
            issues.append(RunIssue(where, f"the rendered name {problem}"))
            continue
        if name != authored:
            names[component.alias] = name
    return names, issues


def episode_names(
    path: str | os.PathLike[str], *, backend: str | None, seed: int | None, episodes: int
) -> tuple[int, list[tuple[str, ...]]]:
    """(first seed, each episode's output names) of a sweep, without building a backend.

    ``RunConfigError`` for an invalid Run, a bad template, or a template that gives two
    episodes the same name.
    """
    document = load_run(path)
    if backend is not None:
        document = document.with_backend(backend)
    first = seed if seed is not None else (document.runtime.seed or 0)
    compiled = compile_run(document)
    authored = {
        c.alias: name for c in compiled.components
        if isinstance(name := value_at(c.config.to_mapping(), "output", "name"), str)
    }
    result: list[tuple[str, ...]] = []
    seen: dict[tuple[str, str], int] = {}
    for episode in range(episodes):
        names, issues = _rendered_names(document, compiled, seed=first + episode, episode=episode, sweep=True)
        if issues:
            raise RunConfigError(issues)
        row = []
        for alias, original in authored.items():
            name = names.get(alias, original)
            earlier = seen.setdefault((alias, name), episode)
            if earlier != episode:
                raise RunConfigError([RunIssue(
                    f"plugins.{alias}.config.output.name",
                    f"the template {original!r} gives episodes {earlier} and {episode} the same name "
                    f"{name!r}; use {{episode}} or {{seed}} in it",
                )])
            row.append(name)
        result.append(tuple(row))
    return first, result


def check_duration(duration: float) -> None:
    """A finite, positive number of simulated seconds (``RunConfigError`` otherwise)."""
    if not (isinstance(duration, int | float) and math.isfinite(duration) and 0 < duration <= MAX_DURATION_S):
        raise RunConfigError([RunIssue(
            "--duration", f"must be a finite number of seconds above 0 and at most {MAX_DURATION_S:g} (got {duration!r})"
        )])


#: The longest episode ``fsr record`` accepts: one simulated year.
MAX_DURATION_S = 365 * 24 * 3600.0


def prepare_run(
    path: str | os.PathLike[str] | RunDocument,
    *,
    backend: str | None = None,
    duration_s: float | None = None,
    backend_options: Mapping[str, object] | None = None,
    seed: int | None = None,
    episode: int = 0,
    sweep: bool = False,
    name_suffix: str = "",
) -> PreparedRun:
    """Load, compile and plan a Run; ``RunConfigError`` for anything authored wrong.

    ``seed`` (default: ``runtime.seed``, else 0) reaches the backend; output-name
    templates are rendered with the Run's name, the seed and ``episode``.  ``sweep``
    gives a name without fields the ``-{episode:05d}`` suffix; ``name_suffix`` goes before
    each rendered name's extension.  ``path`` may also be a loaded ``RunDocument``.
    """
    if isinstance(path, RunDocument):
        document = path
    else:
        try:
            document = load_run(path)
        except RunConfigError:
            # Errors in the Run must not hide the plugins' own: report them all at once.
            load_and_compile(path)
            raise
    if backend is not None:
        document = document.with_backend(backend)
    if seed is None:
        seed = document.runtime.seed or 0
    compiled = compile_run(document)
    names, name_issues = _rendered_names(document, compiled, seed=seed, episode=episode, sweep=sweep, suffix=name_suffix)
    if name_issues:
        raise RunConfigError(name_issues)
    for alias, name in names.items():  # each component renames its own output (no second compile)
        compiled = with_output_name(compiled, alias, name)
    document = compiled.run
    sensor, physics, _substeps = _rates(document)
    duration = duration_s if duration_s is not None else (document.runtime.duration_s or 10.0)
    check_duration(duration)
    scene = value_at(document.scenario, "scene")
    scene_problems = [
        RunIssue(f"scenario.{key}", unknown_key_message(str(key), ("scene",)))
        for key in document.scenario if key != "scene"
    ] + scene_issues(document.backend, scene)
    if scene_problems:
        raise RunConfigError(scene_problems)
    spec = BackendSpec(
        scene=scene if isinstance(scene, Mapping) else {},
        options=dict(backend_options or {}),
        sensor_hz=sensor,
        physics_hz=physics,
        seed=seed,
    )
    try:
        built = create_backend(document.backend, spec)
    except UnknownBackend as exc:
        raise RunConfigError([RunIssue("backend", str(exc).removeprefix("backend: "))]) from None
    except (ValueError, TypeError) as exc:
        raise RunConfigError([RunIssue("scenario.scene", str(exc))]) from None
    except ImportError as exc:
        raise RunConfigError([RunIssue("backend", f"backend {document.backend!r} is not installed: {exc}")]) from None
    return prepare_built(compiled, built, seed=seed, episode=episode, duration_s=duration)


def prepare_built(
    compiled: CompiledRun, built: Backend, *, seed: int | None = 0, episode: int = 0, duration_s: float | None = None
) -> PreparedRun:
    """The capture plan and rates of a compiled Run whose backend a driver built itself
    (e.g. a Gymnasium environment presented as a backend); ``prepare_run`` ends here too.
    ``RunConfigError`` (and ``built`` closed) for a selection the backend cannot serve."""
    document = compiled.run
    sensor, physics, substeps = _rates(document)
    duration = duration_s if duration_s is not None else (document.runtime.duration_s or 10.0)
    channels = tuple(built.channels())
    document, compiled = with_task_includes(document, compiled, built)
    owners = [
        c for c in compiled.components
        if c.manifest.recording_sources is not None and c.manifest.recording_sources.sole_ordered_capture_owner
    ]
    if len(owners) > 1:
        built.close()
        raise RunConfigError(
            [RunIssue(f"plugins.{owners[1].alias}", f"only one sole ordered capture owner per Run (also {owners[0].alias!r})")]
        )
    effective = {c.alias: c.config.to_mapping() for c in compiled.components}  # once per component and episode
    plan = CapturePlan(sources=frozenset())
    owner = None
    if owners:
        owner = owners[0].alias
        plan = with_render_services(capture_plan(owners[0], channels, effective[owner]), owners[0], built)
        issues = _check_channels(owner, plan, channels)
        if issues:
            built.close()
            raise RunConfigError(issues)
    output_names = tuple(
        name for c in compiled.components if isinstance(name := value_at(effective[c.alias], "output", "name"), str)
    )
    return PreparedRun(
        compiled=compiled, backend_name=document.backend, backend=built, channels=channels, capture=plan,
        capture_owner=owner, sensor_hz=sensor, physics_hz=physics, substeps=substeps,
        rate_policy=document.runtime.rate_policy, duration_s=duration, output_names=output_names,
        seed=seed, episode=episode,
    )
