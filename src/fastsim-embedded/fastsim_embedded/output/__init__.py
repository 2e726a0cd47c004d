"""The output service: real-file transactions for the artifacts a plugin writes.

    | module      | what it owns                                                             |
    |-------------|--------------------------------------------------------------------------|
    | transaction | ``FileOutputService``: reserve, stage, fsync, atomic rename, revoke      |
    | leases      | the ``Transaction`` record, the write lease and the readback lease       |
    | names       | which names may be written; one recorder per name (``flock``)            |
    | disposal    | an unpublished staging file: kept, quarantined or deleted               |
    | writeback   | early writeback: a background ``fdatasync`` every 16 MiB written, so    |
    |             | ``seal``'s fsync finds little left to write                             |
"""
