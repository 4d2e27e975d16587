"""Tools an agent may call, with pydantic argument models and OpenAI-style JSON schemas."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from arl_envs.core.errors import ParseError


@dataclass(frozen=True)
class ToolCall:
    """One parsed tool call.

    Attributes:
        name: Tool name, e.g. ``"search"``.
        arguments: Validated arguments (JSON-able dict).
    """

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """``{"name": ..., "arguments": {...}}``: the form stored in ``info["tool_calls"]``."""
        return {"name": self.name, "arguments": dict(self.arguments)}


class Tool:
    """A tool: a name, a description and a pydantic model of its arguments.

    Args:
        name: Identifier the model writes (``[a-zA-Z0-9_]+``).
        description: One or two sentences the model reads in the tool list.
        args: Pydantic model of the arguments; its JSON schema is what the model sees.

    The schema follows OpenAI's function-calling format, which Hugging Face chat templates accept as ``tools``:
    ``{"type": "function", "function": {"name", "description", "parameters": <JSON schema>}}``.
    """

    def __init__(self, name: str, description: str, args: type[BaseModel]):
        if not name.replace("_", "").isalnum():
            raise ValueError(f"tool name must be [a-zA-Z0-9_]+, got {name!r}")
        self.name = name
        self.description = description
        self.args = args
        self._schema: dict[str, Any] | None = None

    def schema(self) -> dict[str, Any]:
        """OpenAI-style function schema, computed once and cached: treat it as read-only."""
        if self._schema is None:
            self._schema = self._build_schema()
        return self._schema

    def _build_schema(self) -> dict[str, Any]:
        params = self.args.model_json_schema()
        params.pop("title", None)
        for prop in params.get("properties", {}).values():
            prop.pop("title", None)
        params.setdefault("required", [])
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": params},
        }

    def validate(self, arguments: Any) -> dict[str, Any]:
        """Validate raw arguments and return them as a plain dict (defaults filled in).

        Raises:
            arl_envs.core.errors.ParseError: With a message the model can read, if validation fails.
        """
        if not isinstance(arguments, dict):
            raise ParseError(f"arguments of tool '{self.name}' must be a JSON object, got {type(arguments).__name__}")
        try:
            return self.args.model_validate(arguments).model_dump()
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}" for e in exc.errors()
            )
            raise ParseError(f"invalid arguments for tool '{self.name}': {problems}") from None

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"
