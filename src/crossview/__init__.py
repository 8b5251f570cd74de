"""crossview: cross-view GPU performance analysis."""
