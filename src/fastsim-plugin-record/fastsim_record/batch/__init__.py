"""Datasets beyond one file: the episode index, batch jobs and verified upload.

``sources`` expands files, folders and URLs (fsspec); ``jobs`` are the per-file jobs;
``executors`` the adapters of ``fastsim_record.ports.executors`` (a local process pool,
the default, and Ray tasks); ``index`` the Parquet episode index; ``upload`` verified,
idempotent upload; ``sweep`` an episode sweep whose tasks record, validate, commit and
upload on the node that runs them.  See ``docs/scale-out.md``.
"""
