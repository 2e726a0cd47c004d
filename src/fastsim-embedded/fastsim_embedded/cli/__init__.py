"""The ``fsr`` commands the embedded host provides (``fastsim.hosts`` entry points).

    | module  | what it owns                                                               |
    |---------|----------------------------------------------------------------------------|
    | record  | ``fsr record`` (entry point ``embedded``)                                  |
    | replay  | ``fsr replay`` (entry point ``embedded-replay``)                           |
    | sweep   | ``fsr record --episodes N``: many seeded episodes, one process each        |
    | signals | stop signals and the stop deadline                                         |
    | summary | what ``fsr record`` says about an episode; exit codes                      |
"""
