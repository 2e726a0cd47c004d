"""fastsim_record.ports."""
