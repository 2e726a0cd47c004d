"""A small deterministic particle emitter: the embedded host's ``fluid.audit`` service.

A scene that declares ``scenario.scene.fluid`` gets one :class:`ParticleEmitter`.  Each
tick the emitter advances its particles ballistically (gravity, resting on a floor
plane) and emits up to ``rate_per_tick`` new ones at ``origin`` while capacity lasts.
It reports every tick that accepted or rejected particles as one compact
:class:`~fastsim_contract.render_services.FluidEmissionBatch`; its current positions
are packed float32 ``(N, 3)`` for ``render.state``.

Emitter rules:

    | # | rule                                                                      |
    |---|---------------------------------------------------------------------------|
    | 1 | particle ids are contiguous from 0 in emission order                      |
    | 2 | accepted = min(rate_per_tick, capacity - alive); rejected = the rest      |
    | 3 | a tick with accepted == rejected == 0 reports no batch                    |
    | 4 | the same seed gives the same positions (numpy PCG64)                      |
    | 5 | ``reset`` removes every particle; ids restart at 0, batch numbers do not  |
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import attrs
import numpy as np
import numpy.typing as npt

from fastsim_contract.render_services import FLUID_AUDIT_SERVICE, FluidEmissionBatch
from fastsim_recording_format.encoding import readonly

__all__ = ["FLUID_AUDIT_SERVICE", "ParticleEmitter", "emitter_from_scene"]

_GRAVITY: Final = np.array([0.0, 0.0, -9.81], dtype=np.float32)


def _vec3(value: object, default: tuple[float, float, float]) -> tuple[float, float, float]:
    if value is None:
        return default
    x, y, z = (float(v) for v in value)  # type: ignore[attr-defined]
    return (x, y, z)


@attrs.define(eq=False)
class ParticleEmitter:
    """A particle-fluid emitter stepped by the host after physics (rules 1-5)."""

    name: str = "water"
    origin: tuple[float, float, float] = (0.45, 0.0, 0.35)
    velocity: tuple[float, float, float] = (0.0, 0.0, -0.2)
    spread: float = 0.01
    rate_per_tick: int = 8
    capacity: int = 4096
    floor_z: float = 0.0
    seed: int = 0
    _rng: np.random.Generator = attrs.field(init=False, repr=False)
    _pos: npt.NDArray[np.float32] = attrs.field(init=False, repr=False)
    _vel: npt.NDArray[np.float32] = attrs.field(init=False, repr=False)
    alive: int = attrs.field(init=False, default=0)
    batches: int = attrs.field(init=False, default=0)

    def __attrs_post_init__(self) -> None:
        if self.rate_per_tick < 0 or self.capacity < 0:
            raise ValueError("fluid: rate_per_tick and capacity must be >= 0")
        self._rng = np.random.default_rng(self.seed)
        self._pos = np.zeros((self.capacity, 3), dtype=np.float32)
        self._vel = np.zeros((self.capacity, 3), dtype=np.float32)

    def reset(self) -> None:
        """Remove every particle (rule 5)."""
        self.alive = 0

    def step(self, dt: float) -> FluidEmissionBatch | None:
        """Advance ``dt`` seconds, emit, and report the tick's batch (rules 2-3)."""
        n = self.alive
        if n:
            vel, pos = self._vel[:n], self._pos[:n]
            vel += _GRAVITY * np.float32(dt)
            pos += vel * np.float32(dt)
            resting = pos[:, 2] < self.floor_z
            pos[resting, 2] = self.floor_z
            vel[resting] = 0.0
        accepted = min(self.rate_per_tick, self.capacity - n)
        rejected = self.rate_per_tick - accepted
        if accepted == 0 and rejected == 0:
            return None
        if accepted:
            jitter = self._rng.uniform(-self.spread, self.spread, (accepted, 3))
            self._pos[n : n + accepted] = np.asarray(self.origin, dtype=np.float32) + jitter
            self._vel[n : n + accepted] = self.velocity
            self.alive = n + accepted
        batch = FluidEmissionBatch(
            emitter=self.name,
            batch=self.batches,
            first_particle=n,
            accepted=accepted,
            rejected=rejected,
            origin=self.origin,
            velocity=self.velocity,
            spread=self.spread,
        )
        self.batches += 1
        return batch

    def positions(self) -> npt.NDArray[np.float32]:
        """The live particles' positions: a new read-only packed float32 ``(N, 3)`` array."""
        return readonly(self._pos[: self.alive].copy())


def emitter_from_scene(scene: Mapping[str, object], seed: int = 0) -> ParticleEmitter | None:
    """The emitter a scene declares under ``fluid:`` (``None`` without one)."""
    raw = scene.get("fluid")
    if not isinstance(raw, Mapping):
        return None
    spec: Mapping[str, Any] = raw
    return ParticleEmitter(
        name=str(spec.get("name", "water")),
        origin=_vec3(spec.get("origin"), (0.45, 0.0, 0.35)),
        velocity=_vec3(spec.get("velocity"), (0.0, 0.0, -0.2)),
        spread=float(spec.get("spread", 0.01)),
        rate_per_tick=int(spec.get("rate_per_tick", 8)),
        capacity=int(spec.get("capacity", 4096)),
        floor_z=float(spec.get("floor_z", 0.0)),
        seed=seed,
    )
