"""The Record pipeline: pumps, the writer worker, the monitor, the finalizer, and the
plugin's lifecycle (``plugin.RecordPlugin``; ``fastsim_record.bootstrap.create_plugin`` is
the ``fastsim.plugins`` / ``fastsim.record`` entry point).  The composition root that builds the
adapters and wires these pieces is ``fastsim_record.bootstrap``, reading every source's
row of the registry ``fastsim_record.sources``; the pumps and the worker see the Core
binding and the sink only through ``fastsim_record.ports``.

How the pieces connect, by thread:

    Core publishing thread(s)              writer worker thread          Core terminal thread
    -------------------------              --------------------          --------------------
    Envelope --> Pump (one per source)     drain lanes --> OrderedMerge  RecordFinalizer.finalize
      validate (a CarrierConverter port)     --> RecordEncoder: encode      cut -> worker.finish
      SourceContinuity (core)                    once (payload encoders)    wait to the deadline
      Lane.try_admit of the Envelope         --> BatchWriter: Batcher       -> FinalizerResult
        (core, no wait)                          (core) --> sink
      latch -> Monitor (one completion)      finish: fence (core) -> seal
                                               -> readback validate -> confirm -> commit | abort

Only the worker touches the write lease; only pumps run on Core's threads and they never
encode, hash, touch files or wait.  Cameras (``camera_*``) and the render-side sources
(``render_streams``) are rows of the same registry and use the same lanes and worker.
"""
