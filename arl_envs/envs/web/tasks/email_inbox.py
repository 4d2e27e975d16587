"""``arl/web.email-inbox-v0``: delete, forward or reply to the right email in a webmail inbox."""

from __future__ import annotations

from typing import Any

import numpy as np

from arl_envs.envs.web.task import (
    ExpertView,
    Score,
    TaskInstance,
    WebTask,
    act,
    register_task,
)
from arl_envs.envs.web.tasks._kit import (
    FIRST_NAMES,
    LAST_NAMES,
    WORDS,
    page,
    pick,
    sample,
)

#: Emails in the inbox; the target's sender also sent ``N_SAME_SENDER - 1`` other emails.
N_EMAILS = 7
N_SAME_SENDER = 2
OPERATIONS = ("delete", "forward", "reply")
SUBJECTS = (
    "Lunch on {d}?", "Invoice #{n}", "Meeting notes: {w}", "Re: {w} project", "Your {w} order has shipped",
    "Trip to {w} island", "Question about {w}", "Reminder: {w} review on {d}", "Photos from {w} weekend",
)
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")

_JS = """
var emails = ARL_DATA.emails;
var deleted = [], sent = [], view = {mode: 'inbox', id: null, kind: null};
function byId(id) { return emails.filter(function (e) { return e.id === id; })[0]; }
function show(mode) {
  ['inbox', 'read', 'compose'].forEach(function (m) { document.getElementById(m).hidden = m !== mode; });
  view.mode = mode;
}
function renderInbox() {
  var live = emails.filter(function (e) { return deleted.indexOf(e.id) < 0; });
  document.getElementById('list').innerHTML = live.map(function (e) {
    return '<li class="card"><span class="muted">' + arlEsc(e.from) + '</span> &mdash; ' +
      '<a href="#" data-id="' + e.id + '">' + arlEsc(e.subject) + '</a></li>';
  }).join('') || '<li>No messages.</li>';
  document.querySelectorAll('#list a').forEach(function (a) {
    a.addEventListener('click', function (ev) { ev.preventDefault(); openEmail(a.dataset.id); });
  });
  view.id = null; show('inbox');
}
function openEmail(id) {
  var e = byId(id);
  view.id = id;
  document.getElementById('r-subject').textContent = e.subject;
  document.getElementById('r-from').textContent = 'From: ' + e.from + ' <' + e.address + '>';
  document.getElementById('r-body').textContent = e.body;
  show('read');
}
function compose(kind) {
  var e = byId(view.id);
  view.kind = kind;
  document.getElementById('c-title').textContent = kind === 'reply' ? 'Reply' : 'Forward';
  document.getElementById('c-to').value = kind === 'reply' ? e.address : '';
  document.getElementById('c-subject').value = (kind === 'reply' ? 'Re: ' : 'Fwd: ') + e.subject;
  document.getElementById('c-body').value = kind === 'reply' ? '' : '\\n\\n---------- Forwarded message ----------\\n' + e.body;
  document.getElementById('c-error').textContent = '';
  show('compose');
}
document.getElementById('back').addEventListener('click', renderInbox);
document.getElementById('reply').addEventListener('click', function () { compose('reply'); });
document.getElementById('forward').addEventListener('click', function () { compose('forward'); });
document.getElementById('delete').addEventListener('click', function () {
  deleted.push(view.id); renderInbox();
  document.getElementById('status').textContent = 'Message deleted.';
});
document.getElementById('discard').addEventListener('click', function () { openEmail(view.id); });
document.getElementById('send').addEventListener('click', function () {
  var to = document.getElementById('c-to').value.trim();
  if (!/^[^@\\s]+@[^@\\s]+$/.test(to)) { document.getElementById('c-error').textContent = 'Enter a recipient address.'; return; }
  sent.push({kind: view.kind, ref: view.id, to: to, subject: document.getElementById('c-subject').value,
             body: document.getElementById('c-body').value});
  renderInbox();
  document.getElementById('status').textContent = 'Message sent.';
});
renderInbox();
window.arlState = () => ({mode: view.mode, open: view.id, kind: view.mode === 'compose' ? view.kind : null,
  to: document.getElementById('c-to').value, body: document.getElementById('c-body').value,
  deleted: deleted.slice(), sent: sent.slice()});
"""


def _norm(text: Any) -> str:
    return " ".join(str(text).split()).casefold()


@register_task
class EmailInbox(WebTask):
    """Perform one operation (delete / forward to an address / reply with a text) on the right email.

    Instance: ``N_EMAILS`` emails; the target's sender sent ``N_SAME_SENDER`` of them, so the subject decides.
    The inbox is one page: list -> open an email (Reply, Forward, Delete, Back) -> compose (To, Subject, Body,
    Send, Discard).
    State: ``{"mode", "open", "kind", "to", "body", "deleted": [id...], "sent": [{kind, ref, to, subject,
    body}...]}``.
    Validation: done at the first delete or send; success iff exactly the goal operation happened on the target
    email and nothing else: delete -> ``deleted == [target]``; forward -> one forward of the target to the
    address (case-insensitive); reply -> one reply to the target whose body is the given text (whitespace and
    case normalised). Sub-goals: ``"opened"`` (the target is open), ``"ready"`` (a compose view of the right kind
    for the target with the right recipient / text, one click from Send; for delete, credited with the right
    deletion).
    """

    name = "email-inbox"
    description = "Delete, forward or reply to the right email in a webmail inbox."
    max_turns = 12
    n_subgoals = 2

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        people = []
        seen: set[str] = set()
        while len(people) < N_EMAILS - N_SAME_SENDER + 1:
            first, last = pick(rng, FIRST_NAMES), pick(rng, LAST_NAMES)
            if first not in seen:
                seen.add(first)
                people.append((f"{first} {last}", f"{first.lower()}@{last.lower()}.mail"))
        senders = people + [people[0]] * (N_SAME_SENDER - 1)
        subjects: list[str] = []
        while len(subjects) < N_EMAILS:
            s = pick(rng, SUBJECTS).format(d=pick(rng, DAYS), n=int(rng.integers(1000, 9999)), w=pick(rng, WORDS))
            if s not in subjects:
                subjects.append(s)
        emails = []
        for i, ((name, addr), subj) in enumerate(zip(senders, subjects)):
            body = f"Hi, this is about {subj.lower()}. Let me know what you think. Best, {name.split()[0]}"
            emails.append({"from": name, "address": addr, "subject": subj, "body": body})
        order = rng.permutation(N_EMAILS)
        emails = [emails[int(j)] for j in order]
        for i, e in enumerate(emails):
            e["id"] = f"m{i + 1}"
        target = next(e for e in emails if e["subject"] == subjects[0])
        op = OPERATIONS[int(rng.integers(len(OPERATIONS)))]
        # decoy: the same sender's other email (a wrong end state for tests)
        decoy = next(e["id"] for e in emails if e["address"] == target["address"] and e is not target)
        goal: dict[str, Any] = {"op": op, "id": target["id"], "decoy": decoy}
        who = f'the email from {target["from"]} with the subject "{target["subject"]}"'
        if op == "delete":
            utterance = f"Delete {who}."
        elif op == "forward":
            a, b = sample(rng, FIRST_NAMES, 2)
            goal["to"] = f"{a.lower()}.{b.lower()}@team.mail"
            utterance = f"Forward {who} to {goal['to']}."
        else:
            goal["text"] = f"Thanks, {pick(rng, ('sounds good', 'I will check', 'see you then', 'noted'))}. {pick(rng, WORDS).capitalize()}!"
            utterance = f'Reply to {who} with the text "{goal["text"]}".'
        body = (
            "<h1>Webmail</h1><p id=\"status\" role=\"status\" class=\"muted\"></p>"
            '<section id="inbox"><h2>Inbox</h2><ul id="list"></ul></section>'
            '<section id="read" hidden><h2 id="r-subject"></h2><p id="r-from" class="muted"></p><p id="r-body"></p>'
            '<button id="reply" type="button">Reply</button><button id="forward" type="button">Forward</button>'
            '<button id="delete" type="button">Delete</button><button id="back" type="button">Back to inbox</button></section>'
            '<section id="compose" hidden><h2 id="c-title"></h2>'
            '<div class="row"><label for="c-to">To</label><input id="c-to" size="40"></div>'
            '<div class="row"><label for="c-subject">Subject</label><input id="c-subject" size="40"></div>'
            '<div class="row"><label for="c-body">Message</label><br><textarea id="c-body" rows="6" cols="60"></textarea></div>'
            '<p id="c-error" class="error" role="alert"></p>'
            '<button id="send" type="button">Send</button><button id="discard" type="button">Discard</button></section>'
        )
        return TaskInstance(goal=goal, utterance=utterance, files={"index.html": page("Webmail", body, _JS, {"emails": emails})})

    def _right_send(self, s: dict[str, Any], goal: dict[str, Any]) -> bool:
        if s.get("ref") != goal["id"] or s.get("kind") != goal["op"]:
            return False
        if goal["op"] == "forward":
            return _norm(s.get("to")) == _norm(goal["to"])
        return _norm(s.get("body")) == _norm(goal["text"])

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        deleted = state.get("deleted") if isinstance(state.get("deleted"), list) else []
        sent = [s for s in (state.get("sent") or []) if isinstance(s, dict)]
        sub = set()
        if state.get("open") == goal["id"]:
            sub.add("opened")
        if state.get("mode") == "compose" and self._right_send(
            {"ref": state.get("open"), "kind": state.get("kind"), "to": state.get("to"), "body": state.get("body")}, goal
        ):
            sub.add("ready")
        if not deleted and not sent:
            return Score(done=False, success=False, subgoals=frozenset(sub))
        if goal["op"] == "delete":
            ok = deleted == [goal["id"]] and not sent
        else:
            ok = not deleted and len(sent) == 1 and self._right_send(sent[0], goal)
        if ok:
            sub.update({"opened", "ready"})
        return Score(done=True, success=ok, subgoals=frozenset(sub))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        st = view.state
        mode, op = st.get("mode"), goal["op"]
        if mode == "compose" and (st.get("open") != goal["id"] or st.get("kind") != op):
            return act("click", view.bid("#discard"))
        if mode == "inbox":
            return act("click", view.bid(f'#list a[data-id="{goal["id"]}"]'))
        if mode == "read":
            if st.get("open") != goal["id"]:
                return act("click", view.bid("#back"))
            return act("click", view.bid(f"#{op}"))
        # compose view of the target with the right kind
        if op == "forward" and _norm(st.get("to")) != _norm(goal["to"]):
            return act("fill", view.bid("#c-to"), goal["to"])
        if op == "reply" and _norm(st.get("body")) != _norm(goal["text"]):
            return act("fill", view.bid("#c-body"), goal["text"])
        return act("click", view.bid("#send"))
