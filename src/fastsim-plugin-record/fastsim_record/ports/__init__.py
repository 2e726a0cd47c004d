"""Protocols owned by the core side: sources, encoders, sinks, leases."""
