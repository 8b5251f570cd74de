"""Readers of time-series metrics: Prometheus scrapes, dcgmi, nvidia-smi, NVML JSONL."""
