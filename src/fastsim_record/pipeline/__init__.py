"""fastsim_record.pipeline."""
