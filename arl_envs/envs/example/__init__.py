"""Example envs: small, complete envs to copy when adding one (see README, "Add an environment")."""
