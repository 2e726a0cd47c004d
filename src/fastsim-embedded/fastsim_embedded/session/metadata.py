"""What the host says about one Run (``EmbeddedRunContext.metadata``), and the scene's task."""

from __future__ import annotations

from collections.abc import Mapping

import attrs

from fastsim_embedded.backends.tasks import TASK_RESULT_EVENT, TaskTracker
from fastsim_embedded.session.compile import PreparedRun

__all__ = ["run_metadata", "task_of"]


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
