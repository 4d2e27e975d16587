"""Shared base of the command-driven embodied envs (household, Sokoban, FrozenLake).

One tool, ``act(command)`` (:data:`~arl_envs.envs.embodied.parsing.ACT_TOOL`); the native format is the shared
embodied parser (:mod:`arl_envs.envs.embodied.parsing`); each env adds its own grammar (:meth:`CommandEnv._interpret`),
which turns a normalised command into a parsed command or raises :class:`ParseError` (unknown command, several
commands in one reply), so both action formats go through exactly the same grammar and the same error messages.
Every step's ``info["admissible_actions"]`` lists the valid commands in the current state.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import Any, ClassVar

from arl_envs.core.actions import ParseError
from arl_envs.core.env import MAX_ACTION_CHARS, AgentEnv, Transition
from arl_envs.core.tools import Tool, ToolCall
from arl_envs.envs.embodied.parsing import ACT_TOOL, format_act, normalise_command, parse_command, parse_native


class CommandEnv(AgentEnv):
    """An :class:`AgentEnv` whose only tool is ``act(command)``, with a per-env command grammar.

    Subclasses implement :meth:`_new_episode`, :meth:`_interpret`, :meth:`_execute`, :meth:`admissible_actions`,
    :meth:`expert_command`, :meth:`command_help` and :meth:`describe_task`.

    Args:
        show_admissible: Append ``Admissible actions: ...`` to every observation (default False; the list is
            always in ``info["admissible_actions"]``).
        **kwargs: See :class:`~arl_envs.core.env.AgentEnv`.
    """

    default_max_invalid_actions: ClassVar[int] = 10
    #: A valid command shown in the format instructions and hints.
    example_command: ClassVar[str] = "look"

    def __init__(self, *, show_admissible: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.show_admissible = bool(show_admissible)
        self._pending: Any = None

    # ----------------------------------------------------------------- hooks
    @abstractmethod
    def _new_episode(self, task_id: str | None) -> tuple[str, str]:
        """Build the world (from ``self.np_random`` or ``task_id``); return ``(task_id, task text)``."""

    @abstractmethod
    def _interpret(self, command: str) -> tuple[str, Any]:
        """Map a normalised command onto the grammar: ``(canonical command, parsed form)``.

        Raises:
            ParseError: The command matches no template, or holds several commands.
        """

    @abstractmethod
    def _execute(self, parsed: Any) -> Transition:
        """Apply one parsed command to the world."""

    @abstractmethod
    def admissible_actions(self) -> list[str]:
        """Every command that is valid now, in canonical form (never naming anything the agent has not seen)."""

    @abstractmethod
    def expert_command(self) -> str:
        """The privileged expert's next command (canonical form), planned over the true state."""

    @abstractmethod
    def command_help(self) -> str:
        """The command templates, one paragraph (shown in the instructions and after an unknown command)."""

    @abstractmethod
    def describe_task(self) -> str:
        """The first lines of the instructions: what the world is and what the agent must do in general."""

    # ----------------------------------------------------------------- AgentEnv hooks
    def tools(self) -> list[Tool]:
        return [ACT_TOOL]

    def instructions(self) -> str:
        if self.action_format == "json":
            fmt = "Each turn, call the act tool with exactly one command.\n" + self.json_format_instructions()
        else:
            fmt = (
                f"Each turn, reply with exactly one command: either the bare command (e.g. `{self.example_command}`) "
                "or the command "
                "inside <action>...</action>; you may reason first inside <think>...</think>, which is never "
                "executed. When a reply holds several <action> blocks, only the last one counts."
            )
        return f"{self.describe_task()}\n\n{self.command_help()}\n\n{fmt}"

    def _parse_native(self, text: str) -> list[ToolCall]:
        return parse_native(text)

    def format_call(self, name: str, arguments: dict[str, Any]) -> str:
        return format_act(str(arguments.get("command", "")))

    def parse_action(self, action: str) -> list[ToolCall]:
        if self.action_format == "native":
            # the base class's path, minus re-validating a str we built ourselves through pydantic
            if len(action) > MAX_ACTION_CHARS:
                raise ParseError(f"action is {len(action)} characters long; the limit is {MAX_ACTION_CHARS}")
            command = parse_command(action)
        else:
            calls = super().parse_action(action)
            command = normalise_command(str(calls[0].arguments.get("command", "")))
        canonical, parsed = self._interpret(command)
        self._pending = parsed
        return [ToolCall("act", {"command": canonical})]

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        self._pending = None
        tid, text = self._new_episode(task_id)
        if self.show_admissible:
            text = f"{text}\n{self._admissible_line()}"
        return tid, text

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        parsed, self._pending = self._pending, None
        if parsed is None:  # only if a caller bypassed parse_action; re-read the canonical command
            _, parsed = self._interpret(normalise_command(str(calls[0].arguments["command"])))
        tr = self._execute(parsed)
        if self.show_admissible and not tr.terminated:
            tr.observation = f"{tr.observation}\n{self._admissible_line()}"
        return tr

    def _format_hint(self) -> str:
        example = self.example_command
        hint = "Write one command, e.g. " + (f"`{example}`" if self.action_format == "native" else
                                             f'<tool_call>{{"name": "act", "arguments": {{"command": "{example}"}}}}</tool_call>')
        if self.show_admissible:
            hint = f"{hint}\n{self._admissible_line()}"
        return hint

    def _step_info(self, done: bool) -> dict[str, Any]:
        """``info["admissible_actions"]`` on every step (empty once the episode is over)."""
        return {"admissible_actions": [] if done else self.admissible_actions()}

    def _reset_info(self) -> dict[str, Any]:
        """``info["admissible_actions"]`` at reset."""
        return {"admissible_actions": self.admissible_actions()}

    def _expert_action(self) -> str:
        """The expert's next command in this env's action format.

        Raises:
            ResetNeeded: If no episode is running.
        """
        return self.render_call("act", {"command": self.expert_command()})

    def _admissible_line(self) -> str:
        return "Admissible actions: " + ", ".join(self.admissible_actions())


def unknown_command(command: str, help_text: str) -> ParseError:
    """The :class:`ParseError` for a command that matches no template (its message lists the templates)."""
    shown = command if len(command) <= 80 else command[:77] + "..."
    return ParseError(f"unknown command {shown!r}. {help_text}")


__all__ = ["CommandEnv", "unknown_command"]
