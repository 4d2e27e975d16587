"""Runnable integrations of arl envs with training frameworks: TRL's GRPOTrainer, a plain PyTorch REINFORCE loop,
an asyncio rollout loop (see README.md here). Each module imports its framework lazily."""
