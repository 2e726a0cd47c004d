"""fastsim_record.config."""
