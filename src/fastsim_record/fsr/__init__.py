"""fastsim_record.fsr."""
