"""A language model behind any OpenAI-compatible chat-completions endpoint as an agent.

:class:`ChatModelAgent` talks to ``POST {base_url}/chat/completions`` (vLLM, SGLang, llama.cpp's server, a hosted
API) over httpx, synchronously (:meth:`ChatModelAgent.act`) or from asyncio (:meth:`ChatModelAgent.aact`). The
episode goes to the model as chat messages: ``info["messages"]`` of the :class:`~arl_envs.wrappers.ChatMessages`
wrapper when the env is wrapped in it, else the same list built by the agent from the observations.

Tool modes:

* ``"native"`` / ``"json"``: the model's reply text is the action (the env parses it in its own ``action_format``;
  ``"json"`` is meant for envs made with ``action_format="json"``). Tool results go back as ``user`` messages, since
  an OpenAI-compatible server accepts a ``tool`` message only as the answer to one of its own ``tool_calls``.
* ``"openai"``: ``info["tools"]`` (the env's OpenAI JSON schemas) go out as ``tools``; the returned ``tool_calls``
  become the env's JSON action ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (one block per call,
  for envs made with ``action_format="json"``); a reply without ``tool_calls`` is sent as text. The history then
  carries the assistant's ``tool_calls`` and answers each with a ``tool`` message of the same ``tool_call_id``.

Failures: connection errors, timeouts, HTTP 429 and 5xx are retried ``retries`` times with exponential backoff
(``backoff_s * 2**k`` seconds); then :class:`ModelError` is raised, as it is at once for another HTTP error or a reply
that is not a chat completion. An episode that ends on it is the model server's failure (``model_error``), not the
agent's. A prompt longer than the model's context (HTTP 400 naming the context) raises
:class:`ContextLengthExceeded`: the model cannot go on, so the episode ends there and counts as a failure.
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

from arl_envs.agents.agents import Agent
from arl_envs.core.actions import format_json_tool_call
from arl_envs.core.errors import ArlError, DependencyNotInstalled

#: Tool modes of :class:`ChatModelAgent`.
TOOL_MODES = ("native", "json", "openai")
#: Words in an HTTP 400 body that mean the prompt is longer than the model's context.
_CONTEXT_WORDS = ("context length", "context_length", "context window", "maximum context", "exceed", "too long",
                  "n_ctx")


class ModelError(ArlError):
    """The model server failed (unreachable, timed out, HTTP error, malformed reply) after the retries."""


class ContextLengthExceeded(ArlError):
    """The prompt is longer than the model's context (the server said so): the model cannot take another turn."""


@dataclass
class ModelCall:
    """One chat-completion request.

    Attributes:
        latency_s: Wall seconds of the request, retries and backoff included.
        tokens_in: ``usage.prompt_tokens`` (the server's own tokenizer; 0 when it reports none).
        tokens_out: ``usage.completion_tokens``.
        finish_reason: ``"stop"``, ``"length"`` (cut at ``max_tokens``), ``"tool_calls"``, ...
        attempts: Requests sent (1 + retries used).
    """

    latency_s: float
    tokens_in: int = 0
    tokens_out: int = 0
    finish_reason: str | None = None
    attempts: int = 1


@dataclass
class _Turn:
    """What the agent sent for one turn in ``openai`` mode (to rebuild the history with ``tool_call_id``)."""

    action: str
    message: dict[str, Any]
    call_ids: list[str] = field(default_factory=list)


def _httpx() -> Any:
    try:
        import httpx
    except ImportError as exc:  # pragma: no cover - httpx is in the [eval] extra, part of [all]
        raise DependencyNotInstalled("ChatModelAgent needs httpx: pip install 'arl-envs[eval]'") from exc
    return httpx


class ChatModelAgent(Agent):
    """An agent that asks an OpenAI-compatible chat-completions endpoint for each action.

    Args:
        base_url: The API root, e.g. ``http://127.0.0.1:8080/v1`` (``/chat/completions`` is appended).
        model: The ``model`` field of each request.
        api_key: Sent as ``Authorization: Bearer <api_key>`` when given.
        temperature: Sampling temperature (0 = greedy).
        max_tokens: Tokens per reply (``max_tokens`` of each request).
        tool_mode: ``"native"``, ``"json"`` or ``"openai"`` (module docstring).
        timeout_s: Seconds per request (connect, read, write each).
        retries: Retries of a request after a connection error, timeout, 429 or 5xx.
        backoff_s: First backoff; doubles with each retry.
        extra_body: Extra JSON fields of each request (e.g. ``{"top_p": 1.0}``).

    Attributes:
        calls: The :class:`ModelCall` of every request of the current episode.

    Raises:
        ValueError: Unknown ``tool_mode``, or a non-positive ``max_tokens``.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        tool_mode: str = "native",
        timeout_s: float = 120.0,
        retries: int = 3,
        backoff_s: float = 0.5,
        extra_body: dict[str, Any] | None = None,
    ):
        if tool_mode not in TOOL_MODES:
            raise ValueError(f"tool_mode must be one of {TOOL_MODES}, got {tool_mode!r}")
        if int(max_tokens) < 1:
            raise ValueError(f"max_tokens must be >= 1, got {max_tokens}")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.temperature = float(temperature)
        self.max_tokens = int(max_tokens)
        self.tool_mode = tool_mode
        self.timeout_s = float(timeout_s)
        self.retries = int(retries)
        self.backoff_s = float(backoff_s)
        self.extra_body = dict(extra_body or {})
        self.calls: list[ModelCall] = []
        self._messages: list[dict[str, Any]] = []  # own history when the env is not wrapped in ChatMessages
        self._turns: list[_Turn] = []
        self._tools: list[dict[str, Any]] = []
        self._client: Any = None

    # ------------------------------------------------------------------ episode state
    def reset(self, seed: int | None = None) -> None:
        """Forget the episode (history and :attr:`calls`)."""
        self.calls = []
        self._messages = []
        self._turns = []
        self._tools = []

    @property
    def url(self) -> str:
        """The chat-completions URL."""
        return f"{self.base_url}/chat/completions"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}

    def _history(self, observation: str, info: dict[str, Any]) -> list[dict[str, Any]]:
        """The episode as chat messages (``ChatMessages`` roles: system, user, assistant, tool)."""
        if "messages" in info:
            return list(info["messages"])
        if not self._messages or info.get("turn") == 0:
            self._messages = []
            if info.get("instructions") and info.get("task") is not None:
                self._messages += [{"role": "system", "content": info["instructions"]},
                                   {"role": "user", "content": info["task"]}]
            else:
                self._messages.append({"role": "user", "content": observation})
        elif sum(m["role"] == "assistant" for m in self._messages) < len(self._turns):  # once per turn
            self._messages.append({"role": "assistant", "content": self._turns[-1].action})
            calls = info.get("tool_calls") or []
            ok = calls and info.get("action_error") is None
            self._messages.append({"role": "tool", "name": calls[0]["name"], "content": observation} if ok
                                  else {"role": "user", "content": observation})
        return list(self._messages)

    def messages_for(self, observation: str, info: dict[str, Any]) -> list[dict[str, Any]]:
        """The request's ``messages`` for this turn: the history in the wire form of :attr:`tool_mode`."""
        history = self._history(observation, info)
        out: list[dict[str, Any]] = []
        turn = 0
        pending: list[str] = []  # tool_call ids of the last assistant message still to answer
        for msg in history:
            role = msg["role"]
            if role == "assistant":
                sent = self._turns[turn] if turn < len(self._turns) else None
                turn += 1
                if self.tool_mode == "openai" and sent is not None and sent.call_ids:
                    out.append(sent.message)
                    pending = list(sent.call_ids)
                    continue
                pending = []
                out.append({"role": "assistant", "content": msg.get("content", "")})
            elif role == "tool" and pending:
                # one env observation answers the turn's calls; the first id gets it, the others a pointer to it
                first, rest = pending[0], pending[1:]
                out.append({"role": "tool", "tool_call_id": first, "content": msg.get("content", "")})
                out += [{"role": "tool", "tool_call_id": i, "content": "(see the previous tool message)"} for i in rest]
                pending = []
            elif role == "tool" or (role == "user" and pending):
                if pending:  # an assistant tool_calls message must be answered before a user turn
                    out += [{"role": "tool", "tool_call_id": i, "content": msg.get("content", "")} for i in pending]
                    pending = []
                    continue
                out.append({"role": "user", "content": msg.get("content", "")})
            else:
                out.append({"role": role, "content": msg.get("content", "")})
        return out

    def request_body(self, observation: str, info: dict[str, Any]) -> dict[str, Any]:
        """The JSON body of this turn's request (a reset's info, ``turn == 0``, starts a new episode)."""
        if info.get("turn") == 0 and self._turns:
            self.reset()
        body: dict[str, Any] = {
            "model": self.model,
            "messages": self.messages_for(observation, info),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            **self.extra_body,
        }
        if self.tool_mode == "openai" and info.get("tools"):
            self._tools = list(info["tools"])
        if self.tool_mode == "openai" and self._tools:
            body["tools"] = self._tools
            body.setdefault("tool_choice", "auto")
        return body

    # ------------------------------------------------------------------ replies
    def _action(self, data: Any) -> tuple[str, ModelCall]:
        """Turn a chat-completion JSON reply into the env action; raise ModelError when it is not one."""
        try:
            choice = data["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError):
            raise ModelError(f"the server's reply is not a chat completion: {str(data)[:300]}") from None
        usage = data.get("usage") or {}
        call = ModelCall(0.0, int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                         choice.get("finish_reason"))
        content = message.get("content") or ""
        tool_calls = message.get("tool_calls") or []
        if self.tool_mode == "openai" and tool_calls:
            blocks, ids = [], []
            for k, tc in enumerate(tool_calls):
                fn = tc.get("function") or {}
                raw = fn.get("arguments")
                try:
                    args = json.loads(raw) if isinstance(raw, str) else (raw if raw is not None else {})
                except json.JSONDecodeError:
                    args = raw  # the env reports the malformed arguments to the model (a format error)
                if isinstance(args, dict):
                    blocks.append(format_json_tool_call(str(fn.get("name", "")), args))
                else:
                    payload = json.dumps({"name": fn.get("name", ""), "arguments": args}, ensure_ascii=False)
                    blocks.append(f"<tool_call>{payload}</tool_call>")
                ids.append(str(tc.get("id") or f"call_{len(self._turns)}_{k}"))
            action = "\n".join(blocks)
            wire = {"role": "assistant", "content": content,  # "" not None: llama.cpp's server wants a string
                    "tool_calls": [dict(tc, id=i, type=tc.get("type", "function")) for tc, i in zip(tool_calls, ids)]}
            self._turns.append(_Turn(action, wire, ids))
        else:
            action = content
            self._turns.append(_Turn(action, {"role": "assistant", "content": content}))
        return action, call

    def _error(self, status: int, text: str) -> ArlError:
        if status == 400 and any(w in text.lower() for w in _CONTEXT_WORDS):
            return ContextLengthExceeded(f"HTTP 400 from {self.url}: {text[:300]}")
        return ModelError(f"HTTP {status} from {self.url}: {text[:300]}")

    @staticmethod
    def _retryable(status: int) -> bool:
        return status == 429 or status >= 500

    # ------------------------------------------------------------------ transport
    def act(self, observation: str, info: dict[str, Any]) -> str:
        """Ask the model for the next action (blocking).

        Raises:
            ModelError: The server failed after the retries.
            ContextLengthExceeded: The prompt no longer fits the model's context.
        """
        httpx = _httpx()
        if self._client is None:
            self._client = httpx.Client(timeout=self.timeout_s)
        body = self.request_body(observation, info)
        start = time.perf_counter()
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                time.sleep(self.backoff_s * 2 ** (attempt - 1))
            try:
                resp = self._client.post(self.url, json=body, headers=self._headers())
            except httpx.HTTPError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if self._retryable(resp.status_code):
                last = f"HTTP {resp.status_code}: {resp.text[:300]}"
                continue
            if resp.status_code != 200:
                raise self._error(resp.status_code, resp.text)
            return self._finish(resp, start, attempt + 1)
        raise ModelError(f"{self.url} failed {self.retries + 1} times; last: {last}")

    async def aact(self, observation: str, info: dict[str, Any], client: Any = None) -> str:
        """:meth:`act` for asyncio (an ``httpx.AsyncClient``; pass one to share its connection pool)."""
        httpx = _httpx()
        own = client is None
        client = client or httpx.AsyncClient(timeout=self.timeout_s)
        try:
            body = self.request_body(observation, info)
            start = time.perf_counter()
            last = ""
            for attempt in range(self.retries + 1):
                if attempt:
                    await asyncio.sleep(self.backoff_s * 2 ** (attempt - 1))
                try:
                    resp = await client.post(self.url, json=body, headers=self._headers(), timeout=self.timeout_s)
                except httpx.HTTPError as exc:
                    last = f"{type(exc).__name__}: {exc}"
                    continue
                if self._retryable(resp.status_code):
                    last = f"HTTP {resp.status_code}: {resp.text[:300]}"
                    continue
                if resp.status_code != 200:
                    raise self._error(resp.status_code, resp.text)
                return self._finish(resp, start, attempt + 1)
            raise ModelError(f"{self.url} failed {self.retries + 1} times; last: {last}")
        finally:
            if own:
                await client.aclose()

    def _finish(self, resp: Any, start: float, attempts: int) -> str:
        try:
            data = resp.json()
        except ValueError:
            raise ModelError(f"the server's reply is not JSON: {resp.text[:300]}") from None
        action, call = self._action(data)
        call.latency_s = time.perf_counter() - start
        call.attempts = attempts
        self.calls.append(call)
        return action

    def close(self) -> None:
        """Close the blocking client (safe to call twice)."""
        if self._client is not None:
            self._client.close()
            self._client = None
