"""Embodied environments: partially observable text worlds (``arl/embodied.*``)."""
