"""Sampled-stack readers (rigor L1): folded/collapsed stacks, speedscope JSON, pprof protobuf.

Every reader turns its file into a `model.Profile` (stacks root → leaf, with weight and sample
count); `ingest.py` interns the stacks into `frames` and writes `samples` rows, on the CPU or
the GPU side (`leaves.py`).
"""
