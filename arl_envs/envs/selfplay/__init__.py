"""Self-play envs: ``arl/selfplay.propose-solve-v1`` (Absolute Zero setting)."""
