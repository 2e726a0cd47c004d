"""fastsim_record.adapters."""
