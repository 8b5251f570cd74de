"""Capture helpers: samplers that write the formats crossview reads."""
