"""The GRPO baseline's policy: the local causal LMs of :mod:`arl_envs.lm` (re-exported here) and the
log-probabilities the trainer computes with them.
"""

from __future__ import annotations

from typing import Any

import torch

from arl_envs.lm import (  # noqa: F401 - the policy API of the baseline, defined in arl_envs.lm
    BYTE_ASSISTANT,
    BYTE_CHAT_TEMPLATE,
    BYTE_EOS,
    BYTE_PAD,
    BYTE_SPECIALS,
    BYTE_SYSTEM,
    BYTE_TOOL,
    BYTE_USER,
    END_OF_TURN_TOKENS,
    NUM_BYTES,
    SMOLLM2_GGUF,
    SMOLLM2_PACKAGE,
    TINY_MAX_POSITIONS,
    ChatFormat,
    Policy,
    _bytes_to_unicode,
    _stop_ids,
    build_byte_tokenizer,
    build_tiny_model,
    load_policy,
    smollm2_gguf_path,
)


# ----------------------------------------------------------------------------- log-probabilities
def _split_ok(model: Any) -> bool:
    """Whether ``lm_head(base_model(x).last_hidden_state)`` equals ``model(x).logits`` (checked once per model).

    Computing the head only at the positions that are trained on saves ``B * T * V`` floats; models that post-process
    logits (soft-capping, scaling) fail the check and use the full forward instead.
    """
    cached = getattr(model, "_arl_split_ok", None)
    if cached is not None:
        return bool(cached)
    ok = False
    head = model.get_output_embeddings()
    base = getattr(model, "base_model", None)
    if head is not None and base is not None and base is not model:
        device = next(model.parameters()).device
        ids = torch.arange(1, 6, device=device).unsqueeze(0) % model.config.vocab_size
        with torch.no_grad():
            full = model(input_ids=ids, use_cache=False).logits.float()
            split = head(base(input_ids=ids, use_cache=False).last_hidden_state).float()
        ok = bool(torch.allclose(full, split, atol=1e-4, rtol=1e-3))
    model._arl_split_ok = ok
    return ok


def hidden_states(model: Any, input_ids: torch.Tensor, **kwargs: Any) -> torch.Tensor:
    """Last hidden states ``(B, T, H)`` of the decoder (inputs right-padded; causal attention needs no mask)."""
    return model.base_model(input_ids=input_ids, use_cache=False, **kwargs).last_hidden_state


def selected_logits(model: Any, input_ids: torch.Tensor, select: torch.Tensor) -> torch.Tensor:
    """Logits at the selected positions only.

    Args:
        model: Causal LM.
        input_ids: ``(B, T)`` token ids (right-padded).
        select: ``(B, T)`` bool; True where the logits (the distribution of the NEXT token) are wanted.

    Returns:
        ``(K, V)`` float32 logits, ``K = select.sum()``, in row-major order of ``select``.
    """
    if _split_ok(model):
        h = hidden_states(model, input_ids)
        return model.get_output_embeddings()(h[select]).float()
    return model(input_ids=input_ids, use_cache=False).logits[select].float()


def token_logprobs(
    model: Any,
    input_ids: torch.Tensor,
    loss_mask: torch.Tensor,
    *,
    temperature: float = 1.0,
    with_entropy: bool = False,
    entropy_grad: bool = False,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Per-token log-probabilities of ``input_ids`` under ``model`` at the positions of ``loss_mask``.

    ``logp[b, t] = log softmax(logits[b, t-1] / temperature)[input_ids[b, t]]`` where ``loss_mask[b, t]`` is 1,
    and 0 elsewhere (``loss_mask[:, 0]`` must be 0: the first token has no context). The temperature scaling is the
    one TRL applies, so the trained distribution is the sampled one.

    Args:
        model: Causal LM.
        input_ids: ``(B, T)`` long.
        loss_mask: ``(B, T)`` float/bool, 1 on the policy's sampled tokens.
        temperature: Sampling temperature (0 is treated as 1: greedy sampling has no density to train on).
        with_entropy: Also return the entropy (nats) of the temperature-scaled distribution at those positions.
        entropy_grad: Keep the entropy in the autograd graph (for an entropy bonus); detached otherwise.

    Returns:
        ``(logp, entropy)``, each ``(B, T)`` float32 (entropy None unless requested).

    Raises:
        ValueError: ``loss_mask[:, 0]`` has a 1.
    """
    mask = loss_mask.bool()
    if mask[:, 0].any():
        raise ValueError("loss_mask[:, 0] must be 0: the first token of a sequence is never predicted")
    select = torch.zeros_like(mask)
    select[:, :-1] = mask[:, 1:]
    logits = selected_logits(model, input_ids, select)
    if temperature and temperature != 1.0:
        logits = logits / temperature
    logz = torch.log_softmax(logits, dim=-1)
    targets = input_ids[mask]
    picked = logz.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    logp = torch.zeros(mask.shape, dtype=torch.float32, device=input_ids.device)
    logp = logp.masked_scatter(mask, picked)
    entropy = None
    if with_entropy:
        ent = -(logz.exp() * logz).sum(-1)
        entropy = torch.zeros(mask.shape, dtype=torch.float32, device=input_ids.device).masked_scatter(mask, ent if entropy_grad else ent.detach())
    return logp, entropy
