"""fastsim-plugin-record: the Record plugin for FastSim Runs.

Installing the package only registers its component catalog (``fastsim.components``)
and its managed plugin factory (``fastsim.plugins``).  A Run pays the recording cost
only when ``plugin://fastsim/record`` is selected.
"""

__version__ = "0.3.12"
COMPONENT_ID = "plugin://fastsim/record"

__all__ = ["COMPONENT_ID", "__version__"]
