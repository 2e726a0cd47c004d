"""The contract suite needs no fixtures: ``test_core_contract.py`` runs each case of
``fastsim_contract.testing.check_core`` against every implementation."""
