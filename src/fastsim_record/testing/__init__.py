"""fastsim_record.testing."""
