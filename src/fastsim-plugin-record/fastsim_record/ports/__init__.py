"""Protocols owned by the core side: sources, encoders, cameras, sinks, executors."""
