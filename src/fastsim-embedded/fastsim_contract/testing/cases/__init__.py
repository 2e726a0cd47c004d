"""Every Core contract case, registered with ``fastsim_contract.testing.check.case``."""

from fastsim_contract.testing.cases import blocks, capabilities, outputs, sequencing, terminal

__all__ = ["blocks", "capabilities", "outputs", "sequencing", "terminal"]
