"""A site's process-wide runtime: its Flask app and its pristine seed database, plus one database per env.

:func:`get_site` builds a site once per process (cached): the seed database is generated (``data.build``) the first
time on a machine and kept as a file in the cache directory (``$ARL_ENVS_CACHE`` or ``~/.cache/arl_envs/sites``), so
later processes load it in milliseconds. The pristine copy lives in a shared-cache in-memory SQLite database that
every env's connection ATTACHes as ``seed`` (so evaluators diff ``main.<table>`` against ``seed.<table>``).

Requests reach the app in-process (WSGI, no socket): the env's browser-context router hands each request for
``http://arl.test/<mount>/...`` to :meth:`Site.handle` with the env's own connection, so parallel envs never see
each other's writes. :func:`serve` runs the same app on ``127.0.0.1`` for a human or a screenshot script.
"""

from __future__ import annotations

import itertools
import os
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Callable

from werkzeug.test import EnvironBuilder, run_wsgi_app

#: Bump when a site's generator or schema changes (invalidates cached seed files).
DATA_VERSION = 1
_LOCK = threading.Lock()
_SITES: dict[tuple[str, int], "Site"] = {}
_COUNTER = itertools.count()


#: Sites by name: each is a package ``arl_envs.envs.web.sites.<name>`` with ``app.create_app()`` and
#: ``data.build(conn, size)``; the value is the site's default size (shop and admin: products, forum: posts,
#: tracker: issues).
SITE_MODULES = {"shop": 5000, "forum": 2000, "tracker": 3000, "admin": 5000}


def cache_dir() -> Path:
    root = os.environ.get("ARL_ENVS_CACHE")
    return Path(root) / "sites" if root else Path.home() / ".cache" / "arl_envs" / "sites"


class Site:
    """One site (``name``) at one size: the Flask app and the pristine database.

    Attributes:
        name: A key of :data:`SITE_MODULES`.
        size: The site's size kwarg (shop and admin: products, forum: posts, tracker: issues).
        seed_uri: SQLite URI of the shared in-memory pristine database.
        start_s: Seconds the build or load took in this process.
    """

    def __init__(self, name: str, size: int, builder: Callable[[sqlite3.Connection, int], None],
                 app_factory: Callable[[], Any]) -> None:
        t0 = time.perf_counter()
        self.name, self.size = name, size
        self.seed_uri = f"file:arl_site_{name}_{size}_{os.getpid()}_{next(_COUNTER)}?mode=memory&cache=shared"
        self._keep = sqlite3.connect(self.seed_uri, uri=True, check_same_thread=False)  # keeps the memory db alive
        path = cache_dir() / f"{name}-{size}-v{DATA_VERSION}.sqlite"
        if path.exists():
            src = sqlite3.connect(str(path))
            src.backup(self._keep)
            src.close()
        else:
            builder(self._keep, size)
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            dst = sqlite3.connect(str(tmp))
            self._keep.backup(dst)
            dst.close()
            os.replace(tmp, path)
        # a private copy is the source of every restore (a backup from the shared-cache db that envs attach waits
        # on their read locks)
        self._src = sqlite3.connect(":memory:", check_same_thread=False)
        self._keep.backup(self._src)
        self._src_lock = threading.Lock()
        self.app = app_factory()
        self.start_s = time.perf_counter() - t0

    def __reduce__(self):
        """Copies and pickles refer to this process's site of the same name and size."""
        return get_site, (self.name, self.size)

    def connect(self) -> sqlite3.Connection:
        """A new per-env database (in memory) restored to the seed state, with the seed attached as ``seed``."""
        conn = sqlite3.connect(":memory:", check_same_thread=False, isolation_level=None)
        self.restore(conn)
        conn.execute("ATTACH DATABASE ? AS seed", (self.seed_uri,))
        from arl_envs.envs.web.sites.tasks import forget_changes

        forget_changes(conn)  # a closed connection's cached diff may sit under this one's id()
        return conn

    def restore(self, conn: sqlite3.Connection) -> None:
        """Put ``conn``'s main database back into the seed state (SQLite backup API, whole database)."""
        with self._src_lock:
            self._src.backup(conn, name="main")

    def handle(self, conn: sqlite3.Connection, method: str, url: str, headers: dict[str, str], body: bytes | None,
               mount: str) -> tuple[int, list[tuple[str, str]], bytes]:
        """Serve one request with the app on ``conn``; ``url`` is absolute, ``mount`` the path prefix (``/site-shop``)."""
        from urllib.parse import urlsplit

        parts = urlsplit(url)
        path = parts.path[len(mount):] or "/"
        builder = EnvironBuilder(path=path, base_url=f"{parts.scheme}://{parts.netloc}{mount}", query_string=parts.query,
                                 method=method, headers=headers, data=body or b"")
        env = builder.get_environ()
        env["arl.db"] = conn
        app_iter, status, resp_headers = run_wsgi_app(self.app, env, buffered=True)
        try:
            data = b"".join(app_iter)
        finally:
            close = getattr(app_iter, "close", None)
            if close:
                close()
        return int(status.split()[0]), list(resp_headers.items()), data


def get_site(name: str, size: int) -> Site:
    """This process's :class:`Site` for ``name`` at ``size`` (built or loaded on the first call)."""
    key = (name, int(size))
    with _LOCK:
        site = _SITES.get(key)
        if site is None:
            if name not in SITE_MODULES:
                raise ValueError(f"unknown site {name!r}; known: {', '.join(SITE_MODULES)}")
            import importlib

            app = importlib.import_module(f"arl_envs.envs.web.sites.{name}.app")
            data = importlib.import_module(f"arl_envs.envs.web.sites.{name}.data")
            site = _SITES[key] = Site(name, int(size), data.build, app.create_app)
        return site


def serve(name: str = "shop", size: int | None = None, port: int = 0) -> tuple[Any, int]:
    """Run the site on ``127.0.0.1`` in a daemon thread (one database for all visitors); returns (server, port)."""
    from werkzeug.serving import make_server

    site = get_site(name, SITE_MODULES[name] if size is None else size)
    conn = site.connect()
    lock = threading.Lock()

    def wsgi(environ, start_response):
        environ["arl.db"] = conn
        with lock:
            return list(site.app(environ, start_response))

    server = make_server("127.0.0.1", port, wsgi, threaded=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, server.server_port
