"""Conversational tool use with a simulated user over a database, under a written policy (tau-bench style)."""
