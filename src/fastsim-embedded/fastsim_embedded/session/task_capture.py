"""A scene's task is always recorded: its channels join an explicit observation include.

When the scene declares a task (``scenario.scene.task``), its numeric channels
(``task.reward`` and the task's positions, ``fastsim_embedded.backends.tasks``) are the
dataset's reward and goal.  A capture owner that records every numeric channel
(``all_numeric``) records them already; one with an ``explicit`` include gets them added
(key: the channel name with ``_`` for ``.``), so every Run with a task records its
reward per tick.  ``mode: none`` stays none: the author asked for no numeric channel.
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from fastsim_contract.run import RunDocument
from fastsim_contract.run_compiler import CompiledRun, compile_run
from fastsim_contract.run_structure import value_at
from fastsim_embedded.backends.base import Backend
from fastsim_embedded.backends.tasks import TaskTracker

__all__ = ["task_includes", "with_includes", "with_task_includes"]


def task_includes(compiled: CompiledRun, backend: Backend) -> dict[str, dict[str, str]]:
    """alias -> the task channels its explicit observation include lacks (a scene's task
    is always recorded: its reward per tick is the dataset's reward)."""
    task = getattr(backend, "task", None)
    if not isinstance(task, TaskTracker):
        return {}
    wanted = [c.name for c in task.channels()]
    extra: dict[str, dict[str, str]] = {}
    for component in compiled.components:
        sources = component.manifest.recording_sources
        if sources is None or not sources.sole_ordered_capture_owner:
            continue
        observations = value_at(component.config.to_mapping(), "streams", "observations")
        if not isinstance(observations, Mapping) or observations.get("mode") != "explicit":
            continue
        include = observations.get("include")
        entries = include.values() if isinstance(include, Mapping) else ()
        have = {str(v.get("channel")) for v in entries if isinstance(v, Mapping)}
        missing = {name.replace(".", "_"): name for name in wanted if name not in have}
        if missing:
            extra[component.alias] = missing
    return extra


def with_includes(document: RunDocument, extra: Mapping[str, Mapping[str, str]]) -> RunDocument:
    """``document`` with each alias's observation include extended by ``extra`` (key -> channel)."""
    entries = []
    for entry in document.plugins:
        if entry.alias in extra:
            config = dict(entry.config)
            streams = dict(config.get("streams") or {})
            observations = dict(streams.get("observations") or {})
            include = dict(observations.get("include") or {})
            include.update({key: {"channel": name} for key, name in extra[entry.alias].items() if key not in include})
            config["streams"] = {**streams, "observations": {**observations, "include": include}}
            entry = attrs.evolve(entry, config=config)
        entries.append(entry)
    return attrs.evolve(document, plugins=tuple(entries))


def with_task_includes(
    document: RunDocument, compiled: CompiledRun, backend: Backend
) -> tuple[RunDocument, CompiledRun]:
    """``(document, compiled)`` with the task's channels in every explicit include."""
    extra = task_includes(compiled, backend)
    if not extra:
        return document, compiled
    document = with_includes(document, extra)
    return document, compile_run(document)
