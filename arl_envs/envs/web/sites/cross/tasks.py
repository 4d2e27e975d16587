"""Cross-site templates (:data:`TEMPLATES`: 9 change, 3 info) over the shop and the forum.

Each reads something on one site and acts or answers with it on the other. ``sample(Dbs(shop, forum), rng)``;
``check(Dbs, state, goal, answer)`` reads both databases: the expected rows changed in one site and NOTHING changed
in the other. Experts are privileged: they switch to the site to act on (portal tab, ``tab_focus(0)``) and reuse
that site's template expert with a goal built from the cross-site goal.
"""

from __future__ import annotations

import re

from urllib.parse import urlsplit

from arl_envs.envs.web.sites.forum import changes as fc
from arl_envs.envs.web.sites.forum.table import TEMPLATES as FORUM_TEMPLATES
from arl_envs.envs.web.sites.forum.tasks import TRACKED as FORUM_TRACKED
from arl_envs.envs.web.sites.shop import tasks as st
from arl_envs.envs.web.sites.tasks import TRACKED_TABLES as SHOP_TRACKED
from arl_envs.envs.web.sites.tasks import Template, changed_tables, check_answer
from arl_envs.envs.web.task import ExpertView, act

FORUM = {t.name: t for t in FORUM_TEMPLATES}
SHOP = {t.name: t for t in st.TEMPLATES}


# ---------------------------------------------------------------- experts: which tab, then the site's own expert
def in_site(view: ExpertView, site: str) -> ExpertView | None:
    """``view`` with its URL relative to ``site``'s mount, or None when the active tab shows something else."""
    path = urlsplit(view.url).path
    if path == f"/{site}" or path.startswith(f"/{site}/"):
        return ExpertView(view.axtree, view.url[len(site) + 1:] or "/", view.state, view._resolver)
    return None


def on(view: ExpertView, site: str, template: str, goal: dict) -> str:
    sub = in_site(view, site)
    if sub is None:
        if urlsplit(view.url).path in ("/", "/index.html", ""):
            return act("click", view.bid(f"#go-{site}"))
        return act("tab_focus", 0)
    return (SHOP if site == "shop" else FORUM)[template].expert(sub, goal)


def unchanged(db, tables) -> bool:
    return changed_tables(db, tables) == {}


# ---------------------------------------------------------------- sampling helpers
def _forum_user(db, rng):
    return fc._user(db, rng)


def _shop_user(db, rng, where="1=1"):
    return st._user(db, rng, where)


def _best(db, rng, value_sql: str, order: str) -> tuple:
    """A product type with a unique extreme ``value_sql``: (type name, product id, product name, price)."""
    while True:
        cid, slug, cname = st._leaf(db, rng)
        rows = db.execute(f"SELECT {value_sql} v, id, name, price_cents FROM products p WHERE category_id=? "
                          f"ORDER BY v {order}, id LIMIT 2", (cid,)).fetchall()
        if rows[0][0] != rows[1][0]:
            return cname.lower(), rows[0][1], rows[0][2], rows[0][3]


BEST_RATED = ("p.rating * 1000 + p.n_reviews", "DESC")
CHEAPEST = ("p.price_cents", "ASC")


def _creds(u) -> dict:
    return {"uid": u[0], "username": u[1], "password": u[2]}


def _note(fu, su=None) -> str:
    shop = f" (Shop login: {su[1]}, password {su[2]}.)" if su else ""
    return f" (Forum login: {fu[1]}, password {fu[2]}.)" + shop


# ---------------------------------------------------------------- shop -> forum: a new post / comment / bio / vote
_MONEY = re.compile(r"\$\d[\d,]*(?:\.\d+)?")


def names_only(dbs, text: str, must: str) -> bool:
    """Whether ``text`` names ``must`` and no rival: an amount (``$12.34``) must be the only amount in it, a product
    name the only shop product name in it (a text listing every candidate would otherwise always be right)."""
    low, must_low = text.lower(), must.lower()
    if must_low not in low:
        return False
    if must.startswith("$"):
        return set(_MONEY.findall(text)) == {must}
    return not any(o in low and o not in must_low
                   for (o,) in dbs.shop.execute("SELECT DISTINCT lower(name) FROM products"))


def _forum_post_check(dbs, goal, answer, must: str):
    ch = changed_tables(dbs.forum, FORUM_TRACKED)
    ok = set(ch) == {"posts"} and not ch["posts"][1] and len(ch["posts"][0]) == 1 and unchanged(dbs.shop, SHOP_TRACKED)
    if ok:
        row = ch["posts"][0][0]
        ok = (row[1], row[2], row[3]) == (goal["fid"], goal["uid"], goal["title"]) and names_only(dbs, row[4], must)
    return (1.0 if ok else 0.0), ok or answer is not None


def best_rated_post() -> Template:
    def sample(dbs, rng):
        cat, pid, name, _ = _best(dbs.shop, rng, *BEST_RATED)
        fid, slug, fname = fc._forum(dbs.forum, rng)
        u = _forum_user(dbs.forum, rng)
        title = f"Harbor Market's best-rated {cat}"
        return (f"Find the best-rated {cat} in the Harbor Market shop (most reviews among equally rated), then start "
                f'a post in the forum\'s {fname} subforum titled "{title}" whose text names that product.' + _note(u),
                {**_creds(u), "fid": fid, "slug": slug, "title": title, "name": name,
                 "sentence": f"I recommend the {name}."})

    def check(dbs, state, goal, answer):
        return _forum_post_check(dbs, goal, answer, goal["name"])

    return Template("cross-best-rated-post", "change", sample, check,
                    lambda view, goal: on(view, "forum", "create-post", goal))


def order_total_post() -> Template:
    def sample(dbs, rng):
        su = _shop_user(dbs.shop, rng, "EXISTS (SELECT 1 FROM orders o WHERE o.user_id=u.id)")
        oid, total = st._pick(dbs.shop, rng, "SELECT id, total_cents FROM orders WHERE user_id=? ORDER BY id", (su[0],))
        fid, slug, fname = fc._forum(dbs.forum, rng)
        u = _forum_user(dbs.forum, rng)
        title = f"Harbor Market order #{oid} arrived"
        return (f'Look up the total of your Harbor Market order #{oid}, then start a post in the forum\'s {fname} '
                f'subforum titled "{title}" whose text states that total (like $12.34).' + _note(u, su),
                {**_creds(u), "fid": fid, "slug": slug, "title": title, "total": st.money(total),
                 "sentence": f"The order came to {st.money(total)} in total."})

    def check(dbs, state, goal, answer):
        return _forum_post_check(dbs, goal, answer, goal["total"])

    return Template("cross-order-total-post", "change", sample, check,
                    lambda view, goal: on(view, "forum", "create-post", goal))


def _comment_check(dbs, goal, answer, must: str):
    ch = changed_tables(dbs.forum, FORUM_TRACKED)
    ok = (set(ch) == {"comments"} and not ch["comments"][1] and len(ch["comments"][0]) == 1
          and unchanged(dbs.shop, SHOP_TRACKED))
    if ok:
        row = ch["comments"][0][0]
        ok = (row[1], row[2], row[3]) == (goal["pid"], goal["uid"], None) and names_only(dbs, row[4], must)
    return (1.0 if ok else 0.0), ok or answer is not None


def product_comment(name: str, what: str, extreme, say) -> Template:
    """Comment on a forum post with a fact about the extreme product of a type (its name or its price)."""

    def sample(dbs, rng):
        cat, pid, pname, price = _best(dbs.shop, rng, *extreme)
        fpid, title, _, _ = fc._post(dbs.forum, rng)
        u = _forum_user(dbs.forum, rng)
        must = say(pname, price)
        return (what.format(cat=cat, title=title) + _note(u),
                {**_creds(u), "pid": fpid, "title": title, "must": must, "parent": None,
                 "sentence": f"Harbor Market has the {pname} for {st.money(price)}."})

    def check(dbs, state, goal, answer):
        return _comment_check(dbs, goal, answer, goal["must"])

    return Template(name, "change", sample, check, lambda view, goal: on(view, "forum", "comment-on-post", goal))


def reviews_vote() -> Template:
    def sample(dbs, rng):
        pid, pname = st._product(dbs.shop, rng)
        n = dbs.shop.execute("SELECT n_reviews FROM products WHERE id=?", (pid,)).fetchone()[0]
        u = _forum_user(dbs.forum, rng)
        fpid, title, _, _ = fc._post(dbs.forum, rng, f"p.user_id != {u[0]} AND p.id NOT IN (SELECT post_id FROM votes "
                                                     f"WHERE user_id={u[0]} AND post_id IS NOT NULL)")
        score = dbs.forum.execute("SELECT score FROM posts WHERE id=?", (fpid,)).fetchone()[0]
        value = 1 if n > 3 else -1
        return (f'Check how many reviews the {pname} has in the Harbor Market shop. If it has more than 3, upvote the '
                f'forum post "{title}"; otherwise downvote it.' + _note(u),
                {**_creds(u), "pid": fpid, "title": title, "score": score, "value": value})

    def check(dbs, state, goal, answer):
        ch = changed_tables(dbs.forum, FORUM_TRACKED)
        v = goal["value"]
        ok = (set(ch) == {"votes", "posts"} and ch["votes"] == ([(goal["uid"], goal["pid"], None, v)], [])
              and len(ch["posts"][0]) == 1 and ch["posts"][0][0][0] == goal["pid"]
              and ch["posts"][0][0][5] == goal["score"] + v and unchanged(dbs.shop, SHOP_TRACKED))
        return (1.0 if ok else 0.0), ok or answer is not None

    def expert(view, goal):
        return on(view, "forum", "upvote-post" if goal["value"] > 0 else "downvote-post", goal)

    return Template("cross-reviews-vote", "change", sample, check, expert)


def bio_best_rated() -> Template:
    def sample(dbs, rng):
        cat, pid, pname, _ = _best(dbs.shop, rng, *BEST_RATED)
        u = _forum_user(dbs.forum, rng)
        return (f'Set your forum profile bio to "Fan of the X", where X is the name of the best-rated {cat} in the '
                f"Harbor Market shop (most reviews among equally rated)." + _note(u),
                {**_creds(u), "bio": f"Fan of the {pname}"})

    def check(dbs, state, goal, answer):
        r, done = FORUM["update-bio"].check(dbs.forum, state, goal, answer)
        ok = r == 1.0 and unchanged(dbs.shop, SHOP_TRACKED)
        return (1.0 if ok else 0.0), ok or answer is not None

    return Template("cross-bio-best-rated", "change", sample, check,
                    lambda view, goal: on(view, "forum", "update-bio", goal))


# ---------------------------------------------------------------- forum -> shop: cart and review
def count_to_cart(name: str, what: str, count_sql: str, pick_sql: str) -> Template:
    """Add N of a product to the shop cart, N read on the forum (``count_sql`` on the row ``pick_sql`` drew)."""

    def sample(dbs, rng):
        key, label = st._pick(dbs.forum, rng, pick_sql)
        n = dbs.forum.execute(count_sql, (key,)).fetchone()[0]
        pid, pname = st._product(dbs.shop, rng)
        size, color = st._options(dbs.shop, pid)
        return (what.format(label=label, product=pname + st._opt_text(size, color)),
                {"pid": pid, "name": pname, "size": size, "color": color, "qty": n})

    def check(dbs, state, goal, answer):
        r, done = SHOP["add-to-cart"].check(dbs.shop, state, goal, answer)
        ok = r == 1.0 and unchanged(dbs.forum, FORUM_TRACKED)
        return (1.0 if ok else 0.0), ok or answer is not None

    return Template(name, "change", sample, check, lambda view, goal: on(view, "shop", "add-to-cart", goal))


def review_with_title() -> Template:
    def sample(dbs, rng):
        fid, slug, fname = fc._forum(dbs.forum, rng)
        title = dbs.forum.execute("SELECT title FROM posts WHERE forum_id=? ORDER BY id DESC LIMIT 1", (fid,)).fetchone()[0]
        pid, pname = st._product(dbs.shop, rng)
        su = _shop_user(dbs.shop, rng)
        stars = int(rng.integers(1, 6))
        return (f"Write a {stars}-star review of the {pname} in the Harbor Market shop whose title is the title of the "
                f"newest post in the forum's {fname} subforum (any text of at least 10 characters)."
                f" (Shop login: {su[1]}, password {su[2]}.)",
                {"pid": pid, "name": pname, "uid": su[0], "email": su[1], "password": su[2], "stars": stars,
                 "title": title})

    def check(dbs, state, goal, answer):
        r, done = SHOP["write-review"].check(dbs.shop, state, goal, answer)
        ok = r == 1.0 and unchanged(dbs.forum, FORUM_TRACKED)
        return (1.0 if ok else 0.0), ok or answer is not None

    return Template("cross-review-titled-by-forum", "change", sample, check,
                    lambda view, goal: on(view, "shop", "write-review", goal))


# ---------------------------------------------------------------- information that needs both sites
def _answer_expert(view, goal):
    sub = in_site(view, "shop")
    if sub is None or st.path_of(sub) != f"/product/{goal['spid']}":
        if sub is None:
            return on(view, "shop", "open-product", {"pid": goal["spid"], "name": goal["sname"]})
        return SHOP["open-product"].expert(sub, {"pid": goal["spid"], "name": goal["sname"]})
    return act("answer", goal["answer"])


def reviews_minus_comments() -> Template:
    def sample(dbs, rng):
        pid, pname = st._product(dbs.shop, rng)
        n = dbs.shop.execute("SELECT n_reviews FROM products WHERE id=?", (pid,)).fetchone()[0]
        fpid, title, _, _ = fc._post(dbs.forum, rng)
        m = dbs.forum.execute("SELECT COUNT(*) FROM comments WHERE post_id=?", (fpid,)).fetchone()[0]
        return (f'How many more reviews does the {pname} have in the Harbor Market shop than the forum post "{title}" '
                f"has comments? (A negative number if it has fewer.)",
                {"spid": pid, "sname": pname, "answer": str(n - m)})

    return Template("cross-reviews-minus-comments", "info", sample, check_answer, _answer_expert)


def price_times_comments() -> Template:
    def sample(dbs, rng):
        pid, pname = st._product(dbs.shop, rng)
        price = dbs.shop.execute("SELECT price_cents FROM products WHERE id=?", (pid,)).fetchone()[0]
        fpid, title, _, _ = fc._post(dbs.forum, rng, "(SELECT COUNT(*) FROM comments c WHERE c.post_id=p.id) >= 1")
        m = dbs.forum.execute("SELECT COUNT(*) FROM comments WHERE post_id=?", (fpid,)).fetchone()[0]
        return (f'What would N units of the {pname} cost in the Harbor Market shop, where N is the number of comments '
                f'on the forum post "{title}"? Answer with the price (like $12.34).',
                {"spid": pid, "sname": pname, "answer": st.money(price * m)})

    return Template("cross-price-times-comments", "info", sample, check_answer, _answer_expert)


def compare_counts() -> Template:
    def sample(dbs, rng):
        while True:
            pid, pname = st._product(dbs.shop, rng)
            n = dbs.shop.execute("SELECT n_reviews FROM products WHERE id=?", (pid,)).fetchone()[0]
            fpid, title, _, _ = fc._post(dbs.forum, rng)
            m = dbs.forum.execute("SELECT score FROM posts WHERE id=?", (fpid,)).fetchone()[0]
            if n != m:
                break
        return (f'Which is larger: the number of reviews of the {pname} in the Harbor Market shop, or the score of the '
                f'forum post "{title}"? Answer "reviews" or "score".',
                {"spid": pid, "sname": pname, "answer": "reviews" if n > m else "score"})

    return Template("cross-compare-reviews-score", "info", sample, check_answer, _answer_expert)


TEMPLATES: list[Template] = [
    best_rated_post(),
    order_total_post(),
    product_comment("cross-cheapest-comment", 'Find the cheapest {cat} in the Harbor Market shop and comment on the '
                    'forum post "{title}" with a comment that names it.', CHEAPEST, lambda n, p: n),
    product_comment("cross-price-comment", 'Find the best-rated {cat} in the Harbor Market shop (most reviews among '
                    'equally rated) and comment on the forum post "{title}" with its price (like $12.34).', BEST_RATED,
                    lambda n, p: st.money(p)),
    reviews_vote(),
    bio_best_rated(),
    count_to_cart("cross-comments-to-cart", 'Add to the Harbor Market cart as many units of the {product} as the forum '
                  'post "{label}" has comments.', "SELECT COUNT(*) FROM comments WHERE post_id=?",
                  "SELECT p.id, p.title FROM posts p WHERE (SELECT COUNT(*) FROM comments c WHERE c.post_id=p.id) "
                  "BETWEEN 1 AND 6 ORDER BY p.id"),
    count_to_cart("cross-posts-to-cart", "Add to the Harbor Market cart as many units of the {product} as the forum "
                  "user {label} has written posts.", "SELECT COUNT(*) FROM posts WHERE user_id=?",
                  "SELECT u.id, u.username FROM users u WHERE (SELECT COUNT(*) FROM posts p WHERE p.user_id=u.id) "
                  "BETWEEN 1 AND 8 ORDER BY u.id"),
    review_with_title(),
    reviews_minus_comments(),
    price_times_comments(),
    compare_counts(),
]
