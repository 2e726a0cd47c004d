"""fastsim_record.core."""
