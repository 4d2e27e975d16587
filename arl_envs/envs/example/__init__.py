"""Example envs: small, complete envs to copy when adding one (see the docs site, "Add an environment")."""
