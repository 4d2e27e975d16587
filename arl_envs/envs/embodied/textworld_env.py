"""TextWorld games generated from the seed: ``arl/embodied.textworld-v0``.

Games come from TextWorld's own challenge generators (Côté et al., "TextWorld: A Learning Environment for
Text-based Games", 2018, https://github.com/microsoft/TextWorld): ``tw-simple``, ``tw-coin_collector``,
``tw-treasure_hunter`` and ``tw-cooking`` with their difficulty settings, compiled by TextWorld's bundled Inform 7
and played by its engine. A compiled game is cached per (challenge, settings, game seed) under the user's cache
directory, so each game is compiled once per machine (compiling takes seconds to tens of seconds).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, ClassVar

from arl_envs.core.env import Transition
from arl_envs.core.errors import DependencyNotInstalled, InfrastructureError, ParseError, TaskLoadError
from arl_envs.envs.embodied.command_env import CommandEnv

#: Challenges offered (our name -> TextWorld's challenge id) and their default settings (TextWorld's knobs).
CHALLENGES: dict[str, tuple[str, dict[str, Any]]] = {
    "simple": ("tw-simple", {"rewards": "dense", "goal": "detailed", "test": False}),
    "coin_collector": ("tw-coin_collector", {"level": 5}),
    "treasure_hunter": ("tw-treasure_hunter", {"level": 5}),
    "cooking": ("tw-cooking", {"recipe": 1, "take": 1, "go": 1, "open": False, "cook": False, "cut": False,
                               "drop": False, "recipe_seed": 0, "split": None}),
}
#: Games per (challenge, settings) an episode draws from (game seeds ``0..n_games-1``) unless ``n_games=`` says
#: otherwise.
DEFAULT_N_GAMES = 100
#: Turns per episode unless ``max_turns=`` says otherwise.
DEFAULT_MAX_TURNS = 50

_INSTALL_HINT = "pip install 'arl-envs[textworld]'"


def default_cache_dir() -> Path:
    """``$ARL_ENVS_CACHE/textworld``, else ``$XDG_CACHE_HOME/arl-envs/textworld``, else
    ``~/.cache/arl-envs/textworld``."""
    root = os.environ.get("ARL_ENVS_CACHE")
    if root:
        return Path(root) / "textworld"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg) / "arl-envs" / "textworld"


def _textworld() -> Any:
    try:
        import textworld  # noqa: PLC0415 - optional dependency, imported on use
        import textworld.challenges  # noqa: F401, PLC0415
    except ImportError as exc:  # pragma: no cover - exercised only where textworld is absent
        raise DependencyNotInstalled(f"arl/embodied.textworld-v0 needs textworld: {_INSTALL_HINT}") from exc
    return textworld


def game_file(challenge: str, settings: dict[str, Any], seed: int, cache_dir: Path) -> Path:
    """The compiled game of (``challenge``, ``settings``, ``seed``): from the cache, or generated and compiled by
    TextWorld into it (written to a temporary directory, then moved, so concurrent makers never see a partial
    file).

    Returns:
        Path of the ``.z8`` game (its ``.json`` beside it).

    Raises:
        InfrastructureError: TextWorld's generator or compiler failed.
    """
    key = hashlib.sha1(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]
    folder = cache_dir / challenge / key
    path = folder / f"{seed}.z8"
    if path.exists() and path.with_suffix(".json").exists():
        return path
    tw = _textworld()
    folder.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{seed}-", dir=folder))
    try:
        options = tw.GameOptions()
        options.seeds = int(seed)
        options.path = str(tmp / f"{seed}.z8")
        options.force_recompile = True
        try:
            game = tw.challenges.CHALLENGES[CHALLENGES[challenge][0]][1](dict(settings), options)
            built = Path(tw.generator.compile_game(game, options))
        except Exception as exc:  # noqa: BLE001 - TextWorld's generator/compiler (Inform 7) failing is infrastructure
            raise InfrastructureError(f"TextWorld could not make {challenge} game {seed} ({settings}): "
                                      f"{type(exc).__name__}: {exc}") from exc
        os.replace(built.with_suffix(".json"), path.with_suffix(".json"))
        os.replace(built, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    with open(folder / "settings.json", "w", encoding="utf-8") as fh:
        json.dump({"challenge": challenge, "settings": settings}, fh)
    return path


class TextWorldEnv(CommandEnv):
    """One TextWorld game per episode, generated from the seed by TextWorld's challenge generators.

    Description:
        ``challenge`` picks TextWorld's generator (``simple``, ``coin_collector``, ``treasure_hunter``,
        ``cooking``) and ``settings`` its difficulty knobs (merged over :data:`CHALLENGES`' defaults: ``level``
        1-300 for coin_collector, 1-30 for treasure_hunter; ``rewards``/``goal`` for simple; ``recipe``, ``take``,
        ``go`` (1, 6, 9 or 12 rooms), ``open``, ``cook``, ``cut``, ``drop`` for cooking). Each reset draws a game
        seed in ``[0, n_games)`` from ``self.np_random``; the game is compiled once and cached in ``cache_dir``.
        ``options={"task_id": "<game seed>"}`` picks a game.
    Observation:
        TextWorld's text: the game's introduction and room description at reset, then its reply to each command.
        ``info["score"]``/``info["max_score"]`` are TextWorld's points.
    Action:
        Native: one command, bare (``open wooden door``) or in ``<action>...</action>``. JSON: ``act(command)``.
        TextWorld's parser reads it; a command it does not understand gets its reply and costs a turn.
        ``info["admissible_actions"]`` is TextWorld's list of admissible commands for the state.
    Tools:
        ``act(command: str)``.
    Rewards:
        ``task`` (weight 1): 1 when TextWorld reports the game won. ``progress`` (weight 0.1): each step's change
        in TextWorld's score / ``max_score`` (points lost count negative). ``format`` (weight 0.1): raw -1 per
        malformed reply.
    Episode end:
        Terminated when the game is won (``success``) or lost (e.g. burning the meal), or after more than
        ``max_invalid_actions`` malformed replies; truncated after ``max_turns`` (default 50). A failing
        generator or engine is ``info["env_error"]`` (truncated).
    Expert:
        TextWorld's walkthrough from the current state (its ``policy_commands``: re-planned after every step, so
        it recovers after the agent's detours).
    Arguments:
        challenge (default ``"coin_collector"``), settings (dict), n_games (default 100), cache_dir (default
        :func:`default_cache_dir`), show_admissible, action_format, reward_weights, max_turns,
        max_invalid_actions, render_mode.
    Raises:
        DependencyNotInstalled: textworld is not installed.
        ValueError: Unknown challenge or setting name.
    Version history:
        v0: first version.
    """

    #: Snapshot: the game state is in TextWorld's engine: replay the actions.
    snapshot_mode: ClassVar[str] = "replay"
    snapshot_exclude: ClassVar[tuple[str, ...]] = ("_tw",)
    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "progress": 0.1, "format": 0.1}
    default_max_turns: ClassVar[int] = DEFAULT_MAX_TURNS
    example_command: ClassVar[str] = "look"

    def __init__(
        self,
        *,
        challenge: str = "coin_collector",
        settings: dict[str, Any] | None = None,
        n_games: int = DEFAULT_N_GAMES,
        cache_dir: str | None = None,
        **kwargs: Any,
    ) -> None:
        _textworld()
        if challenge not in CHALLENGES:
            raise ValueError(f"unknown TextWorld challenge {challenge!r}; known: {', '.join(CHALLENGES)}")
        defaults = CHALLENGES[challenge][1]
        bad = sorted(set(settings or {}) - set(defaults))
        if bad:
            raise ValueError(f"unknown setting(s) {bad} for {challenge}; known: {sorted(defaults)}")
        if int(n_games) < 1:
            raise ValueError(f"n_games must be >= 1, got {n_games}")
        super().__init__(**kwargs)
        self.challenge = challenge
        self.settings = {**defaults, **(settings or {})}
        self.n_games = int(n_games)
        self.cache_dir = Path(cache_dir) if cache_dir else default_cache_dir()
        self._tw: Any = None
        self.state: Any = None
        self.game_seed = 0
        self.score = 0

    # ----------------------------------------------------------------- CommandEnv hooks
    def describe_task(self) -> str:
        return (f"You play a TextWorld text adventure ({self.challenge}). The game's introduction says what to do; "
                "you see only what the game describes. Points are scored for progress towards the goal.")

    def command_help(self) -> str:
        return ("Commands are TextWorld's: look, inventory, go north/south/east/west, take X, drop X, open X, "
                "close X, put X on Y, insert X into Y, unlock X with Y, eat X, examine X, and, in cooking games, "
                "cook X with Y, slice/dice/chop X with Y, prepare meal.")

    def _new_episode(self, task_id: str | None) -> tuple[str, str]:
        if task_id is None:
            self.game_seed = int(self.np_random.integers(0, self.n_games))
        elif task_id.isdigit():
            self.game_seed = int(task_id)
        else:
            raise TaskLoadError(f"task_id must be a game seed (digits), got {task_id!r}")
        path = game_file(self.challenge, self.settings, self.game_seed, self.cache_dir)
        tw = _textworld()
        if self._tw is not None:
            self._tw.close()
        infos = tw.EnvInfos(admissible_commands=True, policy_commands=True, score=True, max_score=True, won=True,
                            lost=True, feedback=True)
        self._tw = tw.start(str(path), request_infos=infos)
        self.state = self._tw.reset()
        self.score = int(self.state.score or 0)
        return str(self.game_seed), str(self.state.feedback).strip()

    def _interpret(self, command: str) -> tuple[str, Any]:
        # TextWorld's own parser reads the command. A leading backslash is a command of the Z-machine interpreter
        # (dumb-frotz: save, restore, quit...), not of the game: refused.
        if command.lstrip().startswith("\\"):
            raise ParseError("commands may not start with a backslash (interpreter commands are disabled)")
        if "\n" in command.strip():
            raise ParseError("write one command per turn (one line)")
        return command, command

    def _execute(self, parsed: Any) -> Transition:
        try:
            state, score, done = self._tw.step(str(parsed))
        except Exception as exc:  # noqa: BLE001 - the engine failing is infrastructure, not the agent's doing
            return Transition("The game engine failed; this episode is not scored.",
                              env_error=f"TextWorld engine: {type(exc).__name__}: {exc}")
        self.state = state
        max_score = max(int(state.max_score or 1), 1)
        parts = {"progress": (int(score) - self.score) / max_score}
        self.score = int(score)
        won, lost = bool(state.won), bool(state.lost)
        if won:
            parts["task"] = 1.0
        info = {"score": self.score, "max_score": max_score, "game_seed": self.game_seed}
        return Transition(str(state.feedback).strip(), parts, terminated=won or lost or bool(done), success=won,
                          info=info)

    def admissible_actions(self) -> list[str]:
        return list(self.state.admissible_commands or []) if self.state is not None else []

    def expert_command(self) -> str:
        plan = list(self.state.policy_commands or [])
        return plan[0] if plan else "look"

    def _close(self) -> None:
        if self._tw is not None:
            self._tw.close()
            self._tw = None
