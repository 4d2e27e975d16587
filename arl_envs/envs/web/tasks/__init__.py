"""Our own web tasks: every module in this package is imported here and registers its tasks.

Add a task by adding a module with a :func:`arl_envs.envs.web.task.register_task`-decorated
:class:`arl_envs.envs.web.task.WebTask` subclass (see ``click_button.py`` and ``enter_text.py``), and its name and
description to ``WEB_TASKS`` in ``arl_envs/registration.py`` (which makes the id ``arl/web.<name>-v0``; a test checks
the two agree). Modules whose name starts with ``_`` are not imported automatically (private helpers).
"""

from __future__ import annotations

import importlib
import pkgutil

from arl_envs.envs.web.task import REGISTRY


def load_all() -> dict:
    """Import every task module of this package (idempotent) and return :data:`REGISTRY`."""
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
    return REGISTRY


load_all()
