"""One tick of a Run, and the scripted driver that plays a scene's own script.

Per tick, on the calling (simulation) thread (``TickStepper.tick``):

    | # | step                                                                         |
    |---|------------------------------------------------------------------------------|
    | 1 | stamp the tick (``advance``): every item of this tick carries tick/sim time   |
    |   | (``tick / sensor_hz``, or the backend's ``sim_time_ns(tick)`` when it has    |
    |   | one: a render Replay keeps its source's simulation clock)                   |
    | 2 | a reset (scripted, or asked for by the driver) starts a generation           |
    |   | (barrier + generation.started)                                               |
    | 3 | each command: audit (issued) -> ``apply_control`` -> result                  |
    | 4 | ``step(substeps)``, then the render side (fluid emitter step, render.state,  |
    |   | geometry; ``RenderCapture``, only when the plan selects render.state or      |
    |   | geometry or the backend exposes fluid.audit), all of the same stepped state  |
    | 5 | observations (only when the plan selects numeric channels), then cameras     |
    | 6 | plugin events                                                                |

The scripted driver (``run_loop``) adds, per tick:

    | # | step                                                                         |
    |---|------------------------------------------------------------------------------|
    | 0 | stop if a completion request arrived                                         |
    | 1 | ``script(tick)``: the scene's own reset, commands and events -> ``tick``      |
    | 2 | the optional host-work callback, then progress                               |
    | 3 | pacing, only with ``realtime_factor``: sleep until wall time catches up with |
    |   | sim time / factor (default: as fast as possible)                             |
    | 4 | flow control, only without ``realtime_factor``: while a consumer's gauge is  |
    |   | pressed, wait for it, bounded (``fastsim_embedded.host.flow``, FC1-FC7)      |

Observation blocks (``fastsim_embedded.host.blocks``, BK1-BK8) are for the scripted
driver only: ``run_loop`` (and ``Session.play_script``: ``fsr record``) binds the packed
observer with the host's own bound ``SCRIPTED_MAX_BLOCK``; the bus then stamps blocks
when every ``observations`` subscriber opted in.  A Run delivers a pending block once its
oldest tick is ``BLOCK_AGE_S`` of wall time old (BK4; paced: before a pacing sleep that
would carry it past that, so a tick period above it delivers each tick; unpaced: checked
after each tick, so a slow unpaced Run holds no block longer), and the loop delivers
what is pending when it ends (BK6).  Every other driver (``Session.step``: the Gymnasium
paths, tests) builds its ``TickStepper`` with ``max_block=1``: per-tick stamping.

After the last tick the host requests a normal completion (it loses if anything else
already won).  A backend exception becomes a failed completion; KeyboardInterrupt a
stopped one.  Any other driver (the Gymnasium environment, a test) calls ``tick`` with
its own script through ``fastsim_embedded.session.session.Session.step``; neither copies the other.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from fastsim_contract.values import CompletionKind
from fastsim_embedded.backends.base import Backend, CameraReading, ControlOutcome, TickScript
from fastsim_embedded.host.blocks import BLOCK_AGE_S
from fastsim_embedded.host.core import EmbeddedHost
from fastsim_embedded.host.observations import ObservationPublisher
from fastsim_embedded.render.capture import RenderCapture

__all__ = [
    "SCRIPTED_MAX_BLOCK", "HostWork", "Progress", "TickResult", "TickStepper", "observation_publisher", "run_loop",
    "tick_count",
]

#: The host's own bound on an observation block in the scripted driver's Runs (two
#: seconds at 120 Hz; the subscribers' ``max_block`` may lower it, and a paced Run
#: delivers a block once its oldest tick is 0.25 s old, BK4).  The one setting that
#: decides whether a Run may stamp blocks: driven steppers keep 1 (per tick).
SCRIPTED_MAX_BLOCK = 240

HostWork = Callable[[int], None]
Progress = Callable[[int, int], None]


@attrs.frozen
class TickResult:
    """What one tick did: its number and sim time, each command's outcome (in order),
    and the numeric sample published for it (``None`` when the plan selects none): the
    backend's packed buffer, its blocks, or its per-channel mapping, exactly as published;
    and the camera readings published for it (``()`` when the plan captures no camera)."""

    tick: int
    sim_time_ns: int
    outcomes: tuple[ControlOutcome, ...] = ()
    observation: object = None
    cameras: Sequence[CameraReading] = ()


def _sample_and_publish(sample: Callable[[], object], publish: Callable[[Any], object]) -> Callable[[], object]:
    """One observation tick: take the backend's sample, publish it, return it."""

    def observe() -> object:
        value = sample()
        publish(value)
        return value

    return observe


def observation_publisher(
    observations: ObservationPublisher, backend: Backend, max_block: int = 1
) -> Callable[[], object] | None:
    """What publishes one observation tick: ``None`` when the plan selects no numeric
    channel (no polling at all); else the cheapest capability the backend has --
    ``PackedSampling`` (one buffer; observation blocks of up to ``max_block`` ticks when
    the bus grants them), then ``BlockSampling`` (row views), then the per-channel
    ``sample_numeric`` mapping.  The callable returns the sample it published."""
    if not observations.wants_observations():
        return None
    packed = getattr(backend, "sample_numeric_packed", None)
    packing = getattr(backend, "numeric_packing", None)
    if callable(packed) and callable(packing) and observations.bind_numeric_packing(packing()):
        return observations.packed_observer(packed, max_block)
    blocks = getattr(backend, "sample_numeric_blocks", None)
    layout = getattr(backend, "numeric_layout", None)
    if callable(blocks) and callable(layout) and observations.bind_numeric_layout(layout()):
        return _sample_and_publish(blocks, observations.publish_observation_blocks)
    return _sample_and_publish(backend.sample_numeric, observations.publish_observation)


def tick_count(duration_s: float, sensor_hz: float) -> int:
    """Ticks in ``duration_s`` simulated seconds at ``sensor_hz``."""
    return max(0, math.floor(duration_s * sensor_hz + 1e-9))


class TickStepper:
    """Steps one Run's backend one tick at a time and publishes what the tick produced.

    Built once per Run (after the plugins started): it binds the cheapest observation
    path (``max_block``: the host's bound on an observation block, 1 = per tick) and the
    render side.  ``tick`` is the whole per-tick table above; it raises
    whatever the backend or a publisher raised (the driver decides the completion).
    """

    def __init__(self, host: EmbeddedHost, backend: Backend, *, substeps: int = 1, max_block: int = 1) -> None:
        self.host = host
        self.backend = backend
        self.substeps = substeps
        self._dt_ns = 1e9 / host.context.sensor_hz
        self._observe = observation_publisher(host.observations, backend, max_block)
        self._cameras = bool(host.context.capture.cameras)
        self._events = host.events
        self._publish_cameras = host.observations.publish_cameras
        self._clock: Callable[[int], int] | None = getattr(backend, "sim_time_ns", None)  # Replay
        self._render = RenderCapture.build(host, backend)  # None: no render-side work per tick
        self._render_dt = substeps / host.context.physics_hz
        self.ticks = 0  # ticks completed

    def tick(self, script: TickScript) -> TickResult:
        """Run tick ``ticks + 1`` with ``script`` (its reset, commands and events)."""
        host, backend, events = self.host, self.backend, self._events
        tick = self.ticks + 1
        sim_time_ns = round(tick * self._dt_ns) if self._clock is None else self._clock(tick)
        host.advance(tick, sim_time_ns)
        if script.reset:
            backend.reset(host.context.generation + 1)
            events.begin_generation("reset")
        control, apply = events.publish_control, backend.apply_control
        outcomes = tuple([control(command, apply) for command in script.commands]) if script.commands else ()
        backend.step(self.substeps)
        if self._render is not None:
            self._render.after_step(self._render_dt)
        observation = self._observe() if self._observe is not None else None
        readings: Sequence[CameraReading] = ()
        if self._cameras:
            readings = backend.sample_cameras()
            self._publish_cameras(readings)
        for event in script.events:
            events.publish_plugin_event(event.name, event.data, event.emitter)
        self.ticks = tick
        return TickResult(tick, sim_time_ns, outcomes, observation, readings)


def run_loop(
    host: EmbeddedHost,
    backend: Backend,
    *,
    ticks: int,
    substeps: int = 1,
    host_work: HostWork | None = None,
    progress: Progress | None = None,
    realtime_factor: float | None = None,
    stepper: TickStepper | None = None,
) -> int:
    """Play the scene's own script for up to ``ticks`` ticks; returns the ticks completed.

    ``stepper`` continues a Run that an earlier driver already stepped (its tick count
    carries on); by default a new one is built, with observation blocks of up to
    ``SCRIPTED_MAX_BLOCK`` ticks.
    """
    wall_per_tick = None if not realtime_factor else 1.0 / (host.context.sensor_hz * realtime_factor)
    wall_start = time.monotonic()
    terminal = host.terminal
    settle = None if wall_per_tick is not None else host.flow.settle  # FC1: never when paced
    aged = host.bus.flush_aged  # BK4: a pending block's oldest tick waits at most BLOCK_AGE_S (about)
    stop = terminal.completion_requested
    done = 0
    try:
        if stepper is None:
            stepper = TickStepper(host, backend, substeps=substeps, max_block=SCRIPTED_MAX_BLOCK)
        first = stepper.ticks
        for n in range(1, ticks + 1):
            if stop():
                break
            stepper.tick(backend.script(first + n))
            done = n
            if host_work is not None:
                host_work(first + n)
            if progress is not None:
                progress(n, ticks)
            if wall_per_tick is not None:
                now = time.monotonic()
                ahead = wall_start + n * wall_per_tick - now
                aged(now + ahead if ahead > 0 else now, BLOCK_AGE_S)  # as old as it will be after the sleep
                if ahead > 0:
                    time.sleep(ahead)
            elif settle is not None:
                aged(time.monotonic(), BLOCK_AGE_S)  # BK4 unpaced too: a slow tick never holds a block long
                settle(stop)
    except KeyboardInterrupt:
        host.request_completion(CompletionKind.STOPPED, "interrupted by the operator")
    except Exception as exc:  # the backend or a publisher broke: fail the Run, never hang
        host.request_completion(CompletionKind.FAILED, f"simulation failed at tick {done + 1}: {exc}")
    finally:
        host.bus.flush()  # BK6: every stamped tick is delivered when the loop returns
    host.request_completion(CompletionKind.NORMAL, f"duration reached after {done} ticks")
    return done
