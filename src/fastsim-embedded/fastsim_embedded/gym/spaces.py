"""The spaces of ``FastSimRun-v0``: observations from the Run's channels, actions from the
scene's controls, and the checks between them and the host.

    | # | space        | built from                                                          |
    |---|--------------|---------------------------------------------------------------------|
    | 1 | observation  | ``Dict``: one ``Box`` per numeric channel the Run records (all the  |
    |   |              | scene's numeric channels without Record), shape and dtype as       |
    |   |              | declared, except ``task.reward`` (the step's reward); with          |
    |   |              | ``cameras=True`` one ``uint8`` ``Box`` per camera's RGB channel     |
    | 2 | action       | the scene's ``controls()`` (``ControlSpec``): one control is a     |
    |   |              | float64 ``Box`` with its bounds, several a ``Dict`` by command name |

``ObservationReader`` turns what a tick published (the packed buffer, the blocks, or the
mapping: ``TickResult.observation``) into the observation, slicing the very arrays the
host published, so each value is bit for bit what Record wrote for that tick.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from gymnasium import spaces

from fastsim_contract.values import ChannelDescriptor
from fastsim_embedded.backends.base import Backend, CameraReading, ControlCommand, ControlSpec

__all__ = ["ObservationReader", "action_space", "check_action", "commands_for", "observation_space"]

#: the step's reward is returned by ``step``, not observed
REWARD_CHANNEL = "task.reward"


def observation_space(numeric: Sequence[ChannelDescriptor], images: Sequence[ChannelDescriptor]) -> spaces.Dict:
    """``Dict`` of the observed numeric channels (then the camera images)."""
    boxes: dict[str, spaces.Space[Any]] = {
        c.name: spaces.Box(-np.inf, np.inf, shape=tuple(c.shape), dtype=np.dtype(c.dtype)) for c in numeric
    }
    for c in images:
        boxes[c.name] = spaces.Box(0, 255, shape=tuple(c.shape), dtype=np.uint8)
    return spaces.Dict(boxes)


def action_space(controls: Sequence[ControlSpec]) -> spaces.Space[Any]:
    """One control: its ``Box``; several: a ``Dict`` of them by command name."""
    def box(spec: ControlSpec) -> spaces.Box:
        return spaces.Box(np.array(spec.low), np.array(spec.high), dtype=np.float64)

    if len(controls) == 1:
        return box(controls[0])
    return spaces.Dict({spec.command: box(spec) for spec in controls})


def check_action(spec: ControlSpec, action: object) -> list[float]:
    """``action`` as plain floats within ``spec`` (the command's argument, converted once);
    ``ValueError`` names the element and bound.  The bounds are checked in C over the list
    (``map``); only a failing action is walked element by element for the message."""
    try:
        values = np.asarray(action, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"action for {spec.command}: not numbers ({exc})") from None
    size = len(spec.element_names)
    if values.shape != (size,):
        raise ValueError(f"action for {spec.command}: expected shape ({size},), got {values.shape}")
    floats: list[float] = values.tolist()
    if all(map(math.isfinite, floats)) and all(map(operator.le, spec.low, floats)) \
            and all(map(operator.le, floats, spec.high)):
        return floats
    for k, value in enumerate(floats):
        name = spec.element_names[k]
        if not math.isfinite(value):
            raise ValueError(f"action element {name!r} (index {k}) is {value}, not a finite number")
        if value < spec.low[k]:
            raise ValueError(f"action element {name!r} (index {k}) = {value!r} is below its bound {spec.low[k]!r}")
        if value > spec.high[k]:
            raise ValueError(f"action element {name!r} (index {k}) = {value!r} is above its bound {spec.high[k]!r}")
    return floats  # only a NaN bound fails the check above and passes here (as it always did)


def commands_for(controls: Sequence[ControlSpec], action: object, prefix: str) -> list[ControlCommand]:
    """The commands carrying ``action`` (every element checked first: nothing is sent for
    an action outside the space)."""
    if len(controls) == 1:
        spec = controls[0]
        return [spec.command_for(prefix, check_action(spec, action))]
    if isinstance(action, Mapping):
        missing = [c.command for c in controls if c.command not in action]
        if missing:
            raise ValueError(f"action: missing {missing[0]!r}")
        parts = dict(action)
    else:
        raise ValueError(f"action: expected a mapping of {[c.command for c in controls]}")
    checked = [(spec, check_action(spec, parts[spec.command])) for spec in controls]
    return [spec.command_for(f"{prefix}-{spec.command}", values) for spec, values in checked]


class ObservationReader:
    """Reads the observed channels out of one tick's published sample."""

    def __init__(self, backend: Backend, names: Sequence[str], images: Sequence[str]) -> None:
        self.backend = backend
        self.names = tuple(names)
        self.images = tuple(images)
        packing = getattr(backend, "numeric_packing", None)
        self._slices: dict[str, tuple[int, int, str, tuple[int, ...]]] = {}
        if callable(packing):
            offset = 0
            for name, dtype, shape in packing():
                width = np.dtype(dtype).itemsize * math.prod(shape)
                self._slices[name] = (offset, offset + width, dtype, tuple(shape))
                offset += width
        layout = getattr(backend, "numeric_layout", None)
        self._layout: Mapping[str, tuple[int, int]] = layout() if callable(layout) else {}
        self._latest: dict[str, np.ndarray] = {}

    def numeric(self, sample: object) -> dict[str, np.ndarray]:
        """The observed channels of ``sample`` (``None``: nothing was published, the
        backend is sampled now)."""
        if sample is None:
            packed = getattr(self.backend, "sample_numeric_packed", None)
            sample = packed() if callable(packed) and self._slices else self.backend.sample_numeric()
        if isinstance(sample, np.ndarray):
            raw = sample.view(np.uint8)
            out = {}
            for name in self.names:
                start, end, dtype, shape = self._slices[name]
                out[name] = raw[start:end].view(dtype).reshape(shape)
            return out
        if isinstance(sample, tuple):
            return {name: sample[self._layout[name][0]][self._layout[name][1]] for name in self.names}
        assert isinstance(sample, Mapping)  # noqa: S101 - the third publication form
        return {name: np.asarray(sample[name]) for name in self.names}

    def cameras(self, readings: Sequence[CameraReading], shapes: Mapping[str, tuple[int, ...]]) -> dict[str, np.ndarray]:
        """The observed RGB images: the tick's readings, else the backend's now (nothing
        published them), else the latest frame on a tick without one (a camera slower
        than the sensor rate), black before the first."""
        if not self.images:
            return {}
        by_channel = {r.channel: r.value for r in readings}
        if any(name not in by_channel for name in self.images):
            by_channel = {r.channel: r.value for r in (readings or self.backend.sample_cameras())}
        out = {}
        for name in self.images:
            if name in by_channel:
                out[name] = self._latest[name] = by_channel[name]
            else:  # a copy: every step returns its own arrays (Gymnasium's rule)
                latest = self._latest.get(name)
                out[name] = np.zeros(shapes[name], dtype=np.uint8) if latest is None else latest.copy()
        return out
