"""An embedded, in-process FastSim host that implements the Core contract, so a Run records on any machine.

Module map (the Core side; the contract is ``fastsim_contract`` and ``contracts/``):

    | module             | what it owns                                                          |
    |--------------------|-----------------------------------------------------------------------|
    | compile            | ``prepare_run``: load_run -> compile_run -> backend -> CapturePlan     |
    | session            | ``Episode``: one Run as an object (open, step, close); ``run_session``  |
    |                    | = ``Episode.open`` + the scripted driver + ``close``                  |
    | loop               | ``TickStepper`` (one tick); ``run_loop``: the scripted driver (pacing) |
    | core               | ``EmbeddedHost`` (publishers, cut) and ``EmbeddedCore`` (CoreServices) |
    | bus                | global/per-source sequences, atomic history-plus-live delivery        |
    | terminal           | completion (first wins), finalizer deadline, cancel, run status       |
    | output             | real-file leases: staging, fsync, atomic rename, disposal, revocation |
    | payloads           | immutable payloads and the producer-computed portable size            |
    | backends           | the Backend protocol (``base``), registry, ``synthetic``               |
    | probe              | a minimal consumer plugin for exercising a Core                       |
    | contract_driver    | this host as a contract-suite ``CoreDriver``                          |
    | cli_record         | ``fsr record`` (the ``fastsim.hosts`` / ``embedded`` entry point)      |
"""
