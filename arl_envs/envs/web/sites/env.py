"""``SiteEnv``: a task template of a multi-page site (Flask over SQLite) in the web domain's Chromium.

Ids ``arl/web.site-shop-v0`` (every shop template), ``arl/web.site-webshop-v0`` (WebShop-style purchases with
WebShop's partial-credit reward), ``arl/web.site-forum-v0`` (every forum template), ``arl/web.site-tracker-v0`` (the
GitLab-like tracker) and ``arl/web.site-admin-v0`` (the shop's back office, its own staff login); the cross-site id
``arl/web.site-cross-v0`` is :mod:`arl_envs.envs.web.sites.cross.env`. Observation, actions, experts and reset/step
behaviour are :class:`WebEnv`'s; what differs is where pages come from and how episodes are scored:

* Pages: every request for ``http://arl.test/site-<site>/...`` is answered by the site's Flask app in-process with
  THIS env's own SQLite database (:mod:`arl_envs.envs.web.sites.server`); other URLs stay blocked.
* Reset: the env's database is restored to the seed state (SQLite backup API) and the start page is loaded fresh.
  Sessions live in that database, so nothing an episode wrote (cart, orders, login) is visible to the next.
* Scoring: the template's evaluator reads the database (content changes: the right rows changed and nothing else,
  diffed against the attached seed), the final URL (navigation) or the ``answer(...)`` text (information seeking).
  Goals and answers live only in Python: no route of the site reveals them.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
from typing import Any, Callable, ClassVar
from urllib.parse import urljoin, urlsplit
from http.cookies import SimpleCookie

import numpy as np

from arl_envs.core.env import Transition
from arl_envs.envs.web.env import WebEnv, _inject_prelude
from arl_envs.envs.web.task import TASK_ORIGIN, ExpertView, Score, TaskInstance, WebTask, js_value
from arl_envs.envs.web.sites.server import SITE_MODULES, Site, get_site
from arl_envs.envs.web.sites.shop.tasks import TEMPLATES as SHOP_TEMPLATES
from arl_envs.envs.web.sites.tasks import FAMILIES, Template, forget_changes

#: Default number of shop products (the ``size`` kwarg).
DEFAULT_SIZE = 5000


def site_templates(site: str) -> list[Template]:
    """Every template of ``site`` (its table, in order)."""
    if site == "shop":
        return SHOP_TEMPLATES
    if site == "forum":
        from arl_envs.envs.web.sites.forum.table import TEMPLATES

        return TEMPLATES
    if site == "tracker":
        from arl_envs.envs.web.sites.tracker.tasks import TEMPLATES as TRACKER

        return TRACKER
    if site == "admin":
        from arl_envs.envs.web.sites.admin.tasks import TEMPLATES as ADMIN

        return ADMIN
    raise ValueError(f"unknown site {site!r}; known: {', '.join(SITE_MODULES)}")


def templates_for(site: str, family: str) -> list[Template]:
    """The templates of ``site`` in ``family`` (``"all"``: every family but ``webshop``)."""
    table = site_templates(site)
    if family == "all":
        return [t for t in table if t.family != "webshop"]
    found = [t for t in table if t.family == family]
    if not found:
        raise ValueError(f"site {site!r} has no {family!r} templates")
    return found


class SiteTask(WebTask):
    """Adapter: one site's template table as a :class:`WebTask` bound to one env's database."""

    restart_in_place: ClassVar[bool] = False
    n_subgoals: ClassVar[int] = 1
    max_turns: ClassVar[int] = 30

    def __init__(self, site: Site, mount: str, templates: list[Template], db: sqlite3.Connection | None) -> None:
        self.site = site
        self.name = mount
        self.description = f"{site.name} site templates"
        self.templates = templates
        self.db = db
        self.db_lock = threading.Lock()
        #: The last evaluation's task reward (1.0 or partial credit for WebShop-style purchases).
        self.last_reward = 0.0

    def __getstate__(self) -> dict[str, Any]:
        """Copies and pickles drop the lock and the connection (the env opens its database at reset)."""
        state = dict(self.__dict__)
        state["db_lock"], state["db"] = None, None
        state["templates"] = [t.name for t in self.templates]  # closures: pickled by name
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        by_name = {t.name: t for t in site_templates(state["site"].name)}
        self.__dict__.update(state)
        self.templates = [by_name[n] for n in state["templates"]]
        self.db_lock = threading.Lock()

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        tpl = self.templates[int(rng.integers(len(self.templates)))]
        utterance, goal = tpl.sample(self.site._src, rng)
        goal = {"template": tpl.name, **goal}
        return TaskInstance(goal=goal, utterance=utterance, files={"index.html": b""})

    def template(self, goal: dict[str, Any]) -> Template:
        return next(t for t in self.templates if t.name == goal["template"])

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        with self.db_lock:
            reward, done = self.template(goal).check(self.db, state, goal, answer)
        self.last_reward = float(reward)
        return Score(done=done, success=reward >= 1.0, subgoals=frozenset({"goal"} if reward >= 1.0 else ()))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        return self.template(goal).expert(view, goal)


class SiteEnv(WebEnv):
    """A multi-page website task (see the module docstring); all :class:`WebEnv` kwargs apply.

    Arguments:
        site: ``"shop"``, ``"forum"``, ``"tracker"`` or ``"admin"``.
        family: Template family: ``"all"`` (default), ``"info"`` (answer a question), ``"nav"`` (reach a page),
            ``"change"`` (change the database: shop cart, orders, reviews, account; forum posts, comments, votes,
            subscriptions, profile; tracker issues, comments, labels, milestones, merge requests; admin orders,
            notes, stock, prices, customers) or ``"webshop"`` (shop only: buy a product by attributes, options and
            a price bound; WebShop's reward with partial credit).
        size: Shop and admin: number of products (default 5,000); forum: number of posts (default 2,000); tracker:
            number of issues (default 3,000); >= 500.

    Rewards:
        ``task``: 1 for the exact goal; for ``family="webshop"`` WebShop's score of the purchased item
        (attribute, option, price and type matching, in [0, 1]); ``success`` only at 1. ``progress`` (0.1) when the
        goal is reached, ``format`` as in :class:`WebEnv`.

    Version history:
        v0: first version.
    """

    def __init__(self, site: str = "shop", *, family: str = "all", size: int | None = None, **kwargs: Any) -> None:
        size = SITE_MODULES.get(site, DEFAULT_SIZE) if size is None else size
        if family not in FAMILIES:
            raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
        if size < 500:
            raise ValueError(f"size must be >= 500, got {size}")
        self.site_name, self.family, self.size = site, family, int(size)
        self._site = get_site(site, self.size)
        # the env's own database is opened at the first reset (a fresh env holds no connection: it can be copied)
        self._db: sqlite3.Connection | None = None
        mount = f"site-{site}" if family != "webshop" else "site-webshop"
        super().__init__(SiteTask(self._site, mount, templates_for(site, family), None), **kwargs)

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        with self.task.db_lock:
            if self._db is None:
                self._db = self.task.db = self._site.connect()
            else:
                self._site.restore(self._db)
            forget_changes(self._db)
        self.task.last_reward = 0.0
        return super()._reset_task(task_id)

    def _step_calls(self, calls: list) -> Transition:
        tr = super()._step_calls(calls)
        if tr.terminated and "task" in tr.parts and self.family == "webshop":
            tr.parts["task"] = self.task.last_reward
        return tr

    async def _route(self, route: Any) -> None:
        try:
            req = route.request
            parts = urlsplit(req.url)
            backend = self._backend(parts.path) if f"{parts.scheme}://{parts.netloc}" == TASK_ORIGIN else None
            if backend is None:
                await route.abort("blockedbyclient")
                return
            headers = await req.all_headers()
            body = req.post_data_buffer

            def serve() -> tuple[int, list[tuple[str, str]], bytes, str]:
                with self.task.db_lock:
                    return backend(req.method, req.url, headers, body)

            status, resp_headers, data, final_url = await asyncio.to_thread(serve)
            ctype = dict((k.lower(), v) for k, v in resp_headers).get("content-type", "")
            if ctype.startswith("text/html"):
                if final_url != req.url:  # Post/Redirect/Get done here: show the final URL in the address bar
                    data = _inject_head(data, f"<script>history.replaceState(null,'',{js_value(final_url)})</script>")
                data = _inject_prelude(data, self._instance_seed)
            out = {k: v for k, v in resp_headers if k.lower() != "content-length"}
            await route.fulfill(status=status, headers=out, body=data)
        except Exception:  # the context closed while a request was in flight
            with contextlib.suppress(Exception):
                await route.abort()

    def _backend(self, path: str) -> Callable[[str, str, dict[str, str], bytes | None], tuple] | None:
        """What serves a request for ``path`` on the task origin: ``(method, url, headers, body) -> (status,
        headers, body, final URL)``, or None (blocked). Here: the site's app on this env's database under its mount."""
        mount = "/" + self.task.name
        if not (path == mount or path.startswith(mount + "/")):
            return None
        return lambda method, url, headers, body: follow_redirects(self._site, self._db, method, url, headers, body,
                                                                   mount)

    def _close(self) -> None:
        try:
            super()._close()
        finally:
            if self._db is not None:
                forget_changes(self._db)
                with contextlib.suppress(Exception):
                    self._db.close()
                self._db = self.task.db = None


#: Redirects one request may follow inside the env.
MAX_REDIRECTS = 5


def follow_redirects(site: Site, db: sqlite3.Connection, method: str, url: str, headers: dict[str, str],
                     body: bytes | None, mount: str) -> tuple[int, list[tuple[str, str]], bytes, str]:
    """Serve a request and follow the app's redirects here (Chromium does not follow a redirect fulfilled by
    request interception): returns the final response, the cookies set on the way, and the final URL."""
    set_cookies: list[str] = []
    headers = {k: v for k, v in headers.items() if not k.startswith(":")}
    for _ in range(MAX_REDIRECTS + 1):
        status, resp_headers, data = site.handle(db, method, url, headers, body, mount)
        new = [v for k, v in resp_headers if k.lower() == "set-cookie"]
        set_cookies += new
        if new:
            jar = SimpleCookie(headers.get("cookie", ""))
            for c in new:
                jar.load(c)
            headers["cookie"] = "; ".join(f"{k}={m.value}" for k, m in jar.items())
        location = next((v for k, v in resp_headers if k.lower() == "location"), None)
        if status not in (301, 302, 303, 307, 308) or location is None:
            out = [(k, v) for k, v in resp_headers if k.lower() != "set-cookie"] + [("Set-Cookie", c) for c in set_cookies]
            return status, out, data, url
        url = urljoin(url, location)
        method, body = "GET", None
        headers.pop("content-type", None)
        headers.pop("content-length", None)
    return 508, [("Content-Type", "text/plain; charset=utf-8")], b"too many redirects", url


def _inject_head(html: bytes, snippet: str) -> bytes:
    i = html.lower().find(b"<head>")
    if i == -1:
        return snippet.encode() + html
    return html[: i + 6] + snippet.encode() + html[i + 6 :]
