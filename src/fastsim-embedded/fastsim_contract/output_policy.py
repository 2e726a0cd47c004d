"""Core's trusted output policy: the one ``RunOutputPolicy``.

Authored at ``runtime.output`` of the Run document (``fastsim_contract.run``), handed to
every plugin as ``RunContext.output_policy``, and applied by every output service (the
embedded host, the fake Core, the contract check's drivers).  A plugin never chooses it.

    | # | field               | values          | effect                                       |
    |---|---------------------|-----------------|----------------------------------------------|
    | 1 | integrity           | none | sha256   | sha256: a receipt must carry the file digest |
    | 2 | preserve_incomplete | bool            | an unpublished staging file is quarantined   |
    | 3 | publish_incomplete  | bool            | ... or kept as ``<name>.incomplete``          |
    | 4 | payload_crc         | bool (false)    | true: every batch of an artifact carries a   |
    |   |                     |                 | CRC-32C of its payload bytes (recorded in the|
    |   |                     |                 | file header), which ``fsr validate           |
    |   |                     |                 | --integrity crc``, recovery and upload check;|
    |   |                     |                 | false (default): recording makes no pass over|
    |   |                     |                 | payload bytes                                |
"""

from __future__ import annotations

import attrs

from fastsim_contract.run_structure import one_of

__all__ = ["INTEGRITY_POLICIES", "RunOutputPolicy"]

#: ``runtime.output.integrity`` values of the Core RunOutputPolicy.
INTEGRITY_POLICIES = ("none", "sha256")


@attrs.frozen
class RunOutputPolicy:
    """Core's trusted output policy for the Run's artifacts (the module table)."""

    integrity: str = attrs.field(default="none", validator=one_of(INTEGRITY_POLICIES))
    preserve_incomplete: bool = True
    publish_incomplete: bool = False
    payload_crc: bool = False
