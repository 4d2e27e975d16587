"""``arl/web.login-v0``: sign in with the given credentials, then open the requested page of the app."""

from __future__ import annotations

from typing import Any

import numpy as np

from arl_envs.envs.web.task import (
    ExpertView,
    Score,
    TaskInstance,
    WebTask,
    act,
    html_escape,
    register_task,
    urls_match,
)
from arl_envs.envs.web.tasks._kit import (
    FIRST_NAMES,
    LAST_NAMES,
    WORDS,
    page,
    pick,
)

#: Accounts known to the login page (the target is one of them).
N_ACCOUNTS = 4
#: App sections reachable from the landing page: (link text, path under the task root).
SECTIONS = (
    ("Reports", "app/reports.html"),
    ("Viewed reports", "app/reports/viewed.html"),
    ("Messages", "app/messages.html"),
    ("Settings", "app/settings.html"),
    ("Billing", "app/billing.html"),
)
LANDING = "app/home.html"

_LOGIN_JS = """
var failures = 0;
document.getElementById('login').addEventListener('submit', function (ev) {
  ev.preventDefault();
  var u = document.getElementById('username').value.trim();
  var p = document.getElementById('password').value;
  var acct = ARL_DATA.accounts[u];
  if (acct && acct.password === p) {
    ARL_STORE.set('user', u);
    location.href = ARL_DATA.landing;
  } else {
    failures += 1;
    document.getElementById('error').textContent = 'Invalid username or password.';
  }
});
window.arlState = () => ({page: 'login', user: ARL_STORE.get('user', null), failures: failures,
  username: document.getElementById('username').value, password: document.getElementById('password').value});
"""

# Every app page: redirect to the login page unless signed in; show the user's name.
_APP_JS = """
var user = ARL_STORE.get('user', null);
if (!user || !ARL_DATA.accounts[user]) { location.replace(ARL_DATA.root + 'index.html'); }
else { document.getElementById('who').textContent = 'Signed in as ' + ARL_DATA.accounts[user].full_name; }
document.getElementById('logout').addEventListener('click', function () {
  ARL_STORE.set('user', null); location.href = ARL_DATA.root + 'index.html';
});
window.arlState = () => ({page: ARL_DATA.page, user: ARL_STORE.get('user', null)});
"""


def _app_page(title: str, here: str, data: dict[str, Any], content: str) -> str:
    depth = here.count("/")
    root = "../" * depth
    nav = " ".join(
        f'<a href="{root}{path}">{html_escape(text)}</a>' for text, path in (("Home", LANDING), *SECTIONS)
    )
    body = (
        f'<nav>{nav}</nav><p class="muted" id="who"></p><button id="logout" type="button">Log out</button>'
        f"<h1>{html_escape(title)}</h1>{content}"
    )
    return page(title, body, _APP_JS, {**data, "page": here, "root": root})


@register_task
class Login(WebTask):
    """Sign in, then open a named section of the app (a URL goal, compared canonically).

    Instance: ``N_ACCOUNTS`` accounts (username, password, full name); the target account's credentials and a
    target section (e.g. "Viewed reports" at ``/app/reports/viewed.html``, beside ``/app/reports.html``) are named.
    Pages: ``index.html`` (login form; a wrong password shows an error and lets the agent retry), the landing
    page ``/app/home.html`` and one page per section; app pages redirect to the login page when signed out.
    State: ``{"page": ..., "user": username | None}`` (the session in sessionStorage) plus the env's ``url``.
    Validation: done when signed in on a section page (not the landing page); success iff signed in as the
    target user on the target section's canonical URL. Sub-goals: ``"signed-in"`` (as the target user), ``"section"``.
    """

    name = "login"
    description = "Log in with the given credentials, then open the named page of the app (URL goal)."
    max_turns = 12
    n_subgoals = 2

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        accounts: dict[str, dict[str, str]] = {}
        while len(accounts) < N_ACCOUNTS:
            first, last = pick(rng, FIRST_NAMES), pick(rng, LAST_NAMES)
            user = f"{first[0].lower()}{last.lower()}{int(rng.integers(10, 99))}"
            pw = f"{pick(rng, WORDS)}-{int(rng.integers(100, 999))}-{pick(rng, WORDS).upper()}"
            accounts[user] = {"password": pw, "full_name": f"{first} {last}"}
        user = sorted(accounts)[int(rng.integers(N_ACCOUNTS))]
        section_text, section_path = SECTIONS[int(rng.integers(len(SECTIONS)))]
        login_body = (
            "<h1>Acme Portal</h1><form id=\"login\">"
            '<div class="row"><label for="username">Username</label><input id="username" autocomplete="off"></div>'
            '<div class="row"><label for="password">Password</label><input id="password" type="password"></div>'
            '<button type="submit">Sign in</button></form><p class="error" id="error" role="alert"></p>'
        )
        data = {"accounts": accounts}
        files: dict[str, str | bytes] = {
            "index.html": page("Acme Portal - Sign in", login_body, _LOGIN_JS, {**data, "landing": LANDING}),
            LANDING: _app_page("Home", LANDING, data, "<p>Welcome back. Choose a section above.</p>"),
        }
        for text, path in SECTIONS:
            files[path] = _app_page(text, path, data, f"<p>This is the {html_escape(text)} page.</p>")
        return TaskInstance(
            goal={"user": user, "password": accounts[user]["password"], "url": "/" + section_path,
                  "section": section_text},
            utterance=f'Log in with username "{user}" and password "{accounts[user]["password"]}", '
            f'then open the "{section_text}" page.',
            files=files,
        )

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        url = str(state.get("url", ""))
        signed_in = state.get("user") == goal["user"]
        sub: set[str] = set()
        if signed_in:
            sub.add("signed-in")
        on_section = any(urls_match(url, "/" + path) for _, path in SECTIONS)
        if not (state.get("user") and on_section):
            return Score(done=False, success=False, subgoals=frozenset(sub))
        ok = signed_in and urls_match(url, goal["url"])
        if ok:
            sub.add("section")
        return Score(done=True, success=ok, subgoals=frozenset(sub))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        st = view.state
        if st.get("page") == "login":
            if st.get("username") != goal["user"]:
                return act("fill", view.bid("#username"), goal["user"])
            pw = view.bid("#password")
            if st.get("password") != goal["password"]:
                return act("fill", pw, goal["password"])
            return act("press", pw, "Enter")
        return act("click", view.bid(f'nav a[href$="{goal["url"].lstrip("/")}"]'))
