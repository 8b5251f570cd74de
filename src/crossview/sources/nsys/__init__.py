"""Nsight Systems readers: the SQLite export (`nsys export --type sqlite`), `.nsys-rep` (converted
with the `nsys` CLI when present) and `nsys stats` CSV summaries."""
