"""Experiments on benchmark trials: A/B comparison, ledger updates."""
