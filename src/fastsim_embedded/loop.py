"""The run loop: ticks at the sensor rate for a simulated duration, as fast as possible.

Per tick, on the calling (simulation) thread:

    | # | step                                                                         |
    |---|------------------------------------------------------------------------------|
    | 1 | stop if a completion request arrived                                         |
    | 2 | stamp the tick (``advance``): every item of this tick carries tick/sim time   |
    |   | (``tick / sensor_hz``, or the backend's ``sim_time_ns(tick)`` when it has    |
    |   | one: a render Replay keeps its source's simulation clock)                   |
    | 3 | ``script(tick)``; a reset starts a generation (barrier + generation.started) |
    | 4 | each scripted command: audit (issued) -> ``apply_control`` -> result         |
    | 5 | ``step(substeps)``, then the render side (fluid emitter step, render.state,  |
    |   | geometry; ``RenderCapture``, only when the plan selects render.state or      |
    |   | geometry or the backend exposes fluid.audit), all of the same stepped state  |
    | 6 | observations (only when the plan selects numeric channels), then cameras     |
    | 7 | scripted plugin events                                                       |
    | 8 | the optional host-work callback, then progress                               |
    | 9 | pacing, only with ``realtime_factor``: sleep until wall time catches up with |
    |   | sim time / factor (default: as fast as possible)                             |
    |10 | flow control, only without ``realtime_factor``: while a consumer's gauge is  |
    |   | pressed, wait for it, bounded (``fastsim_embedded.flow``, FC1-FC6)           |

After the last tick the host requests a normal completion (it loses if anything else
already won).  A backend exception becomes a failed completion; KeyboardInterrupt a
stopped one.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable

from fastsim_contract.values import CompletionKind
from fastsim_embedded.backends.base import Backend
from fastsim_embedded.core import EmbeddedHost
from fastsim_embedded.render_capture import RenderCapture

__all__ = ["HostWork", "Progress", "observation_publisher", "run_loop", "tick_count"]

HostWork = Callable[[int], None]
Progress = Callable[[int, int], None]


def observation_publisher(host: EmbeddedHost, backend: Backend) -> Callable[[], object] | None:
    """What publishes one observation tick: ``None`` when the plan selects no numeric
    channel (no polling at all); else the cheapest capability the backend has --
    ``PackedSampling`` (one buffer), then ``BlockSampling`` (row views), then the
    per-channel ``sample_numeric`` mapping."""
    if not host.wants_observations():
        return None
    packed = getattr(backend, "sample_numeric_packed", None)
    packing = getattr(backend, "numeric_packing", None)
    if callable(packed) and callable(packing) and host.bind_numeric_packing(packing()):
        publish_packed = host.publish_observation_packed
        return lambda: publish_packed(packed())
    blocks = getattr(backend, "sample_numeric_blocks", None)
    layout = getattr(backend, "numeric_layout", None)
    if callable(blocks) and callable(layout) and host.bind_numeric_layout(layout()):
        publish_blocks = host.publish_observation_blocks
        return lambda: publish_blocks(blocks())
    return lambda: host.publish_observation(backend.sample_numeric())


def tick_count(duration_s: float, sensor_hz: float) -> int:
    """Ticks in ``duration_s`` simulated seconds at ``sensor_hz``."""
    return max(0, math.floor(duration_s * sensor_hz + 1e-9))


def run_loop(
    host: EmbeddedHost,
    backend: Backend,
    *,
    ticks: int,
    substeps: int = 1,
    host_work: HostWork | None = None,
    progress: Progress | None = None,
    realtime_factor: float | None = None,
) -> int:
    """Run up to ``ticks`` ticks; returns the number of ticks completed."""
    dt_ns = 1e9 / host.context.sensor_hz
    wall_per_tick = None if not realtime_factor else 1.0 / (host.context.sensor_hz * realtime_factor)
    wall_start = time.monotonic()
    observe = observation_publisher(host, backend)
    cameras = bool(host.context.capture.cameras)
    terminal = host.terminal
    clock: Callable[[int], int] | None = getattr(backend, "sim_time_ns", None)  # Replay's source clock
    settle = None if wall_per_tick is not None else host.flow.settle  # FC1: never when paced
    stop = terminal.completion_requested
    done = 0
    try:
        render = RenderCapture.build(host, backend)  # None: no render-side work per tick
        render_dt = substeps / host.context.physics_hz
        for tick in range(1, ticks + 1):
            if terminal.completion_requested():
                break
            host.advance(tick, round(tick * dt_ns) if clock is None else clock(tick))
            script = backend.script(tick)
            if script.reset:
                backend.reset(host.context.generation + 1)
                host.begin_generation("reset")
            for command in script.commands:
                host.publish_control_issued(command)
                host.publish_control_applied(command, backend.apply_control(command))
            backend.step(substeps)
            if render is not None:
                render.after_step(render_dt)
            if observe is not None:
                observe()
            if cameras:
                host.publish_cameras(backend.sample_cameras())
            for event in script.events:
                host.publish_plugin_event(event.name, event.data, event.emitter)
            if host_work is not None:
                host_work(tick)
            done = tick
            if progress is not None:
                progress(tick, ticks)
            if wall_per_tick is not None:
                ahead = wall_start + tick * wall_per_tick - time.monotonic()
                if ahead > 0:
                    time.sleep(ahead)
            elif settle is not None:
                settle(stop)
    except KeyboardInterrupt:
        host.request_completion(CompletionKind.STOPPED, "interrupted by the operator")
    except Exception as exc:  # the backend or a publisher broke: fail the Run, never hang
        host.request_completion(CompletionKind.FAILED, f"simulation failed at tick {done + 1}: {exc}")
    host.request_completion(CompletionKind.NORMAL, f"duration reached after {done} ticks")
    return done
