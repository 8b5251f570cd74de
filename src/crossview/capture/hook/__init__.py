"""Holds the sitecustomize.py that `crossview capture -- CMD` puts on the child's PYTHONPATH."""
