"""The backend protocol: what the embedded host needs from a simulated scene.

A backend owns the simulation state; the host owns time, sequencing and publication.
The host drives one backend per Run on the simulation thread, one *tick* per sensor
sample (``runtime.sensor_hz``), each tick advancing physics by ``substeps`` steps of
``1 / physics_hz``:

    1. ``script(tick)``          what the scene scripts for this tick (reset, commands, events)
    2. ``reset(generation)``     when the script asks for it: a new Runtime generation
    3. ``apply_control(cmd)``    for each scripted command, after Core audits it
    4. ``step(substeps)``        advance physics
    5. ``sample_numeric()``      every declared numeric channel, as read-only arrays
                                 (or ``sample_numeric_packed()``, see ``PackedSampling``,
                                 or ``sample_numeric_blocks()``, see ``BlockSampling``)
    6. ``sample_cameras()``      every declared camera channel (``()`` when none)

Backends are deterministic for a given :class:`BackendSpec` (same seed, same samples),
never publish anything themselves, and never see the Record plugin.  Register one
with :func:`fastsim_embedded.backends.register_backend`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol

import attrs
import numpy.typing as npt

from fastsim_contract.values import ChannelDescriptor

__all__ = [
    "Backend",
    "BackendFactory",
    "BlockSampling",
    "BackendSpec",
    "CameraReading",
    "ControlCommand",
    "ControlOutcome",
    "ControlSpec",
    "PackedSampling",
    "PosedScene",
    "ReadOnlySamples",
    "ScenePluginEvent",
    "TickScript",
]

Array = npt.NDArray[Any]


class ReadOnlySamples(dict[str, Any]):
    """A backend's promise: every value is a read-only array nobody mutates afterwards.

    ``sample_numeric`` may return one; the host then skips its per-array immutability
    check (any other mapping is checked, and writeable arrays are copied and frozen).
    """

    __slots__ = ()


@attrs.frozen
class BackendSpec:
    """Everything a backend factory gets: the authored scene and the runtime rates."""

    scene: Mapping[str, object] = attrs.field(factory=dict)  # the Run's scenario.scene
    options: Mapping[str, object] = attrs.field(factory=dict)  # backend-specific knobs
    sensor_hz: float = 120.0
    physics_hz: float = 120.0  # an integer multiple of sensor_hz
    seed: int = 0

    def knobs(self, backend: str) -> tuple[dict[str, object], dict[str, Any]]:
        """``(scene, knobs)``: the scene as a dict, and the backend's knobs (the scene's
        ``<backend>`` mapping, overridden by ``options``)."""
        scene = dict(self.scene)
        knobs: dict[str, Any] = {}
        nested = scene.get(backend)
        if isinstance(nested, Mapping):
            knobs.update(nested)
        knobs.update(self.options)
        return scene, knobs


@attrs.frozen
class ControlCommand:
    """A control command the scene scripts; Core audits it before the backend applies it."""

    command_id: str
    name: str
    target: str
    args: Mapping[str, object] = attrs.field(factory=dict)


@attrs.frozen
class ControlSpec:
    """A command the scene accepts from a driver (``controls()``): one vector argument
    ``arg`` whose elements (``element_names``, ``units``) lie within ``low``..``high``.

    The Gymnasium environment builds its ``action_space`` from these and sends each
    action as ``command_for(...)``, through Core's audited control path."""

    command: str
    target: str
    arg: str
    element_names: tuple[str, ...]
    units: tuple[str, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]

    def command_for(self, command_id: str, values: Sequence[float] | Array) -> ControlCommand:
        """The command carrying ``values`` (as plain floats) in ``arg``."""
        return ControlCommand(command_id, self.command, self.target, {self.arg: [float(v) for v in values]})


@attrs.frozen
class ControlOutcome:
    """What applying a command did; published as the control result."""

    accepted: bool
    detail: Mapping[str, object] = attrs.field(factory=dict)


@attrs.frozen
class ScenePluginEvent:
    """An event a scene component emits; published on the plugin-event source."""

    name: str
    data: Mapping[str, object] = attrs.field(factory=dict)
    emitter: str = "scene"


@attrs.frozen
class TickScript:
    """What the scene scripts for one tick, before it is stepped."""

    reset: bool = False
    commands: tuple[ControlCommand, ...] = ()
    events: tuple[ScenePluginEvent, ...] = ()


@attrs.frozen
class CameraReading:
    """One camera channel's sample in one tick (RGB, K, translation or quaternion)."""

    camera: str
    channel: str
    role: str  # "rgb" | "intrinsics" | "translation" | "quaternion_xyzw"
    value: Array  # read-only
    calibration_digest: str
    profile: Mapping[str, object] | None = None  # present on intrinsics samples; never mutated once handed over


class Backend(Protocol):
    """A deterministic scene the host steps on the simulation thread."""

    @property
    def name(self) -> str: ...

    def channels(self) -> Sequence[ChannelDescriptor]:
        """Every channel the scene exposes, declared before the run starts."""
        ...

    def reset(self, generation: int) -> None:
        """Start Runtime generation ``generation`` (0 before the first tick)."""
        ...

    def script(self, tick: int) -> TickScript:
        """The reset, commands and events scripted for ``tick`` (1-based)."""
        ...

    def apply_control(self, command: ControlCommand) -> ControlOutcome: ...

    def step(self, substeps: int) -> None:
        """Advance physics by ``substeps`` steps of ``1 / physics_hz``."""
        ...

    def sample_numeric(self) -> Mapping[str, Array]:
        """Every declared numeric channel as a read-only array (``ReadOnlySamples`` to vouch)."""
        ...

    def sample_cameras(self) -> Sequence[CameraReading]: ...

    def close(self) -> None: ...


class BlockSampling(Protocol):
    """Optional capability: numeric channels as rows of a few read-only 2-D blocks.

    When a backend has both methods the host publishes observation ticks as
    ``RowViews`` over the blocks (no per-channel array object on the simulation thread).
    ``numeric_layout()`` is fixed for the Run: channel -> (block index, row index).
    ``sample_numeric_blocks()`` returns fresh read-only blocks each tick, never mutated.
    """

    def numeric_layout(self) -> Mapping[str, tuple[int, int]]: ...

    def sample_numeric_blocks(self) -> tuple[Array, ...]: ...


class PackedSampling(Protocol):
    """Optional capability: every numeric channel packed in ONE read-only buffer per tick.

    The host prefers it over ``BlockSampling``: it publishes each observation tick as
    ``PackedValues`` over that one buffer (zero-copy when the plan selects every channel
    in the backend's order, otherwise one gather copy in C), so a 90-channel tick costs
    the simulation thread one envelope and the Record worker one ``bytes`` copy.
    ``numeric_packing()`` is fixed for the Run: ``(channel, dtype string, shape)`` in
    buffer order, back to back, no padding.  ``sample_numeric_packed()`` returns the
    current state's buffer: a fresh read-only C-contiguous array, never mutated.
    """

    def numeric_packing(self) -> Sequence[tuple[str, str, tuple[int, ...]]]: ...

    def sample_numeric_packed(self) -> Array: ...


class PosedScene:
    """The part of :class:`Backend` every scene that only Replay poses shares: nothing to
    reset (each tick is posed from the recording), no script (Replay scripts the ticks) and
    no control.  ``no_control`` is the error its refusal names."""

    __slots__ = ()
    no_control = "a posed scene takes no control"

    def reset(self, generation: int) -> None:
        """Nothing to reset: Replay poses every tick from the recording."""

    def script(self, tick: int) -> TickScript:
        """No script: Replay scripts the ticks (``ReplayBackend.script``)."""
        return TickScript()

    def apply_control(self, command: ControlCommand) -> ControlOutcome:
        """Refused: a posed scene takes no control."""
        return ControlOutcome(False, {"error": self.no_control})


#: A backend registry entry: builds a backend for one Run.
BackendFactory = Callable[[BackendSpec], Backend]
