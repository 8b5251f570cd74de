"""Exports of an analysis to the viewers people already use, one module per format:
folded stacks (flamegraph.pl / inferno), speedscope JSON, Chrome/Perfetto trace events."""
