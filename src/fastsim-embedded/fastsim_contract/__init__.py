"""The FastSim Core contract that Record consumes: typed values and Protocols (a stand-in for Core's public API)."""
