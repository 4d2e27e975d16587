"""Errors raised by arl-envs.

Everything we raise derives from :class:`ArlError`, so a training loop can catch the whole family with one
``except``. A *malformed action* is never an exception: it becomes an observation (see
:class:`arl_envs.core.env.AgentEnv`). Exceptions are reserved for misuse of the API and for infrastructure
that is missing.
"""

from __future__ import annotations


class ArlError(Exception):
    """Base class of every error arl-envs raises on purpose."""


class ResetNeeded(ArlError):
    """``step`` was called before ``reset`` or after the episode ended (terminated or truncated)."""


class InvalidActionType(ArlError, TypeError):
    """``step`` got an action that is not a ``str`` (API misuse, unlike a malformed string)."""


class ParseError(ArlError, ValueError):
    """A malformed action. Its message is shown to the model as the observation (never raised out of ``step``).

    Also importable from :mod:`arl_envs.core.actions`, next to the parsers that raise it.
    """


class InfrastructureError(ArlError):
    """A part the env relies on (sandbox, grader, retriever, browser) failed during ``step``.

    :class:`~arl_envs.core.env.AgentEnv` turns it (and ``OSError``, ``RuntimeError``, ``EOFError``,
    :class:`SandboxUnavailable`) raised by a domain's ``_step_calls`` into ``info["env_error"]`` with
    ``truncated=True``: it never leaves ``step``.
    """


class InvalidKwargs(ArlError, TypeError, ValueError):
    """An env constructor kwarg is unknown or of the wrong type; the message names the kwarg and the env.

    Also a ``TypeError`` and a ``ValueError``, the exceptions Python and the envs' own range checks raise.
    """


class SandboxUnavailable(ArlError):
    """A sandbox backend is missing or unusable; the message names the exact install step."""


class DependencyNotInstalled(ArlError, ImportError):
    """An optional dependency is missing; the message names the ``pip install 'arl-envs[extra]'`` to run."""


class TaskLoadError(ArlError, ValueError):
    """A task file or task id could not be loaded (missing file, bad JSONL line, unknown ``task_id``)."""
