"""Synthesis (issue 5): fuse the sources of an evidence bundle into one ranked, cited ledger.

bundle.py (bundle.yaml → Bundle) → inventory.py (artifacts, capture validation, tiers) →
reconcile.py (per family/phase, per kernel identity) → contradictions.py → ledger.py →
experiments.py → frontier.py → persist.py (findings/synthesis-<ts>.{md,json}).
`synthesize.py` runs them in that order.
"""
