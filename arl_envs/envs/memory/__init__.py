"""Memory envs (issue 13): ``arl/memory.bank-v0`` (Memory-R1 setting)."""
