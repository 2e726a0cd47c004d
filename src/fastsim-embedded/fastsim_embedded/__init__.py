"""An embedded, in-process FastSim host that implements the Core contract, so a Run records on any machine.

Rooms (the Core side; the contract is ``fastsim_contract`` and ``contracts/``); each
room's ``__init__`` maps its modules:

    | room           | what it owns                                                              |
    |----------------|---------------------------------------------------------------------------|
    | session        | ``prepare_run``; ``Session`` (reset(seed), step(commands), close()); the  |
    |                | tick (``TickStepper``) and the scripted driver of ``fsr record``          |
    | host           | ``EmbeddedHost``: bus, services, lifecycle/events/control and observation |
    |                | publishing, flow control, the terminal (cut, finalizers, outcome)         |
    | output         | real-file leases: staging, fsync, atomic rename, disposal, revocation     |
    | render         | render.state, geometry, fluid, camera mounts; camera-only render Replay   |
    | backends       | the Backend protocol (``base``), registry, synthetic, MuJoCo, gl_replay   |
    | cli            | ``fsr record`` / ``fsr replay`` (the ``fastsim.hosts`` entry points)       |
    | gymnasium_host | recording Gymnasium episodes (the ``gymnasium`` entry point)              |
    | gym            | ``FastSimRun-v0``: a Run as a Gymnasium environment (a Session driver)    |
    | testing        | a minimal consumer plugin; this host as a contract-suite ``CoreDriver``   |
"""
