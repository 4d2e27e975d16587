"""reasoning-gym datasets as ids (``arl/reasoning.<dataset>-v0``)."""
