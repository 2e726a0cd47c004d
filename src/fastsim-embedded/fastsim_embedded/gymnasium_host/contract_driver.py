"""The Gymnasium adapter as a contract-suite ``CoreDriver`` (``contracts/implementations.py``).

Every observation tick goes the way a recorded Gymnasium step goes: the values are packed
into one row (``gymnasium_spaces.RowPacker``), staged on a ``GymnasiumBackend`` and
published by ``loop.TickStepper`` through the backend's ``PackedSampling`` path.  The
other contract calls are the embedded host's own (``contract_driver.EmbeddedDriver``),
so ``fastsim_contract.testing.check_core`` checks the adapter against the whole contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import attrs
import numpy as np

from fastsim_contract.harness import HarnessSpec
from fastsim_embedded.backends.base import TickScript
from fastsim_embedded.backends.gymnasium_env import GymnasiumBackend
from fastsim_embedded.gymnasium_host.spaces import RowPacker
from fastsim_embedded.session.loop import TickStepper
from fastsim_embedded.testing.contract_driver import EmbeddedDriver
from fastsim_embedded.testing.contract_driver import make_driver as make_embedded_driver

__all__ = ["GymnasiumDriver", "make_driver"]


@attrs.define(eq=False)
class GymnasiumDriver(EmbeddedDriver):
    """Drives one embedded Run whose ticks come through the Gymnasium backend."""

    declared: Mapping[str, tuple[str, tuple[int, ...]]] = attrs.field(factory=dict)
    backend: GymnasiumBackend | None = None
    stepper: TickStepper | None = None

    def tick(self, values: Mapping[str, object]) -> None:
        """One tick: pack the planned channels' values, stage them, step the backend."""
        if self.backend is None:  # the row layout: declared channels, else the first tick's values
            fields = []
            for name in self.host.context.capture.observation_channels:
                dtype, shape = self.declared.get(name) or (np.asarray(values[name]).dtype.str,
                                                           np.asarray(values[name]).shape)
                fields.append((name, np.dtype(dtype), tuple(shape)))
            self.backend = GymnasiumBackend(RowPacker(fields))
        if self.stepper is None:
            self.stepper = TickStepper(self.host, self.backend)
        packer = self.backend.packer
        self.backend.stage(packer.join(packer.encode(0, [values[name] for name, _, _ in packer.fields])))
        self.stepper.tick(TickScript())


def make_driver(spec: HarnessSpec, workdir: Path) -> GymnasiumDriver:
    """A fresh embedded host whose observation ticks pass through the Gymnasium backend."""
    inner = make_embedded_driver(spec, workdir)
    declared = {c.name: (c.dtype, tuple(c.shape)) for c in spec.channels if c.kind == "numeric"}
    return GymnasiumDriver(inner.host, inner.output_dir, declared=declared)


