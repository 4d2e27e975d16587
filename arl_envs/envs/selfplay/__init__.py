"""Self-play envs (issue 13): ``arl/selfplay.propose-solve-v0`` (Absolute Zero setting)."""
