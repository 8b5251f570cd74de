"""What-if replay (issue 16): a dependency graph from a capture (graph.py), its re-timing
(replay.py), per-step predictions (measure.py), levers as graph transformations (levers/),
and the `whatif` entry point (whatif.py). Parameters: knowledge/replay.yaml."""
