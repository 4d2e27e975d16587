"""Memory envs (issue 13): ``arl/memory.bank-v1`` (Memory-R1 setting)."""
