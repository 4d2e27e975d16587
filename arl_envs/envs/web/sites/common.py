"""What the offline sites' Flask applications share: the app with its templates and static files, the request's
database connection, the session cookie, and the customer session of the shop, forum and tracker."""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from flask import Flask, g, request


def make_app(import_name: str, here: Path, cookie: str) -> Flask:
    """A site's Flask app serving ``here/templates`` and ``here/static``; after each request it sets the session
    cookie ``cookie`` when a handler opened a session (``g.new_sid``) and forbids caching (every page is live)."""
    app = Flask(import_name, template_folder=str(here / "templates"), static_folder=str(here / "static"))

    @app.after_request
    def _cookie(resp: Any) -> Any:
        if g.get("new_sid"):
            resp.set_cookie(cookie, g.new_sid, path="/")
        resp.headers["Cache-Control"] = "no-store"
        return resp

    return app


def open_user_session(cookie: str) -> None:
    """Before a request: ``g.db`` (the request's SQLite connection, put in the WSGI environ by the site server),
    ``g.sid`` (the session id of cookie ``cookie`` when the ``sessions`` table knows it, else ``""``), ``g.user``
    (the signed-in ``users`` row or None) and ``g.new_sid`` (None until a handler opens a session)."""
    g.db = request.environ["arl.db"]
    sid = request.cookies.get(cookie, "")
    row = g.db.execute("SELECT user_id FROM sessions WHERE id=?", (sid,)).fetchone() if sid else None
    g.sid = sid if row is not None else ""
    g.user = g.db.execute("SELECT * FROM users WHERE id=?", (row[0],)).fetchone() if row and row[0] else None
    g.new_sid = None



def session_id() -> str:
    """The request's customer session id, opening a session (a ``sessions`` row and, after the request, its
    cookie) when there is none."""
    if not g.sid:
        g.sid = g.new_sid = secrets.token_hex(8)
        g.db.execute("INSERT INTO sessions VALUES (?, NULL)", (g.sid,))
    return g.sid


def sign_in(user_id: int) -> None:
    """Sign the request's customer session (opened if needed) in as ``users`` row ``user_id``."""
    g.db.execute("UPDATE sessions SET user_id=? WHERE id=?", (user_id, session_id()))


def sign_out() -> None:
    """Sign the request's customer session out (the session itself stays)."""
    if g.sid:
        g.db.execute("UPDATE sessions SET user_id=NULL WHERE id=?", (g.sid,))

def login_redirect_target(nxt: str) -> str | None:
    """Where a login form's ``next`` may send the browser: a path of this site (``/orders?page=2``) prefixed with the
    app's mount, or None (then the site's home page). Refused: anything but an absolute path (``//host``, a scheme,
    a backslash, a control character), a ``.`` or ``..`` segment, plain or percent-encoded (``/../../site-shop/``
    would leave the site under its mount), and the login page itself."""
    plain, path = unquote(nxt), unquote(urlsplit(nxt).path)
    if (not nxt.startswith("/") or nxt.startswith("//") or "\\" in plain or any(ord(c) < 32 for c in plain)
            or any(seg in (".", "..") for seg in path.split("/")) or "login" in path):
        return None
    return request.script_root + nxt
