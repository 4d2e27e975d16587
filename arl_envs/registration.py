"""The one table of environment ids (``arl_envs/CONTRACT.md``, "Ids").

``import arl_envs`` calls :func:`register_all`, so ``gym.make("arl/<domain>.<task>-v<N>")`` works after it, and
``gym.make("arl_envs:arl/...")`` works without it (Gymnasium imports the module before the ``:``).
Truncation is done by the envs themselves (their ``max_turns`` kwarg), so ``max_episode_steps`` stays None and no
``TimeLimit`` wrapper is stacked on top.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gymnasium as gym


@dataclass(frozen=True)
class EnvSpecRow:
    """One registered id.

    Attributes:
        id: ``arl/<domain>.<task>-v<N>``.
        entry_point: ``"module:Class"``, imported lazily by ``gym.make``.
        description: One line for ``arl-envs list``.
        kwargs: Default constructor kwargs.
        max_episode_steps: Extra TimeLimit; None because envs truncate at their own ``max_turns``.
        tags: Free-form labels (e.g. ``"slow"`` for envs that start a browser).
    """

    id: str
    entry_point: str
    description: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    max_episode_steps: int | None = None
    tags: tuple[str, ...] = ()


#: Our own web tasks (``arl_envs.envs.web.tasks``): name -> description. Listed here rather than read from the task
#: registry so that ``import arl_envs`` imports no web module; ``arl_envs_tests/test_architecture.py`` checks that
#: this list and the registry agree.
WEB_TASKS: tuple[tuple[str, str], ...] = (
    ('book-flight', 'Book a flight meeting a criterion (cheapest, nonstop...): search, choose, passenger, confirm.'),
    ('choose-date', 'Choose a date in a calendar widget (navigate months, click the day), then submit.'),
    ('click-button', 'Click the button with the given label among several.'),
    ('click-link', 'Click the news link with the given text among look-alike headlines.'),
    ('email-inbox', 'Delete, forward or reply to the right email in a webmail inbox.'),
    ('enter-text', 'Type the given text into a field and submit the form.'),
    ('fix-form', 'Submit a registration form; fix the fields its validation rejects (a pre-filled draft).'),
    ('login', 'Log in with the given credentials, then open the named page of the app (URL goal).'),
    ('menu-navigate', 'Open a page through a two-level hover menu (entries repeat under different top items).'),
    ('pick-largest', 'Choose the listing with the largest / smallest value of an attribute among several.'),
    ('read-page', "Read an article (partly behind 'Read more') and answer a question about it with answer()."),
    ('search-list', 'Search a paginated directory and open the profile of the person in the named department.'),
    ('select-dropdown', 'Choose the requested options in two dropdowns of a form, then submit.'),
    ('shop', 'Add the requested items in the requested quantities to a cart and check out (multi-page).'),
    ('sort-table', "Sort a table by a column and report the top row's name with answer()."),
    ('tab-info', "Open a product's details in a new browser tab, switch to the right page tab, answer a question."),
    ('tick-checkboxes', 'Tick exactly the requested checkboxes (untick the others), then submit.'),
)


def _web_rows() -> tuple[EnvSpecRow, ...]:
    """``arl/web.<name>-v0`` for every task of :data:`WEB_TASKS`."""
    return tuple(
        EnvSpecRow(
            f"arl/web.{name}-v0",
            "arl_envs.envs.web.env:WebEnv",
            description,
            kwargs={"task": name},
            tags=("browser", "slow"),
        )
        for name, description in WEB_TASKS
    )


#: reasoning-gym's datasets offered as ids, and those left out with the reason: a shipped file next to the domain
#: (read here as data, so that ``import arl_envs`` imports neither the domain module nor reasoning_gym);
#: ``arl_envs_tests/envs/reasoning/test_reasoning_gym.py`` checks it against the installed package.
REASONING_GYM_FILE = Path(__file__).parent / "envs" / "reasoning" / "datasets.json"


def _reasoning_gym_rows() -> tuple[EnvSpecRow, ...]:
    """``arl/reasoning.<dataset>-v0`` for every dataset of :data:`REASONING_GYM_FILE`."""
    names = json.loads(REASONING_GYM_FILE.read_text(encoding="utf-8"))["datasets"]
    return tuple(
        EnvSpecRow(
            f"arl/reasoning.{name}-v0",
            "arl_envs.envs.reasoning.env:ReasoningGymEnv",
            f"reasoning-gym '{name}': one generated item per episode, scored by reasoning-gym's score_answer.",
            kwargs={"dataset": name},
            tags=("lib:reasoning-gym", "domain-conformance"),
        )
        for name in names
    )


#: Two-player OpenSpiel games seated against an opponent (``GameSeatEnv`` over ``openspiel_v0``): id name,
#: OpenSpiel game string, expert (``"solver"``: exact minimax; ``"mcts"``: MCTS / IS-MCTS with
#: ``expert_simulations``), expert simulations, hands per match (1: one game; poker is a match so that skill shows
#: over the deal's luck), description.
OPENSPIEL_GAMES: tuple[tuple[str, str, str, int, int, str], ...] = (
    ("breakthrough", "breakthrough(rows=6,columns=6)", "mcts", 200, 1,
     "Breakthrough on 6x6: race a pawn to the far row."),
    ("hex", "hex(board_size=5)", "mcts", 200, 1, "Hex on 5x5: connect your two sides."),
    ("othello", "othello", "mcts", 300, 1, "Othello (Reversi) on 8x8: most discs wins."),
    ("clobber", "clobber", "mcts", 200, 1, "Clobber on 5x6: capture orthogonally; the last to move wins."),
    ("pentago", "pentago", "mcts", 200, 1, "Pentago: place a marble, twist a quadrant; five in a row wins."),
    ("mancala", "mancala", "mcts", 200, 1, "Mancala (Kalah): sow seeds; most seeds in your store wins."),
    ("amazons", "amazons", "mcts", 100, 1, "Amazons on 6x6: move a queen, shoot an arrow; the last to move wins."),
    ("dots_and_boxes", "dots_and_boxes", "solver", 0, 1, "Dots and boxes on 2x2 boxes: claim boxes (exact solver)."),
    ("nim", "nim", "solver", 0, 1, "Nim with piles 1,3,5,7: the last to take wins (exact solver)."),
    ("leduc_poker", "leduc_poker", "cfr", 0, 50,
     "Leduc poker (6 cards, two betting rounds, hidden cards; CFR+ expert)."),
    ("y", "y(board_size=7)", "mcts", 200, 1, "Game of Y on a size-7 triangle: connect all three sides."),
)


def _openspiel_rows() -> tuple[EnvSpecRow, ...]:
    """``arl/multiagent.<name>-v0`` for every game of :data:`OPENSPIEL_GAMES`."""
    rows = []
    for name, game, expert, sims, games, description in OPENSPIEL_GAMES:
        game_kwargs: dict[str, Any] = {"game": game, "expert": expert}
        if sims:
            game_kwargs["expert_simulations"] = sims
        rows.append(EnvSpecRow(
            f"arl/multiagent.{name}-v0",
            "arl_envs.envs.multiagent.view:GameSeatEnv",
            f"{description} OpenSpiel rules vs an opponent (random | mcts | expert | callable); success = "
            + ("win." if games == 1 else f"chips > 0 over a match of {games} hands."),
            kwargs={"game": "openspiel", "seat": "random", "game_kwargs": game_kwargs,
                    **({"games": games} if games > 1 else {})},
            tags=("lib:open-spiel", "domain-conformance"),
        ))
    return tuple(rows)


ENVS: tuple[EnvSpecRow, ...] = (
    EnvSpecRow(
        "arl/math.arithmetic-v1",
        "arl_envs.envs.math.env:ArithmeticEnv",
        "Generated arithmetic (integers, fractions, linear equations, modular, word problems), difficulty 1-5.",
    ),
    EnvSpecRow(
        "arl/math.countdown-v1",
        "arl_envs.envs.math.env:CountdownEnv",
        "Countdown: reach a target with + - * / over given numbers, each used at most once.",
    ),
    EnvSpecRow(
        "arl/math.dataset-v1",
        "arl_envs.envs.math.env:DatasetEnv",
        "Math word problems from JSONL (GSM8K or MATH form); default: GSM8K test split (1,319 problems).",
    ),
    EnvSpecRow(
        "arl/math.tool-v1",
        "arl_envs.envs.math.tool:ToolMathEnv",
        "Tool-integrated math: a sandboxed persistent Python session, then a \\boxed{} answer.",
        tags=("sandbox",),
    ),
    EnvSpecRow(
        "arl/math.formal-v0",
        "arl_envs.envs.math.formal:FormalProofEnv",
        "Coq 8.16 proofs of 78 shipped lemmas (nat arithmetic, lists, logic), checked in the sandbox; Coq's errors as feedback.",
        tags=("sandbox", "domain-conformance"),
    ),
    # --- agent settings ---
    EnvSpecRow(
        "arl/memory.bank-v1",
        "arl_envs.envs.memory.bank:MemoryBankEnv",
        "Memory-R1: manage a bounded memory bank (add/update/delete/noop) over multi-session dialogue; answer from it.",
    ),
    EnvSpecRow(
        "arl/selfplay.propose-solve-v1",
        "arl_envs.envs.selfplay.propose_solve:ProposeSolveEnv",
        "Absolute Zero: propose a Python program + inputs (sandbox-checked), then solve it k times (deduction/"
        "abduction/induction); solver correctness + proposer learnability.",
        tags=("sandbox", "domain-conformance"),
    ),
    # --- search ---
    EnvSpecRow(
        "arl/search.multihop-v1",
        "arl_envs.envs.search.env:SearchMultihopEnv",
        "Multi-hop QA (2-4 hops) over a generated fictional encyclopedia; <search>/<open>/<answer>, BM25.",
    ),
    EnvSpecRow(
        "arl/search.qa-v1",
        "arl_envs.envs.search.env:SearchQAEnv",
        "Search-R1 QA over a wiki-18-format JSONL corpus (corpus_path, qa_path); default: a shipped sample.",
    ),
    EnvSpecRow(
        "arl/search.rewrite-v0",
        "arl_envs.envs.search.rewrite:QueryRewriteEnv",
        "DeepRetrieval: rewrite a multi-hop question into one query; reward = recall@5 of its gold articles under BM25.",
    ),
    # --- code ---
    EnvSpecRow(
        "arl/code.functions-v0",
        "arl_envs.envs.code.env:FunctionsEnv",
        "Write a Python function/program, refine on visible-test feedback; scored on hidden tests (generated or HumanEval).",
    ),
    EnvSpecRow(
        "arl/code.repo-v1",
        "arl_envs.envs.code.repo_env:RepoEnv",
        "Fix an injected bug in a small generated Python repo with bash/read/write/apply_patch; hidden tests on submit.",
    ),
    EnvSpecRow(
        "arl/code.swe-v0",
        "arl_envs.envs.code.swe.env:SweEnv",
        "SWE-smith-style: fix a mutation in a real PyPI project (split/project/instance_id); resolved = F2P and P2P pass.",
        tags=("sandbox", "domain-conformance"),
    ),
    # --- multiagent ---
    EnvSpecRow(
        "arl/multiagent.tictactoe-v1",
        "arl_envs.envs.multiagent.view:GameSeatEnv",
        "Tic-tac-toe vs an opponent (random | expert minimax | callable); success = not losing (a drawn game).",
        kwargs={"game": "tictactoe", "seat": "random"},
    ),
    EnvSpecRow(
        "arl/multiagent.connect_four-v1",
        "arl_envs.envs.multiagent.view:GameSeatEnv",
        "Connect Four vs an opponent (random | expert alpha-beta | callable); success = win.",
        kwargs={"game": "connect_four", "seat": "random"},
    ),
    EnvSpecRow(
        "arl/multiagent.kuhn_poker-v1",
        "arl_envs.envs.multiagent.view:GameSeatEnv",
        "Kuhn poker match of 100 hands, seats alternating, vs an opponent (random | equilibrium | callable); success = chips > 0.",
        kwargs={"game": "kuhn_poker", "seat": "random", "games": 100},
    ),
    EnvSpecRow(
        "arl/multiagent.negotiation-v1",
        "arl_envs.envs.multiagent.view:GameSeatEnv",
        "Split books/hats/balls with private values over <= 20 messages (propose/accept/reject + free text) vs an "
        "opponent (random | value-greedy | callable); success = a deal worth >= half your pool value.",
        kwargs={"game": "negotiation", "seat": "random"},
    ),
    EnvSpecRow(
        "arl/multiagent.referential-v1",
        "arl_envs.envs.multiagent.view:GameSeatEnv",
        "Cooperative referential game: speaker describes a target among distractors, listener picks; partner "
        "scripted by default (random | expert | callable); success = the target is picked.",
        kwargs={"game": "referential", "seat": "random", "opponent": "expert"},
    ),
    EnvSpecRow(
        "arl/multiagent.gridpath-v1",
        "arl_envs.envs.multiagent.view:GameSeatEnv",
        "3 agents walk to their goals on a 5x5 grid with simultaneous moves and collisions; you steer one, path "
        "planners the others (expert | random | callable); success = every agent arrives.",
        kwargs={"game": "gridpath", "seat": "random", "opponent": "expert"},
    ),
    # --- embodied ---
    EnvSpecRow(
        "arl/embodied.household-v0",
        "arl_envs.envs.embodied.household:HouseholdEnv",
        "ALFWorld-style household tasks (6 families) in a generated partially observable house, difficulty 1-5.",
    ),
    EnvSpecRow(
        "arl/embodied.sokoban-v0",
        "arl_envs.envs.embodied.sokoban:SokobanEnv",
        "Sokoban as a text grid; levels generated by reverse play (always solvable), size and box-count kwargs.",
    ),
    EnvSpecRow(
        "arl/embodied.frozenlake-v0",
        "arl_envs.envs.embodied.frozenlake:FrozenLakeEnv",
        "Gymnasium's FrozenLake as a text grid on random maps; slippery kwarg (default False).",
        tags=("lib:gymnasium",),
    ),
    EnvSpecRow(
        "arl/embodied.babyai-v0",
        "arl_envs.envs.embodied.babyai:BabyAIEnv",
        "BabyAI missions (minigrid) as text: egocentric partial view, 7 text actions, level kwarg; BabyAI bot expert.",
        tags=("lib:minigrid",),
    ),
    EnvSpecRow(
        "arl/embodied.scienceworld-v0",
        "arl_envs.envs.embodied.scienceworld:ScienceWorldEnv",
        "ScienceWorld science tasks (needs Java): task/simplification kwargs, variation from the seed; gold-path expert.",
        tags=("slow", "lib:scienceworld"),
    ),
    EnvSpecRow(
        "arl/embodied.textworld-v0",
        "arl_envs.envs.embodied.textworld_env:TextWorldEnv",
        "TextWorld games generated from the seed (simple | coin_collector | treasure_hunter | cooking, difficulty "
        "settings), compiled once and cached; TextWorld's score and walkthrough expert.",
        tags=("lib:textworld", "domain-conformance", "slow"),
    ),
    # --- web ---
    *_web_rows(),
    EnvSpecRow(
        "arl/web.miniwob-v0",
        "arl_envs.envs.web.miniwob:MiniWoBEnv",
        "MiniWoB++ task pages (miniwob package) with their own reward, kwarg task= (default click-checkboxes): "
        "130 tasks, 38 with scripted experts; `arl-envs list --miniwob` lists them.",
        kwargs={"task": "click-checkboxes"},
        tags=("browser", "slow", "lib:miniwob"),
    ),
    # --- tool use with a simulated user (tau-bench style) ---
    EnvSpecRow(
        "arl/tooluse.retail-v0",
        "arl_envs.envs.tooluse.env:RetailEnv",
        "Customer service of an online shop: talk with a simulated user, call 12 order/product tools under a "
        "policy (authenticate, confirm writes); reward = final database equals the goal; 64 templates.",
    ),
    EnvSpecRow(
        "arl/tooluse.airline-v0",
        "arl_envs.envs.tooluse.env:AirlineEnv",
        "Airline customer service: talk with a simulated user, book/cancel/change flights, bags and passengers "
        "under a policy (cancellation rules, basic economy, confirmations); final-database reward; 66 templates.",
    ),
    # --- reasoning-gym datasets (one id each) and OpenSpiel games ---
    *_reasoning_gym_rows(),
    *_openspiel_rows(),
    EnvSpecRow(
        "arl/web.site-shop-v0",
        "arl_envs.envs.web.sites.env:SiteEnv",
        "Multi-page shop site (Flask + SQLite, 5,000 products): 36 templates (answer, navigate, change the DB); "
        "kwargs family=, size=; DB restored per reset.",
        kwargs={"site": "shop"},
        tags=("browser", "slow"),
    ),
    EnvSpecRow(
        "arl/web.site-webshop-v0",
        "arl_envs.envs.web.sites.env:SiteEnv",
        "WebShop-style purchase on the shop site: find and buy a product by attributes, options and a price bound; "
        "WebShop's partial-credit reward.",
        kwargs={"site": "shop", "family": "webshop"},
        tags=("browser", "slow"),
    ),
    EnvSpecRow(
        "arl/web.site-forum-v0",
        "arl_envs.envs.web.sites.env:SiteEnv",
        "Multi-page forum site (Flask + SQLite, 12 subforums, 2,000 posts, ~7,000 comments): 38 templates (answer, "
        "navigate, post/comment/vote/edit in the DB); kwargs family=, size=; DB restored per reset.",
        kwargs={"site": "forum"},
        tags=("browser", "slow"),
    ),
    EnvSpecRow(
        "arl/web.site-cross-v0",
        "arl_envs.envs.web.sites.cross.env:CrossSiteEnv",
        "Cross-site tasks over the shop and the forum (one browser, two apps, two databases): find something in one "
        "site, act on it in the other; 12 templates checked in both databases.",
        tags=("browser", "slow"),
    ),
    EnvSpecRow(
        "arl/web.site-tracker-v0",
        "arl_envs.envs.web.sites.env:SiteEnv",
        "GitLab-like issue tracker site (Flask + SQLite, 8 projects, 3,000 issues, merge requests, milestones): 46 "
        "templates (answer, navigate, change issues/labels/milestones in the DB); kwargs family=, size=.",
        kwargs={"site": "tracker"},
        tags=("browser", "slow"),
    ),
    EnvSpecRow(
        "arl/web.site-admin-v0",
        "arl_envs.envs.web.sites.env:SiteEnv",
        "The shop's back office (own staff login; orders, customers, products, stock, monthly reports): 36 templates "
        "(answer, navigate, change orders/stock/prices/customers in the DB); kwargs family=, size=.",
        kwargs={"site": "admin"},
        tags=("browser", "slow"),
    ),
    # --- example: the env to copy; docs site, "Add an environment" ---
    EnvSpecRow(
        "arl/remote-v0",
        "arl_envs.server.remote:RemoteEnv",
        "Any id served by `arl-envs serve` (url=, env_id=, env_kwargs=): the same episode over a WebSocket session.",
        tags=("remote", "domain-conformance"),
    ),
    EnvSpecRow(
        "arl/example.guess-v0",
        "arl_envs.envs.example.guess:GuessEnv",
        "EXAMPLE env to copy (50 lines): guess a secret number from higher/lower replies; binary-search expert.",
        tags=("example",),
    ),
)


def source_library(row: EnvSpecRow) -> str:
    """The library a row's games or tasks come from (its ``lib:<name>`` tag), or ``"arl-envs"`` (our own)."""
    for tag in row.tags:
        if tag.startswith("lib:"):
            return tag[4:]
    return "arl-envs"


def register_all() -> None:
    """Register every id of :data:`ENVS` with Gymnasium (idempotent)."""
    for row in ENVS:
        if row.id in gym.registry:
            continue
        gym.register(
            id=row.id,
            entry_point=row.entry_point,
            kwargs=dict(row.kwargs),
            max_episode_steps=row.max_episode_steps,
            disable_env_checker=False,
        )


def env_ids() -> list[str]:
    """Every registered arl-envs id, in table order."""
    return [row.id for row in ENVS]


def describe(env_id: str) -> EnvSpecRow:
    """The table row of ``env_id``.

    Raises:
        KeyError: Unknown id.
    """
    for row in ENVS:
        if row.id == env_id:
            return row
    raise KeyError(f"unknown env id {env_id!r}; known: {env_ids()}")
