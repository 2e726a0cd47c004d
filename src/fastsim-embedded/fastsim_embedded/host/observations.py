"""Publishing observations and camera samples on the simulation thread.

``ObservationPublisher`` is a part of :class:`fastsim_embedded.host.core.EmbeddedHost`
(``host.observations``) that holds its own per-Run state.  A backend's numeric state
reaches the bus in one of three shapes, chosen once per Run:

    | # | shape       | bound by               | one tick costs                               |
    |---|-------------|------------------------|----------------------------------------------|
    | 1 | per channel | -                      | a read-only check (or copy) of each value    |
    | 2 | row views   | ``bind_numeric_layout`` | a ``RowViews`` over a few read-only blocks   |
    | 3 | packed      | ``bind_numeric_packing``| nothing when the plan selects every channel  |
    |   |             |                        | in the backend's order, else one gather copy |

Every tick carries the plan's channels in the plan's order (a ``SampleBlock``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from fastsim_contract.payloads import freeze
from fastsim_contract.values import (
    CameraSample,
    Envelope,
    ObservationTick,
    PackedLayout,
    RowViews,
    SampleBlock,
    SourceKind,
)
from fastsim_embedded.backends.base import CameraReading, ReadOnlySamples
from fastsim_embedded.host.bus import CaptureBus, PackedStamp
from fastsim_embedded.host.context import EmbeddedRunContext
from fastsim_recording_format.encoding import readonly

__all__ = ["ObservationPublisher", "read_only"]


def read_only(value: object) -> Any:
    """``value`` as a read-only array: itself when already read-only, else a frozen copy."""
    if isinstance(value, np.ndarray):
        return readonly(value.copy()) if value.flags.writeable else value
    return readonly(np.array(value))  # a scalar or list from a backend: freeze a copy


@attrs.define(eq=False)
class ObservationPublisher:
    """The observation and camera publishers of one Run (module table)."""

    context: EmbeddedRunContext
    bus: CaptureBus
    #: the host's stamped publish (``EventPublisher.publish_now``): the camera samples' path
    publish_now: Callable[..., Envelope | None]
    _channel_seq: dict[str, int] = attrs.field(init=False, factory=dict)
    _observed: int = attrs.field(init=False, default=0)
    _rows: tuple[tuple[int, int], ...] | None = attrs.field(init=False, default=None)
    _packed: PackedLayout | None = attrs.field(init=False, default=None)
    _gather: Any = attrs.field(init=False, default=None)  # byte index array, None: zero-copy
    _stamp: PackedStamp | None = attrs.field(init=False, default=None)  # the bus's, bound with _packed
    _camera_index: dict[str, tuple[str, str, str]] | None = attrs.field(init=False, default=None)
    #: per intrinsics channel, the last calibration profile handed over and its frozen copy: a
    #: backend hands the same (never mutated) profile every tick of an epoch, frozen once
    _frozen: dict[str, tuple[object, Any]] = attrs.field(init=False, factory=dict)

    def wants_observations(self) -> bool:
        """Whether the plan selects numeric channels (else: no polling at all)."""
        return bool(self.context.capture.observation_channels)

    def publish_observation(self, values: Mapping[str, object]) -> Envelope | None:
        """One ObservationTick with every selected channel, in plan order (a SampleBlock)."""
        names = self.context.capture.observation_channels
        if not names:
            return None
        picked = tuple(map(values.__getitem__, names))  # KeyError: the backend broke its declaration
        if values.__class__ is not ReadOnlySamples:  # the backend did not vouch: check each
            for value in picked:
                if getattr(value, "flags", None) is None or value.flags.writeable:  # type: ignore[attr-defined]
                    picked = tuple(read_only(v) for v in picked)
                    break
        self._observed += 1
        block = SampleBlock(names, picked, self._observed)
        return self._publish_tick(block)

    def _publish_tick(self, block: SampleBlock) -> Envelope | None:
        ctx = self.context
        return self.bus.publish(
            SourceKind.OBSERVATION,
            generation=ctx.generation,
            tick=ctx.tick,
            sim_time_ns=ctx.sim_time_ns,
            payload=block,
            wrap=ObservationTick,
        )

    def bind_numeric_layout(self, layout: Mapping[str, tuple[int, int]]) -> bool:
        """Use block sampling when the layout covers every planned channel (else ``False``)."""
        names = self.context.capture.observation_channels
        if not names or any(name not in layout for name in names):
            return False
        self._rows = tuple(layout[name] for name in names)
        return True

    def publish_observation_blocks(self, blocks: tuple[Any, ...]) -> Envelope | None:
        """One ObservationTick whose values are row views of ``blocks`` (``bind_numeric_layout``)."""
        names = self.context.capture.observation_channels
        if not names or self._rows is None:
            return None
        if any(block.flags.writeable for block in blocks):  # a few blocks: always checked
            blocks = tuple(read_only(block) for block in blocks)
        self._observed += 1
        block = SampleBlock(names, RowViews(blocks, self._rows), self._observed)
        return self._publish_tick(block)

    def bind_numeric_packing(self, packing: Sequence[tuple[str, str, tuple[int, ...]]]) -> bool:
        """Use packed sampling when ``packing`` covers every planned channel (else ``False``).

        When the plan selects every packed channel in the backend's order the backend's
        buffer is published as-is; otherwise each tick is gathered into plan order with
        one C-level copy (a byte index computed here, once per Run).
        """
        names = self.context.capture.observation_channels
        where: dict[str, tuple[int, str, tuple[int, ...]]] = {}
        at = 0
        for name, dtype, shape in packing:
            dt = np.dtype(dtype)
            where[name] = (at, dt.str, tuple(int(d) for d in shape))
            at += int(np.prod(shape, dtype=np.int64)) * dt.itemsize
        if not names or any(name not in where for name in names):
            return False
        self._packed = PackedLayout(tuple(where[name][1:] for name in names))
        self._stamp = self.bus.packed_stamper(names, self._packed)
        if tuple(names) == tuple(name for name, _, _ in packing):
            self._gather = None
        else:
            self._gather = np.concatenate([
                np.arange(where[name][0], where[name][0] + nbytes, dtype=np.intp)
                for name, nbytes in zip(names, np.diff((*self._packed.offsets, self._packed.nbytes)))
            ])
        return True

    def publish_observation_packed(self, buffer: Any) -> Envelope | None:
        """One ObservationTick whose values are ``PackedValues`` over one buffer (``bind_numeric_packing``)."""
        stamp = self._stamp
        if stamp is None:
            return None
        if self._gather is not None:  # plan order differs: one gather copy
            buffer = readonly(np.ascontiguousarray(buffer).reshape(-1).view(np.uint8).take(self._gather))
        elif buffer.flags.writeable:  # the backend did not freeze it
            buffer = readonly(np.array(buffer, order="C"))
        self._observed += 1
        ctx = self.context
        return stamp(ctx.generation, ctx.tick, ctx.sim_time_ns, buffer, self._observed)

    def packed_observer(self, sample: Callable[[], Any], max_block: int = 1) -> Callable[[], object]:
        """The per-tick observation of a bound packing (``bind_numeric_packing``) as one
        closure: take ``sample()`` (the backend's buffer), publish it as
        ``publish_observation_packed`` does, return it.  The plan's channels, the layout and
        the bus's ``packed_stamper`` are bound once (``bind_numeric_packing``); a gathering
        plan goes through ``publish_observation_packed``.

        ``max_block`` is the host's own bound on an observation block (1: per tick).  Above
        1, and when the bus grants block mode (every ``observations`` subscriber opted in,
        ``host.blocks``), each tick is a row of the pending block instead: no freeze copy,
        no per-tick envelope; should the bus turn back to per-tick stamping mid-Run, the
        tick goes through ``publish_observation_packed``."""
        stamp = self._stamp
        packed = self._packed
        if stamp is None or packed is None:
            raise ValueError("packed_observer: no numeric packing is bound")
        names = self.context.capture.observation_channels
        append = self.bus.block_stamper(names, packed, max_block) if max_block > 1 else None
        gather = self._gather
        ctx = self.context
        publish = self.publish_observation_packed
        if append is not None:
            raw = np.ascontiguousarray

            def observe_rows() -> object:
                value = sample()
                row = value if gather is None else raw(value).reshape(-1).view(np.uint8).take(gather)
                if append(ctx.generation, ctx.tick, ctx.sim_time_ns, row, self._observed + 1):
                    self._observed += 1
                else:  # the bus turned back to per-tick stamping
                    publish(value)
                return value

            return observe_rows
        if gather is not None:

            def gathered() -> object:
                value = sample()
                publish(value)
                return value

            return gathered

        def observe() -> object:
            value = buffer = sample()
            if buffer.flags.writeable:  # the backend did not freeze it
                buffer = readonly(np.array(buffer, order="C"))
            self._observed += 1
            stamp(ctx.generation, ctx.tick, ctx.sim_time_ns, buffer, self._observed)
            return value

        return observe

    def publish_cameras(self, readings: Sequence[CameraReading]) -> None:
        """Camera samples of the planned cameras, one envelope each."""
        by_channel = self._camera_index
        if by_channel is None:
            by_channel = self._camera_index = {
                channel: (cam.alias, role, f"cameras.{cam.alias}.{role}")
                for cam in self.context.capture.cameras
                for role, channel in cam.channels().items()
            }
        if not by_channel:
            return
        for reading in readings:
            where = by_channel.get(reading.channel)
            if where is None:
                continue
            alias, role, key = where
            seq = self._channel_seq.get(reading.channel, 0) + 1
            self._channel_seq[reading.channel] = seq
            profile = reading.profile
            if profile is not None:
                kept = self._frozen.get(reading.channel)
                if kept is None or kept[0] is not profile:
                    kept = self._frozen[reading.channel] = (profile, freeze(profile))
                profile = kept[1]
            sample = CameraSample(
                camera=alias,
                channel=reading.channel,
                role=role,
                value=read_only(reading.value),
                calibration_digest=reading.calibration_digest,
                channel_sequence=seq,
                profile=profile,
            )
            self.publish_now(SourceKind.CAMERA, sample, sequence_key=key)
