"""Disposing of an unpublished staging file (abort, revocation) by the ``RunOutputPolicy``.

    | # | publish_incomplete | preserve_incomplete | result                                   |
    |---|--------------------|---------------------|------------------------------------------|
    | 1 | true               | any                 | kept as <dir>/<name>.incomplete          |
    | 2 | false              | true                | quarantined: <dir>/.quarantine/<cid>/... |
    |   |                    |                     | (made without following symlinks; when   |
    |   |                    |                     | that is unsafe the file is kept)         |
    | 3 | false              | false               | deleted                                  |

The caller (``FileOutputService``) has checked that the staging path still holds the
transaction's own inode; ``Transaction.note`` says why a file was left where it is.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from fastsim_contract.output_policy import RunOutputPolicy
from fastsim_embedded.output.leases import Transaction
from fastsim_embedded.output.names import STAGING_SUFFIX
from fastsim_recording_format.files import QUARANTINE_DIR, fsync_dir

__all__ = ["QUARANTINE_DIR", "dispose_staging"]



def dispose_staging(tx: Transaction, policy: RunOutputPolicy, output_dir: Path, completion_id: str) -> None:
    """Keep, quarantine or delete ``tx``'s staging file (the module table)."""
    if policy.publish_incomplete:
        if not tx.named:  # never flushed: give it its name now, if that is free
            with contextlib.suppress(OSError):
                os.link(tx.staging, output_dir / f"{tx.name}{STAGING_SUFFIX}", follow_symlinks=False)
                os.unlink(tx.staging)
                tx.staging = output_dir / f"{tx.name}{STAGING_SUFFIX}"
                tx.named = True
        tx.disposed_to = tx.staging
    elif policy.preserve_incomplete:
        target = _quarantine_target(tx, output_dir, completion_id)
        if target is None:
            tx.disposed_to = tx.staging
        else:
            os.rename(tx.staging, target)
            tx.disposed_to = target
    else:
        tx.staging.unlink()
    fsync_dir(output_dir)


def _quarantine_target(tx: Transaction, output_dir: Path, completion_id: str) -> Path | None:
    """``.quarantine/<cid>/<name>.incomplete``, made without following symlinks; ``None``
    (keep the file where it is) when that is unsafe."""
    quarantine = output_dir / QUARANTINE_DIR
    folder = quarantine / completion_id
    for directory in (quarantine, folder):
        with contextlib.suppress(FileExistsError):
            os.mkdir(directory, 0o755)
        if os.path.islink(directory) or not directory.is_dir():
            tx.note = f"{directory} is not a plain directory; the recording stays at {tx.staging}"
            return None
    target = folder / f"{tx.name}{STAGING_SUFFIX}"
    if os.path.lexists(target):
        tx.note = f"{target} already exists; the recording stays at {tx.staging}"
        return None
    return target
