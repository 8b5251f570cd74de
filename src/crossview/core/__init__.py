"""Core typed data passed between pipeline stages (no logic beyond validation)."""
