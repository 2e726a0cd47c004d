"""Every Core contract case, registered with ``fastsim_contract.testing.check.case``."""

from fastsim_contract.testing.cases import capabilities, outputs, sequencing, terminal

__all__ = ["capabilities", "outputs", "sequencing", "terminal"]
