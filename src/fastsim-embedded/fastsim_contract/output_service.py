"""What every Core output service shares: the receipt rule and the per-component view.

The lease state machine itself is ``fastsim_recording_format.lease`` (one table for
every storage).  This module adds the two contract rules of section 7 that sit above it:

    | # | rule                                                                          |
    |---|-------------------------------------------------------------------------------|
    | 1 | a receipt carries ``RECEIPT_REQUIRED_KEYS``; ``validated_bytes`` is the sealed |
    |   | size; ``completion_id`` is the Run's; ``content_sha256`` is the file's digest |
    |   | under ``integrity="sha256"`` and absent (``None``) otherwise                   |
    | 2 | a lease is bound to the component whose view opened it: another component's  |
    |   | seal/open_readback/confirm_validation/commit/abort on it raises LeaseError    |
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import attrs

from fastsim_contract.errors import LeaseError
from fastsim_contract.values import RECEIPT_REQUIRED_KEYS

__all__ = ["ComponentOutputs", "OwnedOutputService", "receipt_problem"]


def receipt_problem(
    receipt: Mapping[str, object],
    *,
    size: int,
    completion_id: str,
    integrity: str,
    digest: Callable[[], str],
) -> str | None:
    """Why ``receipt`` does not confirm a sealed write of ``size`` bytes (rule 1), or ``None``.

    ``digest()`` is called only under ``integrity="sha256"`` (it reads the whole file).
    """
    missing = [k for k in RECEIPT_REQUIRED_KEYS if k not in receipt]
    if missing:
        return f"receipt lacks {', '.join(missing)}"
    if receipt["validated_bytes"] != size:
        return f"receipt validated {receipt['validated_bytes']} bytes, sealed size is {size}"
    if receipt["completion_id"] != completion_id:
        return "receipt names another completion"
    claimed = receipt.get("content_sha256")
    if integrity == "sha256":
        if not isinstance(claimed, str):
            return "integrity sha256 requires content_sha256"
        if claimed != digest():
            return "content_sha256 does not match the sealed file"
    elif claimed is not None:
        return "a content digest needs RunOutputPolicy(integrity='sha256')"
    return None


class OwnedOutputService(Protocol):
    """An output service that records which component opened each lease."""

    def open_write(self, name: str, owner: str = "") -> Any: ...
    def owner_of(self, lease: object) -> str | None: ...
    def seal(self, lease: object) -> None: ...
    def open_readback(self, lease: object) -> Any: ...
    def confirm_validation(self, lease: object, receipt: Mapping[str, object]) -> None: ...
    def commit(self, lease: object) -> str: ...
    def abort(self, lease: object) -> None: ...


@attrs.define(eq=False)
class ComponentOutputs:
    """One component's view of an output service: it can touch only its own leases (rule 2).

    A lease the service did not issue (``owner_of`` is ``None``) goes through, so the
    service refuses it with its own message.
    """

    service: OwnedOutputService
    owner: str

    def _own(self, lease: object, call: str) -> None:
        owner = self.service.owner_of(lease)
        if owner is not None and owner != self.owner:
            raise LeaseError(f"{call}: the lease belongs to component {owner!r}")

    def open_write(self, name: str) -> Any:
        """Open a transaction owned by this component."""
        return self.service.open_write(name, self.owner)

    def seal(self, lease: object) -> None:
        """Seal (own leases only)."""
        self._own(lease, "seal")
        self.service.seal(lease)

    def open_readback(self, lease: object) -> Any:
        """A new exact readback lease (own leases only)."""
        self._own(lease, "open_readback")
        return self.service.open_readback(lease)

    def confirm_validation(self, lease: object, receipt: Mapping[str, object]) -> None:
        """Confirm (own leases only)."""
        self._own(lease, "confirm_validation")
        self.service.confirm_validation(lease, receipt)

    def commit(self, lease: object) -> str:
        """Commit (own leases only)."""
        self._own(lease, "commit")
        return self.service.commit(lease)

    def abort(self, lease: object) -> None:
        """Abort (own leases only)."""
        self._own(lease, "abort")
        self.service.abort(lease)
