"""Plain PyTorch REINFORCE over an arl vector env (``arl_envs.vector.make_vec``): no RL framework.

The policy is a causal LM that sees the current observation (chat-templated) and samples the action; only the
sampled tokens are trained on (the observation is the prompt: the message boundary is where sampling starts).
Gymnasium 1.x vector infos hold ``reward_components`` as ``{part: array}``, ``env_error`` as an object array with
its ``_env_error`` mask: an episode with an env error is dropped from the loss. Next-step autoreset: the step
after an episode ends only resets that sub-env, so its action is ignored and not trained on.
Tested with torch 2.13 (CPU), gymnasium 1.x, transformers 5.24.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from arl_envs.vector import make_vec


def sample(model: Any, tok: Any, observations: tuple[str, ...], max_new_tokens: int) -> tuple[list[str], torch.Tensor]:
    """Sample one action per observation; return the texts and the summed log-prob of each (with grad)."""
    prompts = [tok.apply_chat_template([{"role": "user", "content": o}], tokenize=False, add_generation_prompt=True)
               for o in observations]
    enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**enc, do_sample=True, max_new_tokens=max_new_tokens, pad_token_id=tok.pad_token_id)
    new = out[:, enc["input_ids"].shape[1]:]
    mask = torch.cumsum((new == tok.eos_token_id).int(), 1) - (new == tok.eos_token_id).int() == 0  # up to EOS
    attn = torch.cat([enc["attention_mask"], mask.long()], 1)
    logits = model(input_ids=out, attention_mask=attn).logits[:, enc["input_ids"].shape[1] - 1:-1].float()
    logp = torch.log_softmax(logits, -1).gather(-1, new.unsqueeze(-1)).squeeze(-1)
    return tok.batch_decode(new, skip_special_tokens=True), (logp * mask).sum(1)


def train(env_id: str = "arl/math.arithmetic-v1", *, num_envs: int = 4, iterations: int = 3, steps: int = 4,
          max_new_tokens: int = 8, lr: float = 1e-3, mode: str = "sync", model: Any = None, tokenizer: Any = None,
          **env_kwargs: Any) -> list[dict[str, float]]:
    """REINFORCE with a batch-mean baseline; one update per ``steps`` vector steps. Returns per-iteration stats."""
    if model is None:
        from arl_baselines.integrations.trl_grpo import tiny_model_and_tokenizer
        model, tokenizer = tiny_model_and_tokenizer()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    envs = make_vec(env_id, num_envs, mode=mode, **env_kwargs)
    obs, _ = envs.reset(seed=0)
    resetting = np.zeros(num_envs, dtype=bool)  # the next step of these sub-envs is an autoreset
    traj: list[list[tuple[torch.Tensor, float]]] = [[] for _ in range(num_envs)]
    history = []
    for _ in range(iterations):
        done_logps, done_returns, parts, errors = [], [], {}, 0
        for _ in range(steps):
            actions, logps = sample(model, tokenizer, obs, max_new_tokens)
            obs, rewards, term, trunc, infos = envs.step(actions)
            for part, values in infos.get("reward_components", {}).items():
                if not part.startswith("_"):
                    parts[part] = parts.get(part, 0.0) + float(np.sum(np.where(resetting, 0.0, values)))
            failed = infos.get("_env_error", np.zeros(num_envs, dtype=bool))
            for i in range(num_envs):
                if resetting[i]:
                    continue
                traj[i].append((logps[i], float(rewards[i])))
                if term[i] or trunc[i]:
                    if failed[i]:  # infrastructure failure: the reward says nothing about the policy
                        errors += 1
                    else:
                        rs = [r for _, r in traj[i]]
                        done_returns += [sum(rs[t:]) for t in range(len(rs))]  # returns-to-go
                        done_logps += [lp for lp, _ in traj[i]]
                    traj[i] = []
            resetting = term | trunc
        stats = {"episodes_steps": float(len(done_logps)), "env_errors": float(errors), "loss": 0.0,
                 **{f"reward/{k}": v for k, v in parts.items()}}
        if done_logps:
            g = torch.tensor(done_returns)
            loss = -((g - g.mean()) * torch.stack(done_logps)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            stats.update(loss=loss.item(), mean_return_to_go=g.mean().item())
        traj = [[(lp.detach(), r) for lp, r in t] for t in traj]  # unfinished episodes: no graph across updates
        history.append(stats)
    envs.close()
    return history


if __name__ == "__main__":  # pragma: no cover - a manual run
    for row in train():
        print(row)
