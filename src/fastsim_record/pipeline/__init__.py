"""The Record pipeline: pumps, the writer worker, the monitor, the finalizer, and the
composition root ``plugin.create_plugin`` (the ``fastsim.plugins`` / ``record`` entry point).

How the pieces connect, by thread:

    Core publishing thread(s)              writer worker thread          Core terminal thread
    -------------------------              --------------------          --------------------
    Envelope --> Pump (one per source)     drain lanes --> OrderedMerge  RecordFinalizer.finalize
      convert (adapters.core_binding)        --> encode once (adapters)    cut -> worker.finish
      SourceContinuity.check (core)          --> Batcher (core) --> FsrSink  wait to the deadline
      Lane.try_publish (core, no wait)       finish: fence (core) -> seal   -> FinalizerResult
      latch -> Monitor (one completion)        -> readback validate -> confirm -> commit | abort

Only the worker touches the write lease; only pumps run on Core's threads and they never
encode, hash, touch files or wait.  Cameras (``camera_*``) and the render-side sources
(``render_streams``) plug into the same pump table, lanes and worker.
"""
