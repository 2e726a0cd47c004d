"""The Core contract suite: run it against any Core implementation."""
