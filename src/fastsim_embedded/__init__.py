"""An embedded, in-process FastSim host that implements the Core contract, so a Run records on any machine."""
