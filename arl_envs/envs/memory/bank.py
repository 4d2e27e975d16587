"""``arl/memory.bank-v1``: manage a bounded memory bank over a multi-session dialogue, then answer from it alone."""

from __future__ import annotations

import ast
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel, Field

from arl_envs.core.actions import ParseError, parse_untrusted_python
from arl_envs.core.env import AgentEnv, Transition
from arl_envs.core.errors import TaskLoadError
from arl_envs.core.tools import Tool, ToolCall
from arl_envs.envs.search.scoring import exact_match, f1

#: Default bank capacity (entries) and entry length (characters).
DEFAULT_MAX_ENTRIES = 24
DEFAULT_MAX_ENTRY_CHARS = 160
#: Bank operations accepted in one turn.
MAX_OPS_PER_TURN = 32
#: The answer for a fact that was retracted ("I no longer have a pet").
NONE_ANSWER = "none"
METRICS = ("em", "f1")

_SYLLABLES = ("ka", "lo", "mi", "ren", "tha", "vo", "zel", "qui", "dra", "nu", "sa", "bri", "to", "gal", "fen", "ys")
_SURNAMES = ("Vask", "Orrin", "Thale", "Kessel", "Marrow", "Pell", "Quist", "Dunmore", "Ashby", "Rook", "Fenwick")
#: attribute -> (values, intro, change, retract or None, question). Templates use {v} (new) and {o} (old value).
ATTRIBUTES: dict[str, tuple[tuple[str, ...], str, str, str | None, str]] = {
    "city": (
        ("Lisbon", "Oslo", "Quito", "Hanoi", "Tunis", "Perth", "Bergen", "Osaka", "Lima", "Graz"),
        "I live in {v} these days.",
        "Big news: I moved from {o} to {v}.",
        None,
        "In which city does {p} live?",
    ),
    "job": (
        ("nurse", "baker", "pilot", "architect", "librarian", "welder", "chemist", "translator", "farmer"),
        "I work as a {v}.",
        "I left my job ({o}); I am a {v} now.",
        "I quit my job ({o}) and I am not working at the moment.",
        "What is {p}'s job?",
    ),
    "pet": (
        ("parrot", "beagle", "tortoise", "ferret", "goldfish", "tabby cat", "rabbit", "iguana"),
        "I have a {v} at home.",
        "My {o} went to live with my aunt, and I adopted a {v}.",
        "My {o} went to live with my aunt; I have no pet now.",
        "What pet does {p} have?",
    ),
    "hobby": (
        ("chess", "pottery", "climbing", "rowing", "origami", "birdwatching", "fencing", "knitting"),
        "On weekends I do {v}.",
        "I dropped {o} and took up {v} instead.",
        "I gave up {o}; no hobby for me any more.",
        "What is {p}'s hobby?",
    ),
    "food": (
        ("ramen", "paella", "dumplings", "goulash", "falafel", "risotto", "tacos", "pierogi"),
        "My favourite food is {v}.",
        "I went off {o}; my favourite food is {v} now.",
        None,
        "What is {p}'s favourite food?",
    ),
}
_CHATTER = (
    "The weather was strange today.",
    "Did anyone watch the match last night?",
    "I keep forgetting to water the plants.",
    "Traffic was terrible this morning.",
    "I read a good book about lighthouses.",
    "We should all have dinner together soon.",
    "My phone battery dies so fast.",
)


def fact_text(person: str, attribute: str, value: str) -> str:
    """The oracle's memory entry for one fact, e.g. ``"Ana Vask's job: nurse"``."""
    return f"{person}'s {attribute}: {value}"


@dataclass(frozen=True)
class Event:
    """One fact event of a session: ``kind`` is ``"introduce" | "change" | "retract"``."""

    kind: str
    person: str
    attribute: str
    value: str | None
    old: str | None = None


@dataclass
class Entry:
    """One memory-bank entry (``id`` is stable; ids are never reused)."""

    id: int
    text: str


@dataclass
class Scenario:
    """A generated cast and its dialogue: ``sessions[i]`` = (dialogue lines, events); ``questions`` at the end."""

    people: list[str]
    sessions: list[tuple[list[str], list[Event]]]
    questions: list[tuple[str, str]] = field(default_factory=list)


#: Most values of one attribute an entry may name and still hold one of them (the later one: "moved from X to Y").
MAX_VALUES_PER_ENTRY = 2


def _words(text: str) -> str:
    """``text`` lower-cased (Unicode NFC) with every run of non-word characters made one space, padded by spaces:
    ``"Ana Vask's city: Oslo"`` -> ``" ana vask s city oslo "`` (so names and values match as whole words)."""
    return " " + " ".join(re.split(r"\W+", unicodedata.normalize("NFC", text).lower())).strip() + " "


def _mentions(words: str, phrase: str) -> list[int]:
    """Start offsets of ``phrase`` as whole words in ``words`` (a :func:`_words` string)."""
    target = _words(phrase)
    if not target.strip():
        return []
    out, i = [], words.find(target)
    while i >= 0:
        out.append(i)
        i = words.find(target, i + 1)
    return out


def _holds(text: str, person: str, value: str, people: tuple[str, ...] | list[str] = ()) -> bool:
    """Whether ``text`` states, unambiguously, that ``person``'s attribute has ``value``.

    Names and values match as whole words (:func:`_words`). With ``people`` (the cast) an entry holds
    a fact only when ``person`` is the one member of the cast it names, and, of the values of ``value``'s
    attribute, it names ``value`` alone, or it names two and ``value`` comes last (the dialogue's own phrasing of
    a change: "moved from Lisbon to Oslo" holds Oslo). So an entry that names several people, or lists more values
    than that, holds nothing of the attribute: it states nothing about one person ("Ana, Bo, Cy: Lisbon, Oslo,
    Quito" or every value of every attribute is no memory of a fact).
    """
    norm = _words(text)
    if not (_mentions(norm, person) and _mentions(norm, value)):
        return False
    if not people:
        return True
    if sum(bool(_mentions(norm, p)) for p in people) != 1:
        return False
    values = next((spec[0] for spec in ATTRIBUTES.values() if value in spec[0]), ())
    listed = sorted((max(_mentions(norm, v)), v) for v in values if _mentions(norm, v))
    if len(listed) > MAX_VALUES_PER_ENTRY:
        return False
    return listed[-1][1] == value


def generate_scenario(rng: Any, n_people: int, n_sessions: int, n_questions: int) -> Scenario:
    """A random cast with facts introduced in session 1 and changed/retracted/introduced later.

    Args:
        rng: A ``numpy.random.Generator`` (the env's ``np_random``).
        n_people: Cast size (2-8).
        n_sessions: Sessions (>= 1).
        n_questions: Questions asked at the end (about facts that were ever introduced).

    Returns:
        The :class:`Scenario`; the gold answer of a retracted fact is :data:`NONE_ANSWER`.
    """
    def pick(seq: tuple[str, ...] | list[str]) -> Any:
        return seq[int(rng.integers(0, len(seq)))]

    people: list[str] = []
    while len(people) < n_people:
        first = "".join(pick(_SYLLABLES) for _ in range(int(rng.integers(2, 4)))).capitalize()
        name = f"{first} {pick(_SURNAMES)}"
        if name not in people and all(name.split()[0] != p.split()[0] for p in people):
            people.append(name)
    state: dict[tuple[str, str], str | None] = {}
    attrs = list(ATTRIBUTES)
    sessions: list[tuple[list[str], list[Event]]] = []
    for s in range(n_sessions):
        events: list[Event] = []
        if s == 0:
            for p in people:
                for a in rng.choice(attrs, size=2, replace=False):
                    events.append(Event("introduce", p, str(a), pick(ATTRIBUTES[str(a)][0])))
        else:
            for _ in range(int(rng.integers(1, 4))):
                p, a = pick(people), str(pick(attrs))
                if any(e.person == p and e.attribute == a for e in events):
                    continue
                current = state.get((p, a))
                values = ATTRIBUTES[a][0]
                if current is None:
                    events.append(Event("introduce", p, a, pick(values)))
                elif ATTRIBUTES[a][3] is not None and rng.random() < 0.35:
                    events.append(Event("retract", p, a, None, current))
                else:
                    new = pick([v for v in values if v != current])
                    events.append(Event("change", p, a, new, current))
        lines: list[str] = []
        for e in events:
            values, intro, change, retract, _ = ATTRIBUTES[e.attribute]
            template = intro if e.kind == "introduce" else change if e.kind == "change" else retract
            lines.append(f"{e.person.split()[0]}: {template.format(v=e.value, o=e.old)}")
            state[(e.person, e.attribute)] = e.value
        for _ in range(int(rng.integers(1, 3))):
            lines.insert(int(rng.integers(0, len(lines) + 1)), f"{pick(people).split()[0]}: {pick(_CHATTER)}")
        sessions.append((lines, events))
    keys = sorted(state)
    order = rng.permutation(len(keys))[: min(n_questions, len(keys))]
    questions = []
    for i in order:
        p, a = keys[int(i)]
        questions.append((ATTRIBUTES[a][4].format(p=p), state[(p, a)] or NONE_ANSWER))
    return Scenario(people, sessions, questions)


class TextArgs(BaseModel):
    """Arguments of ``add``."""

    text: str = Field(description="The memory to store (one fact, short).")


class UpdateArgs(BaseModel):
    """Arguments of ``update``."""

    id: int = Field(description="Id of the entry to overwrite.", ge=0, le=10_000)
    text: str = Field(description="The new text of the entry.")


class DeleteArgs(BaseModel):
    """Arguments of ``delete``."""

    id: int = Field(description="Id of the entry to remove.", ge=0, le=10_000)


class NoArgs(BaseModel):
    """``noop`` takes no arguments."""


class AnswerArgs(BaseModel):
    """Arguments of ``answer``."""

    answer: str = Field(description="The answer to the question (a few words; 'none' if it no longer applies).")


BANK_TOOLS = (
    Tool("add", "Add an entry to the memory bank.", TextArgs),
    Tool("update", "Overwrite the entry with this id.", UpdateArgs),
    Tool("delete", "Delete the entry with this id.", DeleteArgs),
    Tool("noop", "Leave the memory bank as it is.", NoArgs),
)
ANSWER_TOOL = Tool("answer", "Answer the current question from the memory bank.", AnswerArgs)
_CALL_LINE = re.compile(r"^\s*(add|update|delete|noop|answer)\s*\(.*\)\s*$", re.MULTILINE)
_ARG_NAMES = {"add": ("text",), "update": ("id", "text"), "delete": ("id",), "noop": (), "answer": ("answer",)}


class MemoryBankEnv(AgentEnv):
    """Memory-bank management over a long multi-session dialogue (the Memory-R1 setting).

    Follows "Memory-R1: Enhancing Large Language Model Agents to Manage and Utilize Memories via Reinforcement
    Learning" (Yan et al., 2025): a memory manager chooses ADD / UPDATE / DELETE / NOOP after each dialogue turn,
    and answers are produced from retrieved memories alone; here the dialogue is generated (a fictional cast whose
    facts are introduced, changed and retracted across sessions), so every operation has an oracle verdict.

    Description:
        ``n_sessions`` sessions of dialogue among ``n_people`` generated characters. After each session the agent
        edits the bank; the dialogue is never shown again. Then ``n_questions`` questions about the latest facts
        are asked one at a time, with only the bank in view. A retracted fact's answer is ``none``.
    Observation:
        Session phase: the session's dialogue lines and the bank (``[id] text`` per entry), then the results of the
        operations (errors included). Question phase: the bank and the question.
    Action:
        Native: one call per line, Python syntax: ``add("text")``, ``update(3, "text")``, ``delete(3)``,
        ``noop()`` (up to 32 per turn, applied in order; one turn ends the session), or ``answer("text")`` in the
        question phase. JSON: the same tools as ``<tool_call>`` blocks.
    Tools:
        ``add(text)``, ``update(id, text)``, ``delete(id)``, ``noop()``, ``answer(answer)``.
    Rewards:
        ``task`` (weight 1): per question, EM (``metric="em"``, default) or token F1 (``metric="f1"``) of the
        answer against the gold, divided by ``n_questions`` (search's scoring functions, SQuAD-normalised).
        ``progress`` (weight 0.2): per session, the fraction of the session's fact events that an operation
        handled correctly by the oracle's fact diff (introduce: an ``add`` naming the person and value; change:
        an ``update`` of an entry holding the old fact, or an ``add``, whose text has the new value, with no entry
        left holding the old one; retract: a ``delete`` of the entry holding the fact; a session without events:
        ``noop()``), minus the still-true facts that operations destroyed, also per event (so padding a reply
        with ``noop()`` does not dilute the loss). An entry holds a fact only when it names one person of
        the cast and, of that attribute, only the value (or two values, the later one held: "moved from X to Y"),
        so entries naming several people or several values earn nothing; and the bank holds a fact only when no
        entry holds another value of that person's attribute (candidate values spread over entries earn nothing).
        ``format`` (weight 0.1):
        raw -1 per malformed reply or a call of the wrong phase.
    Episode end:
        Terminated after the last question (success: every answer exact) or after more than
        ``max_invalid_actions`` (default 2) malformed replies; truncated at ``max_turns``.
        An operation that would exceed ``max_entries`` or ``max_entry_chars``, or names a missing id, is refused
        with an error line in the observation (``info["bank_errors"]``); the others still apply.
    Arguments:
        n_people (2-8, default 3), n_sessions (default 3), n_questions (default 3), max_entries (default 24),
        max_entry_chars (default 160), metric ("em" | "f1"), action_format, reward_weights, max_turns,
        max_invalid_actions, render_mode.
    Version history:
        v1: current: lost true facts counted per event; an entry is credited only for a fact about the one person
        it names, with one value (``progress``) (v0, retired: CHANGELOG.md).
    """

    default_reward_weights: ClassVar[dict[str, float]] = {"task": 1.0, "progress": 0.2, "format": 0.1}
    default_max_invalid_actions: ClassVar[int] = 2
    max_calls_per_turn: ClassVar[int] = MAX_OPS_PER_TURN

    def __init__(
        self,
        *,
        n_people: int = 3,
        n_sessions: int = 3,
        n_questions: int = 3,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_entry_chars: int = DEFAULT_MAX_ENTRY_CHARS,
        metric: str = "em",
        max_turns: int | None = None,
        **kwargs: Any,
    ) -> None:
        if not 2 <= n_people <= 8:
            raise ValueError(f"n_people must be in [2, 8], got {n_people}")
        if n_sessions < 1 or n_questions < 1 or max_entries < 1 or max_entry_chars < 16:
            raise ValueError("n_sessions, n_questions, max_entries must be >= 1 and max_entry_chars >= 16")
        if metric not in METRICS:
            raise ValueError(f"metric must be one of {METRICS}, got {metric!r}")
        self.n_people, self.n_sessions, self.n_questions = int(n_people), int(n_sessions), int(n_questions)
        self.max_entries, self.max_entry_chars, self.metric = int(max_entries), int(max_entry_chars), metric
        invalid = kwargs.get("max_invalid_actions")
        invalid = self.default_max_invalid_actions if invalid is None else int(invalid)
        if max_turns is None:
            max_turns = self.n_sessions + self.n_questions + invalid
        super().__init__(max_turns=max_turns, **kwargs)
        self.scenario: Scenario | None = None
        self.bank: list[Entry] = []
        self.session = 0
        self.question = 0
        self.correct_answers = 0
        self._next_id = 0

    # ----------------------------------------------------------------- AgentEnv hooks
    def tools(self) -> list[Tool]:
        return [*BANK_TOOLS, ANSWER_TOOL]

    def instructions(self) -> str:
        if self.action_format == "native":
            how = (
                'Write one call per line: add("text"), update(id, "text"), delete(id), noop(); in the question '
                'phase answer("text"). Only lines that are calls count.'
            )
        else:
            how = self.json_format_instructions()
        return (
            "You manage a memory bank for a group of friends. You will read several chat sessions, one at a time; "
            "after each, the session is gone for good, so keep in the bank what matters: add new facts, update "
            "facts that changed, delete facts that are no longer true, noop if nothing changed. At most "
            f"{self.max_entries} entries of at most {self.max_entry_chars} characters. Finally, questions about "
            "the latest facts are answered from the bank alone (answer 'none' if a fact was retracted).\n" + how
        )

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        if task_id is not None:
            try:
                seed = int(task_id.rsplit("-", 1)[-1])
            except ValueError:
                raise TaskLoadError(f"task ids look like 'bank-<seed>', got {task_id!r}") from None
        else:
            seed = int(self.np_random.integers(0, 2**31 - 1))
        self.scenario = generate_scenario(np.random.default_rng(seed), self.n_people, self.n_sessions, self.n_questions)
        self.bank, self.session, self.question, self.correct_answers, self._next_id = [], 0, 0, 0, 0
        cast = ", ".join(self.scenario.people)
        return f"bank-{seed}", f"Cast: {cast}.\n\n{self._session_view()}"

    def _bank_view(self) -> str:
        if not self.bank:
            return "Memory bank: (empty)"
        return "Memory bank:\n" + "\n".join(f"[{e.id}] {e.text}" for e in self.bank)

    def _session_view(self) -> str:
        assert self.scenario is not None
        lines, _ = self.scenario.sessions[self.session]
        dialogue = "\n".join(lines)
        return (
            f"Session {self.session + 1} of {self.n_sessions}:\n{dialogue}\n\n{self._bank_view()}\n"
            "Update the memory bank now."
        )

    def _question_view(self) -> str:
        assert self.scenario is not None
        q = self.scenario.questions[self.question][0]
        return f"{self._bank_view()}\nQuestion {self.question + 1} of {len(self.scenario.questions)}: {q}"

    def _parse_native(self, text: str) -> list[ToolCall]:
        calls = []
        for m in _CALL_LINE.finditer(text):
            try:
                node = parse_untrusted_python(m.group(0).strip(), "eval").body
            except SyntaxError:
                raise ParseError(f"cannot parse {m.group(0).strip()[:80]!r} as a call") from None
            if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
                raise ParseError(f"{m.group(0).strip()[:80]!r} is not a call")
            names = _ARG_NAMES[node.func.id]
            try:
                args = [ast.literal_eval(a) for a in node.args]
                kwargs = {k.arg: ast.literal_eval(k.value) for k in node.keywords if k.arg}
            except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
                raise ParseError(f"arguments of {node.func.id}() must be literals (numbers, quoted strings)") from None
            if len(args) > len(names):
                raise ParseError(f"{node.func.id}() takes {len(names)} argument(s): {', '.join(names) or 'none'}")
            calls.append(ToolCall(node.func.id, {**dict(zip(names, args)), **kwargs}))
        if not calls:
            raise ParseError('no call found: write add("..."), update(id, "..."), delete(id), noop() or answer("...")')
        return calls

    def _step_calls(self, calls: list[ToolCall]) -> Transition:
        assert self.scenario is not None
        in_questions = self.session >= self.n_sessions
        names = {c.name for c in calls}
        if in_questions and names != {"answer"} or not in_questions and "answer" in names or (
            in_questions and len(calls) > 1
        ):
            phase = "question phase: answer(\"...\") once" if in_questions else "session phase: bank operations only"
            return Transition(f"Wrong call for the {phase}.\n" + (self._question_view() if in_questions else
                                                               self._bank_view()), {"format": -1.0})
        if in_questions:
            return self._answer(str(calls[0].arguments["answer"]))
        return self._bank_ops(calls)

    def _bank_ops(self, calls: list[ToolCall]) -> Transition:
        assert self.scenario is not None
        _, events = self.scenario.sessions[self.session]
        before = [Entry(e.id, e.text) for e in self.bank]
        errors: list[str] = []
        results: list[str] = []
        for c in calls:
            err = self._apply(c)
            results.append(f"{c.name}: {'ERROR ' + err if err else 'ok'}")
            if err:
                errors.append(err)
        progress = self._oracle_score(events, before, calls)
        self.session += 1
        tail = self._session_view() if self.session < self.n_sessions else (
            "All sessions are over; the dialogue is gone.\n" + self._question_view()
        )
        obs = "Operations:\n" + "\n".join(results) + "\n\n" + tail
        return Transition(obs, {"progress": progress}, info={"bank_errors": errors, "bank_size": len(self.bank)})

    def _apply(self, call: ToolCall) -> str | None:
        args = call.arguments
        text = str(args.get("text", ""))
        if call.name in ("add", "update"):
            if not text.strip():
                return "empty text"
            if len(text) > self.max_entry_chars:
                return f"text is {len(text)} characters; max_entry_chars is {self.max_entry_chars}"
        if call.name == "add":
            if len(self.bank) >= self.max_entries:
                return f"the bank is full ({self.max_entries} entries); delete or update instead"
            self.bank.append(Entry(self._next_id, text))
            self._next_id += 1
            return None
        if call.name in ("update", "delete"):
            idx = next((i for i, e in enumerate(self.bank) if e.id == args["id"]), None)
            if idx is None:
                return f"no entry with id {args['id']}"
            if call.name == "update":
                self.bank[idx] = Entry(args["id"], text)
            else:
                del self.bank[idx]
        return None

    def _oracle_score(self, events: list[Event], before: list[Entry], calls: list[ToolCall]) -> float:
        """Fraction of events handled (see the class docstring), minus the still-true facts lost, per event."""
        assert self.scenario is not None
        if not events:
            return 1.0 if [c.name for c in calls] == ["noop"] else 0.0
        after_texts = [e.text for e in self.bank]
        cast = self.scenario.people

        def holds(text: str, person: str, value: str) -> bool:
            return _holds(text, person, value, cast)

        def bank_holds(texts: list[str], person: str, value: str) -> bool:
            # The bank as a whole: an entry holds the fact and none holds another value of that attribute for that
            # person (one candidate value per entry, spread over entries, is a hedge, not a memory of the fact).
            if not any(holds(t, person, value) for t in texts):
                return False
            rivals = next((spec[0] for spec in ATTRIBUTES.values() if value in spec[0]), ())
            return not any(holds(t, person, v) for v in rivals if v != value for t in texts)

        handled = 0
        for ev in events:
            if ev.kind == "introduce":
                ok = bank_holds(after_texts, ev.person, ev.value or "") and any(
                    c.name in ("add", "update") and holds(str(c.arguments.get("text", "")), ev.person, ev.value or "")
                    for c in calls
                )
            elif ev.kind == "change":
                ok = bank_holds(after_texts, ev.person, ev.value or "") and not any(
                    holds(t, ev.person, ev.old or "") and not holds(t, ev.person, ev.value or "") for t in after_texts
                )
            else:
                had = [e.id for e in before if holds(e.text, ev.person, ev.old or "")]
                ok = bool(had) and not any(holds(t, ev.person, ev.old or "") for t in after_texts)
            handled += ok
        # Facts still true after this session that an op erased (held before, held by nothing now).
        touched = {(ev.person, ev.attribute) for ev in events}
        live = self._live_facts(self.session - 1)
        lost = sum(
            1 for (p, a), v in live.items() if (p, a) not in touched and v is not None
            and bank_holds([e.text for e in before], p, v) and not bank_holds(after_texts, p, v)
        )
        # Per event, not per call: padding a reply with noop() calls must not dilute the loss.
        return max(0.0, (handled - lost) / len(events))

    def _live_facts(self, upto_session: int) -> dict[tuple[str, str], str | None]:
        assert self.scenario is not None
        state: dict[tuple[str, str], str | None] = {}
        for lines_events in self.scenario.sessions[: upto_session + 1]:
            for ev in lines_events[1]:
                state[(ev.person, ev.attribute)] = ev.value
        return state

    def _answer(self, answer: str) -> Transition:
        assert self.scenario is not None
        gold = self.scenario.questions[self.question][1]
        em, fs = exact_match(answer, gold), f1(answer, gold)
        self.correct_answers += int(em == 1.0)
        score = em if self.metric == "em" else fs
        self.question += 1
        info = {"em": em, "f1": fs, "gold": gold}
        parts = {"task": score / len(self.scenario.questions)}
        if self.question >= len(self.scenario.questions):
            success = self.correct_answers == len(self.scenario.questions)
            return Transition(f"Answer recorded. {self.correct_answers}/{self.question} exact.", parts, True, success, info)
        return Transition(f"Answer recorded.\n{self._question_view()}", parts, info=info)

    def format_call(self, name: str, arguments: dict[str, Any]) -> str:
        if name not in _ARG_NAMES:
            raise ValueError(f"unknown tool {name!r}")
        return f"{name}({', '.join(repr(arguments[k]) for k in _ARG_NAMES[name] if k in arguments)})"

    def render_calls(self, calls: list[tuple[str, dict[str, Any]]]) -> str:
        """Several calls in one reply, in this env's action format."""
        return "\n".join(self.render_call(n, a) for n, a in calls)

    def _expert_action(self) -> str:
        """The oracle: one op per fact event (add / update the entry holding it / delete it), answers from the bank."""
        if self.session >= self.n_sessions:
            q = self.scenario.questions[self.question][0]
            return self.render_call("answer", {"answer": self._answer_from_bank(q)})
        _, events = self.scenario.sessions[self.session]
        if not events:
            return self.render_call("noop", {})
        ops: list[tuple[str, dict[str, Any]]] = []
        for ev in events:
            holder = next((e for e in self.bank if ev.old and _holds(e.text, ev.person, ev.old)), None)
            if ev.kind == "introduce":
                ops.append(("add", {"text": fact_text(ev.person, ev.attribute, ev.value or "")}))
            elif ev.kind == "change" and holder is not None:
                ops.append(("update", {"id": holder.id, "text": fact_text(ev.person, ev.attribute, ev.value or "")}))
            elif ev.kind == "change":
                ops.append(("add", {"text": fact_text(ev.person, ev.attribute, ev.value or "")}))
            elif holder is not None:
                ops.append(("delete", {"id": holder.id}))
        return self.render_calls(ops or [("noop", {})])

    def _answer_from_bank(self, question: str) -> str:
        """Read the answer off the oracle-format entries (what the expert stored); ``none`` when absent."""
        assert self.scenario is not None
        for attribute, spec in ATTRIBUTES.items():
            for p in self.scenario.people:
                if spec[4].format(p=p) == question:
                    prefix = f"{p}'s {attribute}: "
                    for e in self.bank:
                        if e.text.startswith(prefix):
                            return e.text[len(prefix):]
                    return NONE_ANSWER
        return NONE_ANSWER
