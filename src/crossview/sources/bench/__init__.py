"""Readers of benchmark results: vllm bench serve/sweep, generic CSV/JSONL."""
