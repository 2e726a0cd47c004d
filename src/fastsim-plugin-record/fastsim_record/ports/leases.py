"""The output-lease port: Core's opaque output transaction, as Record uses it.

Record never sees a host path or a file descriptor.  The order is fixed:

    | # | step                       | who        | on failure                          |
    |---|----------------------------|------------|-------------------------------------|
    | 1 | open_write(name)           | prepare    | prepare fails, nothing to abort     |
    | 2 | write/flush (batches)      | worker     | latch fatal; close() aborts         |
    | 3 | seal(write)                | worker     | fail result; abort                  |
    | 4 | open_readback(write)       | worker     | fail result; abort                  |
    | 5 | validate through readback  | worker     | fail result; abort (never commit)   |
    | 6 | confirm_validation(rb, r)  | worker     | fail result; abort                  |
    | 7 | commit(write)              | worker     | fail result                         |

On a host cancel at the finalizer deadline none of 3..7 nor abort is called: Core owns
the deadline-bounded revocation and quarantine of the incomplete file.
"""

from __future__ import annotations

from fastsim_contract.protocols import OutputService, ReadbackLease, WriteLease

__all__ = ["OutputService", "ReadbackLease", "WriteLease"]
