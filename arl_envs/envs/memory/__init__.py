"""Memory envs: ``arl/memory.bank-v1`` (Memory-R1 setting)."""
