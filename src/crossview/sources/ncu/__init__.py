"""Nsight Compute readers: `ncu --csv` details and `--page raw` exports, `.ncu-rep` files.

csv_reader.py / rep.py are the registry entries; units.py normalizes localized, auto-scaled
values; record.py is what every layout parses into; ingest.py writes the store tables.
"""
