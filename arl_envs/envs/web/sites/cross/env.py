"""``CrossSiteEnv`` (``arl/web.site-cross-v0``): tasks that span the shop and the forum in one browser.

Both sites run in-process under one mount: ``http://arl.test/site-cross/shop/...`` (the shop's app on this env's
shop database) and ``http://arl.test/site-cross/forum/...`` (the forum's app on this env's forum database); the start
page ``/site-cross/index.html`` is a portal whose two links open each site in a new tab (``tab_focus(0)`` returns to
it). A reset restores BOTH databases to their seed state; evaluators read both (:class:`Dbs`). Everything else
(observation and action modes, experts, scoring) is :class:`~arl_envs.envs.web.sites.env.SiteEnv`'s.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Callable, ClassVar, NamedTuple

import numpy as np

from arl_envs.envs.web.env import WebEnv
from arl_envs.envs.web.sites.env import SiteEnv, SiteTask, follow_redirects
from arl_envs.envs.web.sites.server import SITE_MODULES, Site, get_site
from arl_envs.envs.web.sites.tasks import forget_changes
from arl_envs.envs.web.task import TaskInstance

MOUNT = "site-cross"
SITES = ("shop", "forum")
PORTAL = b"""<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Start page</title>
<style>body{font-family:sans-serif;margin:40px}li{margin:12px 0;font-size:18px}</style></head>
<body><h1>Start page</h1><p>Sites available in this session (each opens in a new tab):</p><ul>
<li><a id="go-shop" href="shop/" target="_blank">Harbor Market</a> - online shop</li>
<li><a id="go-forum" href="forum/" target="_blank">Commons</a> - discussion forum</li></ul></body></html>"""


class Dbs(NamedTuple):
    """The env's two databases (each with the seed attached as ``seed``), as given to cross-site evaluators."""

    shop: sqlite3.Connection
    forum: sqlite3.Connection


class CrossTask(SiteTask):
    """The cross-site template table bound to one env's pair of databases."""

    max_turns: ClassVar[int] = 45

    def __init__(self, sites: dict[str, Site], templates: list, dbs: Dbs | None) -> None:
        super().__init__(sites["shop"], MOUNT, templates, None)
        self.sites = sites
        self.description = "cross-site templates (shop + forum)"
        self.db = dbs

    def __setstate__(self, state: dict[str, Any]) -> None:
        from arl_envs.envs.web.sites.cross.tasks import TEMPLATES

        by_name = {t.name: t for t in TEMPLATES}
        state = dict(state)
        names = state.pop("templates")
        super().__setstate__({**state, "templates": []})
        self.templates = [by_name[n] for n in names]

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        tpl = self.templates[int(rng.integers(len(self.templates)))]
        utterance, goal = tpl.sample(Dbs(self.sites["shop"]._src, self.sites["forum"]._src), rng)
        return TaskInstance(goal={"template": tpl.name, **goal}, utterance=utterance, files={"index.html": b""})


class CrossSiteEnv(SiteEnv):
    """Cross-site tasks over the shop and the forum (see the module docstring); all :class:`WebEnv` kwargs apply.

    Arguments:
        family: ``"all"`` (default: every cross-site template), ``"info"`` (answer a question that needs both
            sites) or ``"change"`` (read one site, change the other's database).
        shop_size: Number of shop products (default 5,000). forum_size: Number of forum posts (default 2,000).

    Rewards:
        ``task``: 1 when the goal is met in both databases (and nothing else changed in either); ``success`` at 1.
        ``progress`` (0.1) when the goal is reached, ``format`` as in :class:`WebEnv`.

    Version history:
        v0: first version.
    """

    def __init__(self, *, family: str = "all", shop_size: int | None = None, forum_size: int | None = None,
                 **kwargs: Any) -> None:
        from arl_envs.envs.web.sites.cross.tasks import TEMPLATES

        if family not in ("all", "info", "change"):
            raise ValueError(f"family must be one of ('all', 'info', 'change'), got {family!r}")
        sizes = {"shop": shop_size, "forum": forum_size}
        for k, v in sizes.items():
            if v is not None and v < 500:
                raise ValueError(f"{k}_size must be >= 500, got {v}")
        self.site_name, self.family = "cross", family
        self._sites = {k: get_site(k, SITE_MODULES[k] if v is None else int(v)) for k, v in sizes.items()}
        self._site = self._sites["shop"]
        self.size = self._site.size
        self._db = None
        self._dbs: Dbs | None = None
        templates = [t for t in TEMPLATES if family == "all" or t.family == family]
        WebEnv.__init__(self, CrossTask(self._sites, templates, None), **kwargs)

    def _reset_task(self, task_id: str | None) -> tuple[str, str]:
        with self.task.db_lock:
            if self._dbs is None:
                self._dbs = self.task.db = Dbs(*(self._sites[k].connect() for k in SITES))
            else:
                for k, conn in zip(SITES, self._dbs):
                    self._sites[k].restore(conn)
            for conn in self._dbs:
                forget_changes(conn)
        self.task.last_reward = 0.0
        return WebEnv._reset_task(self, task_id)

    def _backend(self, path: str) -> Callable[[str, str, dict[str, str], bytes | None], tuple] | None:
        root = "/" + MOUNT
        if path in (root, root + "/", root + "/index.html"):
            return lambda method, url, headers, body: (200, [("Content-Type", "text/html; charset=utf-8")], PORTAL, url)
        for k, conn in zip(SITES, self._dbs or ()):
            mount = f"{root}/{k}"
            if path == mount or path.startswith(mount + "/"):
                site = self._sites[k]
                return lambda method, url, headers, body: follow_redirects(site, conn, method, url, headers, body,
                                                                           mount)
        return None

    def _close(self) -> None:
        try:
            WebEnv._close(self)
        finally:
            if self._dbs is not None:
                for conn in self._dbs:
                    forget_changes(conn)
                    conn.close()
                self._dbs = self.task.db = None
