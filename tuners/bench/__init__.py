"""The benchmark: one measured training run in a child process (spec, child, worker)."""
