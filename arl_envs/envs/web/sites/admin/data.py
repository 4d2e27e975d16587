"""The admin site's seed database: the shop's data (:mod:`arl_envs.envs.web.sites.shop.data`: products, categories,
customers = ``users``, orders, order items, reviews) plus the back office's own tables:

* ``staff(id, username, password, name, role)``: 6 back-office accounts (``role`` Manager or Clerk), separate from the
  shop's customers; ``staff_sessions(id, staff_id)``.
* ``order_notes(id, order_id, staff_id, body)``: internal notes on orders (none in the seed).

``n_products`` sets the size (default 5,000, as the shop).
"""

from __future__ import annotations

import sqlite3

from arl_envs.envs.web.sites.shop import data as shop_data

STAFF = (("mgarcia", "Marta Garcia", "Manager"), ("tbennett", "Tom Bennett", "Manager"), ("ykim", "Yuna Kim", "Clerk"),
         ("rokafor", "Ray Okafor", "Clerk"), ("lsilva", "Lena Silva", "Clerk"), ("pwalsh", "Peter Walsh", "Clerk"))

SCHEMA = """
CREATE TABLE staff(id INTEGER PRIMARY KEY, username TEXT UNIQUE, password TEXT, name TEXT, role TEXT);
CREATE TABLE staff_sessions(id TEXT PRIMARY KEY, staff_id INTEGER);
CREATE TABLE order_notes(id INTEGER PRIMARY KEY, order_id INTEGER, staff_id INTEGER, body TEXT);
CREATE INDEX ix_ou ON orders(user_id);
CREATE INDEX ix_oip ON order_items(product_id);
"""


def build(conn: sqlite3.Connection, n_products: int = 5000, seed: int = 0) -> None:
    """The shop's seed data at ``n_products`` plus the staff accounts (deterministic)."""
    shop_data.build(conn, n_products=n_products, seed=seed)
    conn.executescript(SCHEMA)
    conn.executemany("INSERT INTO staff VALUES (?,?,?,?,?)",
                     [(i, u, f"{u[1:]}-desk-{40 + i}", n, r) for i, (u, n, r) in enumerate(STAFF, 1)])
    conn.commit()
