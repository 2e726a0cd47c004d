"""The session: one Run as an object a driver steps, and the drivers' shared tick.

    | module       | what it owns                                                            |
    |--------------|-------------------------------------------------------------------------|
    | compile      | ``prepare_run``: load_run -> compile_run -> backend -> CapturePlan       |
    | task_capture | a scene's task channels join an explicit observation include           |
    | session      | ``Session``: reset(seed), step(commands), close(); ``run_session``      |
    | plugins      | plugin discovery (``fastsim.plugins``), the plugin context, teardown    |
    | metadata     | what the host says about the Run (``run_metadata``, ``task_of``)        |
    | loop         | ``TickStepper`` (one tick); ``run_loop``: the scripted driver (pacing)  |
    | gc_policy    | ``run_session``'s collector policy for a Run (``FASTSIM_RUN_GC``)       |
"""
