"""The host of one Run: the Core a plugin sees.

    | module       | what it owns                                                            |
    |--------------|-------------------------------------------------------------------------|
    | core         | ``EmbeddedHost``: the bus, terminal, outputs and flow of one Run; cut    |
    | context      | ``EmbeddedRunContext`` (identity, rates, live tick) and ``RunOutcome``  |
    | events       | lifecycle, plugin events and control publishing                         |
    | observations | observation and camera publishing on the simulation thread             |
    | services     | ``EmbeddedCore``: one component's ``CoreServices`` view                 |
    | bus          | global/per-source sequences, atomic history-plus-live delivery          |
    | terminal     | completion (first wins), finalizer deadline, cancel, run status         |
    | flow         | flow control of unpaced Runs (the host waits on consumers' gauges)      |
"""
