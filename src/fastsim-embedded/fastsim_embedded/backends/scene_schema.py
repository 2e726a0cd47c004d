"""The ``scenario.scene`` schema each backend declares, checked before the backend is built.

A schema is a tree of ``Key`` values: a leaf has a ``check`` (``None`` when the value is
fine, else the message), a mapping has fixed ``keys`` (anything else is a stray key,
reported with a did-you-mean), or free keys whose values all follow ``each`` (the
``robots`` aliases).  Every problem is one ``RunIssue`` with its full dotted path:

    scenario.scene.mujoco.widht: unknown key; did you mean 'width'?
    scenario.scene.robots.robot.use: unknown robot 'robot://droid/panda-2f58' for backend
        'mujoco'; did you mean 'robot://droid/panda-2f85'?

A backend registered without a schema (a test's own backend) is not checked here.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import attrs

from fastsim_contract.run_errors import RunIssue
from fastsim_contract.run_structure import describe, unknown_key_message
from fastsim_embedded.backends.mujoco_randomize import parse_randomization
from fastsim_embedded.render.camera_mounts import parse_mounts

__all__ = ["KNOWN_ROBOTS", "SCENE_SCHEMAS", "TASK_OBJECTS", "Key", "scene_issues"]

Check = Callable[[object], "str | None"]

#: Robot URIs the embedded scenes can stand in for (both drive the same models).
KNOWN_ROBOTS: Final = ("robot://droid/panda-2f85", "robot://example/robot")
#: The DROID-like scene's cameras (``mujoco_scene.CAMERA_NAMES``, without importing MuJoCo).
MUJOCO_CAMERAS: Final = ("exterior_left", "exterior_right", "wrist")
#: The DROID-like scene's objects a pick task may name (``mujoco_scene.OBJECT_NAMES``).
TASK_OBJECTS: Final = ("cube", "can", "block")


@attrs.frozen
class Key:
    """One node of a scene schema."""

    check: Check | None = None
    keys: Mapping[str, Key] | None = None
    each: Key | None = None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def number(*, low: float = 0.0, high: float = 1e9, above: bool = True, nullable: bool = False) -> Check:
    """A finite number in the range (``above``: strictly greater than ``low``)."""
    def check(value: object) -> str | None:
        if value is None and nullable:
            return None
        if not _is_number(value) or not (value > low if above else value >= low) or value > high:  # type: ignore[operator]
            bound = f"above {low:g}" if above else f"from {low:g}"
            tail = " or null" if nullable else ""
            return f"must be a number {bound} through {high:g}{tail} (got {describe(value)})"
        return None
    return check


def integer(low: int, high: int) -> Check:
    """An integer from ``low`` through ``high``."""
    def check(value: object) -> str | None:
        if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
            return f"must be an integer from {low} through {high} (got {describe(value)})"
        return None
    return check


def text(value: object) -> str | None:
    """A non-empty string."""
    return None if isinstance(value, str) and value else f"must be a non-empty string (got {describe(value)})"


def vec3(value: object) -> str | None:
    """Three finite numbers."""
    if isinstance(value, list | tuple) and len(value) == 3 and all(_is_number(v) for v in value):
        return None
    return f"must be a list of 3 numbers (got {describe(value)})"


def names(choices: Sequence[str]) -> Check:
    """A list drawn from ``choices`` (without repeats)."""
    def check(value: object) -> str | None:
        if not isinstance(value, list | tuple) or not all(isinstance(v, str) for v in value):
            return f"must be a list drawn from {list(choices)} (got {describe(value)})"
        for item in value:
            if item not in choices:
                close = difflib.get_close_matches(item, choices, n=1)
                hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(choices)})"
                return f"unknown camera {item!r}{hint}"
        if len(set(value)) != len(value):
            return "must not repeat a camera"
        return None
    return check


def choice(what: str, choices: Sequence[str]) -> Check:
    """One of ``choices``, with a did-you-mean."""
    def check(value: object) -> str | None:
        if isinstance(value, str) and value in choices:
            return None
        close = difflib.get_close_matches(str(value), choices, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(choices)})"
        return f"unknown {what} {describe(value)}{hint}"
    return check


def robot(backend: str) -> Check:
    """A robot URI this backend can stand in for."""
    def check(value: object) -> str | None:
        if isinstance(value, str) and value in KNOWN_ROBOTS:
            return None
        close = difflib.get_close_matches(str(value), KNOWN_ROBOTS, n=1, cutoff=0.5)
        hint = f"; did you mean {close[0]!r}?" if close else f" (known: {', '.join(KNOWN_ROBOTS)})"
        return f"unknown robot {describe(value)} for backend {backend!r}{hint}"
    return check


def randomize(value: object) -> str | None:
    """``false``, or a mapping of ranges (``mujoco_randomize``)."""
    try:
        parse_randomization(value)
    except ValueError as exc:  # "mujoco.randomize.<key>: message": report at <key>
        where, _, message = str(exc).partition(": ")
        sub = where.removeprefix("mujoco.randomize")
        return f"{sub}: {message}" if sub.startswith(".") else message
    return None


def mounts(value: object) -> str | None:
    """Added cameras (``camera_mounts``): ``.name.key: message`` on the first problem."""
    try:
        parse_mounts(value, "")
    except ValueError as exc:
        return str(exc).removeprefix(": ")
    return None


def _robots(backend: str) -> Key:
    return Key(each=Key(keys={"use": Key(check=robot(backend))}))


FLUID: Final = Key(keys={
    "name": Key(check=text),
    "origin": Key(check=vec3),
    "velocity": Key(check=vec3),
    "spread": Key(check=number(high=10.0, above=False)),
    "rate_per_tick": Key(check=integer(0, 100_000)),
    "capacity": Key(check=integer(1, 10_000_000)),
    "floor_z": Key(check=number(low=-1e6, high=1e6, above=False)),
})
_HOLD: Final = Key(check=number(high=1e6, above=False))
REACH: Final = Key(keys={
    "tolerance_m": Key(check=number(high=10.0)), "hold_s": _HOLD, "target": Key(check=vec3),
})
PICK: Final = Key(keys={
    "object": Key(check=choice("object", TASK_OBJECTS)), "height_m": Key(check=number(high=10.0)),
    "fall_m": Key(check=number(high=10.0)), "hold_s": _HOLD,
})
_SYNTHETIC_KNOBS: Final = {
    "numeric_channels": Key(check=integer(0, 100_000)),
    "dof": Key(check=integer(1, 10_000)),
    "command_every_s": Key(check=number(high=1e6, nullable=True)),
    "event_every_s": Key(check=number(high=1e6, nullable=True)),
    "reset_every_s": Key(check=number(high=1e6, nullable=True)),
}
_CAMERA_KNOBS: Final = {
    "cameras": Key(check=integer(0, 64)),
    "camera_width": Key(check=integer(1, 8192)),
    "camera_height": Key(check=integer(1, 8192)),
    "camera_hz": Key(check=number(high=1e6)),
    "camera_fovy": Key(check=number(high=179.0)),
}

#: backend name -> the schema of its ``scenario.scene``
SCENE_SCHEMAS: Final[dict[str, Key]] = {
    "synthetic": Key(keys={
        "robots": _robots("synthetic"), "synthetic": Key(keys=_SYNTHETIC_KNOBS), "fluid": FLUID,
        "task": Key(keys={"reach": REACH}),
    }),
    "synthetic+cameras": Key(keys={
        "robots": _robots("synthetic+cameras"),
        "synthetic": Key(keys={**_SYNTHETIC_KNOBS, **_CAMERA_KNOBS}),
        "fluid": FLUID,
        "task": Key(keys={"reach": REACH}),
    }),
    "mujoco": Key(keys={
        "robots": _robots("mujoco"),
        "mujoco": Key(keys={
            "width": Key(check=integer(1, 4096)),
            "height": Key(check=integer(1, 4096)),
            "cameras": Key(check=names(MUJOCO_CAMERAS)),
            "control_hz": Key(check=number(high=10_000.0)),
            "reset_every_s": Key(check=number(high=1e6, nullable=True)),
            "randomize": Key(check=randomize),
            "extra_cameras": Key(check=mounts),
        }),
        "fluid": FLUID,
        "task": Key(keys={"pick": PICK, "reach": REACH}),
    }),
    "mujoco-shapes": Key(keys={
        "robots": _robots("mujoco-shapes"),
        "mujoco-shapes": Key(keys={
            "width": Key(check=integer(1, 4096)),
            "height": Key(check=integer(1, 4096)),
            "cameras": Key(check=names(("front", "top"))),  # mujoco_shapes.CAMERAS
        }),
    }),
}


def _walk(value: object, key: Key, path: str, out: list[RunIssue]) -> None:
    if key.check is not None:
        message = key.check(value)
        if message is not None and message.startswith("."):  # ".sub.path: message"
            sub, _, message = message.partition(": ")
            out.append(RunIssue(path + sub, message))
        elif message is not None:
            out.append(RunIssue(path, message))
        return
    if not isinstance(value, Mapping):
        out.append(RunIssue(path, f"must be a mapping (got {describe(value)})"))
        return
    for name, item in value.items():
        where = f"{path}.{name}"
        if key.keys is not None:
            child = key.keys.get(str(name))
            if child is None:
                out.append(RunIssue(where, unknown_key_message(str(name), key.keys)))
                continue
        else:
            assert key.each is not None  # noqa: S101 - a Key has check, keys or each
            child = key.each
        _walk(item, child, where, out)


def scene_issues(backend: str, scene: object, path: str = "scenario.scene") -> list[RunIssue]:
    """Every problem of ``scene`` against ``backend``'s schema (none without a schema)."""
    schema = SCENE_SCHEMAS.get(backend)
    if schema is None:
        return []
    out: list[RunIssue] = []
    _walk({} if scene is None else scene, schema, path, out)
    return out
