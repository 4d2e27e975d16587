"""The forum's content-change templates: posting, commenting, replying, voting, editing, deleting, subscribing
and profile edits. Each evaluator diffs :data:`~arl_envs.envs.web.sites.forum.tasks.TRACKED` against the seed and
accepts exactly the expected rows (nothing else may change)."""

from __future__ import annotations

from arl_envs.envs.web.sites.forum.data import ADJECTIVES, TOPICS
from arl_envs.envs.web.sites.forum.tasks import TRACKED, _creds, _forum, _login_note, _post, _user, go_forum, go_post, login
from arl_envs.envs.web.sites.tasks import Template, changed_tables, fill_then, path_of, url_params
from arl_envs.envs.web.task import act

NEW_TITLES = ("Weekend report: {activity} with a {adj} {noun}", "Question from a newcomer about {activity}",
              "Looking for a {adj} {noun}, suggestions?", "Month {n} of {activity}: progress update")
SENTENCES = ("Thanks to everyone who answered my last question about {activity}.",
             "I ended up buying the {adj} {noun} and I am happy with it.",
             "Would a {noun} help with {activity}, or is it a waste of money?",
             "Sharing my notes on {activity} in case they help someone.")
BIOS = ("Learning {activity} one weekend at a time.", "Happy owner of a {adj} {noun}.",
        "Ask me anything about {activity}.")


def _text(pattern: str, rng, slug: str) -> str:
    _, _, nouns, acts, _ = TOPICS[slug]
    return pattern.format(activity=acts[int(rng.integers(len(acts)))], noun=nouns[int(rng.integers(len(nouns)))],
                          adj=ADJECTIVES[int(rng.integers(len(ADJECTIVES)))], n=int(rng.integers(2, 13)))


def _only(db, allowed: set[str]):
    """The diff of :data:`TRACKED` when only ``allowed`` tables changed, else None."""
    ch = changed_tables(db, TRACKED)
    return ch if ch and set(ch) <= allowed else None


def _result(ok: bool, answer) -> tuple[float, bool]:
    return (1.0 if ok else 0.0), ok or answer is not None


# ---------------------------------------------------------------- posting and commenting
def create_post() -> Template:
    def sample(db, rng):
        fid, slug, fname = _forum(db, rng)
        u = _user(db, rng)
        while True:
            title = _text(NEW_TITLES[int(rng.integers(len(NEW_TITLES)))], rng, slug)
            if db.execute("SELECT 1 FROM posts WHERE title=?", (title,)).fetchone() is None:
                break
        sentence = _text(SENTENCES[int(rng.integers(len(SENTENCES)))], rng, slug)
        return (f'Start a new post in the {fname} subforum titled "{title}" whose text contains the sentence '
                f'"{sentence}"' + _login_note(u), {**_creds(u), "fid": fid, "slug": slug, "title": title,
                                                    "sentence": sentence})

    def check(db, state, goal, answer):
        ch = _only(db, {"posts"})
        ok = False
        if ch and not ch["posts"][1] and len(ch["posts"][0]) == 1:
            row = ch["posts"][0][0]
            ok = (row[1], row[2], row[3]) == (goal["fid"], goal["uid"], goal["title"]) and goal["sentence"] in row[4]
        return _result(ok, answer)

    def expert(view, goal):
        step = login(view, goal)
        if step:
            return step
        if path_of(view) != "/submit":
            return act("click", view.bid("#new-post"))
        return fill_then(view, [("p-forum", goal["slug"]), ("p-title", goal["title"]), ("p-body", goal["sentence"])],
                         "#p-submit")

    return Template("create-post", "change", sample, check, expert)


def comment(reply: bool) -> Template:
    def sample(db, rng):
        pid, title, _, _ = _post(db, rng, "(SELECT COUNT(*) FROM comments c WHERE c.post_id=p.id) >= 2" if reply else "1=1")
        slug = db.execute("SELECT f.slug FROM posts p JOIN forums f ON f.id=p.forum_id WHERE p.id=?", (pid,)).fetchone()[0]
        u = _user(db, rng)
        sentence = _text(SENTENCES[int(rng.integers(len(SENTENCES)))], rng, slug)
        goal = {**_creds(u), "pid": pid, "title": title, "sentence": sentence, "parent": None}
        if not reply:
            return f'Comment on the post "{title}" with the text "{sentence}"' + _login_note(u), goal
        cid, who = db.execute("SELECT c.id, u.username FROM comments c JOIN users u ON u.id=c.user_id WHERE c.post_id=? "
                              "ORDER BY c.id LIMIT 1", (pid,)).fetchone()
        return (f'On the post "{title}", reply to the first comment (by {who}) with the text "{sentence}"'
                + _login_note(u), {**goal, "parent": cid})

    def check(db, state, goal, answer):
        ch = _only(db, {"comments"})
        ok = False
        if ch and not ch["comments"][1] and len(ch["comments"][0]) == 1:
            row = ch["comments"][0][0]
            ok = (row[1], row[2], row[3]) == (goal["pid"], goal["uid"], goal["parent"]) and goal["sentence"] in row[4]
        return _result(ok, answer)

    def expert(view, goal):
        step = login(view, goal) or go_post(view, goal["pid"], goal["title"])
        if step:
            return step
        if goal["parent"] is not None and url_params(view.url)[1].get("reply") != str(goal["parent"]):
            return act("click", view.bid(f'#c{goal["parent"]} a.reply'))
        return fill_then(view, [("c-body", goal["sentence"])], "#c-submit")

    return Template("reply-to-comment" if reply else "comment-on-post", "change", sample, check, expert)


# ---------------------------------------------------------------- votes
def vote_post(value: int) -> Template:
    def sample(db, rng):
        u = _user(db, rng)
        pid, title, _, _ = _post(db, rng, f"p.user_id != {u[0]} AND p.id NOT IN (SELECT post_id FROM votes WHERE "
                                          f"user_id={u[0]} AND post_id IS NOT NULL)")
        score = db.execute("SELECT score FROM posts WHERE id=?", (pid,)).fetchone()[0]
        word = "Upvote" if value > 0 else "Downvote"
        return f'{word} the post "{title}".' + _login_note(u), {**_creds(u), "pid": pid, "title": title, "score": score}

    def check(db, state, goal, answer):
        ch = _only(db, {"votes", "posts"})
        ok = bool(ch) and ch.get("votes", ([], []))[0] == [(goal["uid"], goal["pid"], None, value)] and not ch["votes"][1]
        posts = ch.get("posts", ([], [])) if ch else ([], [])
        ok = ok and len(posts[0]) == 1 and posts[0][0][0] == goal["pid"] and posts[0][0][5] == goal["score"] + value
        return _result(ok, answer)

    def expert(view, goal):
        step = login(view, goal) or go_post(view, goal["pid"], goal["title"])
        return step or act("click", view.bid("#upvote" if value > 0 else "#downvote"))

    return Template("upvote-post" if value > 0 else "downvote-post", "change", sample, check, expert)


def upvote_comment() -> Template:
    def sample(db, rng):
        u = _user(db, rng)
        pid, title, _, _ = _post(db, rng, "(SELECT COUNT(*) FROM comments c WHERE c.post_id=p.id) >= 1")
        cid, who, score = db.execute("SELECT c.id, u.username, c.score FROM comments c JOIN users u ON u.id=c.user_id "
                                     "WHERE c.post_id=? ORDER BY c.score DESC, c.id LIMIT 1", (pid,)).fetchone()
        return (f'Upvote the highest-scoring comment (by {who}) on the post "{title}".' + _login_note(u),
                {**_creds(u), "pid": pid, "title": title, "cid": cid, "score": score})

    def check(db, state, goal, answer):
        ch = _only(db, {"votes", "comments"})
        ok = bool(ch) and ch.get("votes", ([], []))[0] == [(goal["uid"], None, goal["cid"], 1)] and not ch["votes"][1]
        rows = ch.get("comments", ([], [])) if ch else ([], [])
        ok = ok and len(rows[0]) == 1 and rows[0][0][0] == goal["cid"] and rows[0][0][5] == goal["score"] + 1
        return _result(ok, answer)

    def expert(view, goal):
        step = login(view, goal) or go_post(view, goal["pid"], goal["title"])
        return step or act("click", view.bid(f'#c{goal["cid"]} button.cup'))

    return Template("upvote-comment", "change", sample, check, expert)


# ---------------------------------------------------------------- editing your own posts
def _own_post(db, rng) -> tuple:
    pid, title, uname, uid = _post(db, rng)
    pw = db.execute("SELECT password FROM users WHERE id=?", (uid,)).fetchone()[0]
    return pid, title, (uid, uname, pw)


def _changed_post(db, goal):
    """The post's (seed row, current row) when ``posts`` is the only changed table and only this row changed."""
    ch = _only(db, {"posts"})
    if not ch or len(ch["posts"][0]) != 1 or len(ch["posts"][1]) != 1 or ch["posts"][0][0][0] != goal["pid"]:
        return None
    return ch["posts"][1][0], ch["posts"][0][0]


def _edit_expert(fill_fn):
    def expert(view, goal):
        step = login(view, goal)
        if step:
            return step
        if path_of(view) == f"/p/{goal['pid']}/edit":
            return fill_fn(view, goal)
        step = go_post(view, goal["pid"], goal["title"])
        return step or act("click", view.bid("#edit"))

    return expert


def edit_title() -> Template:
    def sample(db, rng):
        pid, title, u = _own_post(db, rng)
        new = title.rstrip("?!. ") + (" (solved)", " [update]", " - thanks all")[int(rng.integers(3))]
        return (f'Rename your post "{title}" to "{new}" (keep its text).' + _login_note(u),
                {**_creds(u), "pid": pid, "title": title, "new": new})

    def check(db, state, goal, answer):
        pair = _changed_post(db, goal)
        ok = pair is not None and pair[1][3] == goal["new"] and pair[1][4] == pair[0][4]
        return _result(ok, answer)

    return Template("edit-post-title", "change", sample, check,
                    _edit_expert(lambda view, goal: fill_then(view, [("p-title", goal["new"])], "#p-submit")))


def append_to_post() -> Template:
    def sample(db, rng):
        pid, title, u = _own_post(db, rng)
        slug = db.execute("SELECT f.slug FROM posts p JOIN forums f ON f.id=p.forum_id WHERE p.id=?", (pid,)).fetchone()[0]
        line = "Edit: " + _text(SENTENCES[int(rng.integers(len(SENTENCES)))], rng, slug)
        body = db.execute("SELECT body FROM posts WHERE id=?", (pid,)).fetchone()[0]
        return (f'Add the line "{line}" at the end of your post "{title}" (keep the rest of the text).' + _login_note(u),
                {**_creds(u), "pid": pid, "title": title, "line": line, "body": body})

    def check(db, state, goal, answer):
        pair = _changed_post(db, goal)
        ok = (pair is not None and pair[1][3] == pair[0][3] and pair[1][4].startswith(pair[0][4].strip())
              and pair[1][4].rstrip().endswith(goal["line"])
              and len(pair[1][4]) <= len(pair[0][4]) + len(goal["line"]) + 4)
        return _result(ok, answer)

    return Template("append-to-post", "change", sample, check, _edit_expert(
        lambda view, goal: fill_then(view, [("p-body", goal["body"] + "\n" + goal["line"])], "#p-submit")))


def delete_post() -> Template:
    def sample(db, rng):
        pid, title, u = _own_post(db, rng)
        return f'Delete your post "{title}".' + _login_note(u), {**_creds(u), "pid": pid, "title": title}

    def check(db, state, goal, answer):
        ch = _only(db, {"posts", "comments"})
        n_comments = db.execute("SELECT COUNT(*) FROM seed.comments WHERE post_id=?", (goal["pid"],)).fetchone()[0]
        ok = (bool(ch) and not ch["posts"][0] and [r[0] for r in ch["posts"][1]] == [goal["pid"]]
              and not ch.get("comments", ([], []))[0] and len(ch.get("comments", ([], []))[1]) == n_comments)
        return _result(ok, answer)

    def expert(view, goal):
        step = login(view, goal) or go_post(view, goal["pid"], goal["title"])
        return step or act("click", view.bid("#delete"))

    return Template("delete-post", "change", sample, check, expert)


# ---------------------------------------------------------------- subscriptions and profile
def subscription(subscribe: bool) -> Template:
    def sample(db, rng):
        fid, slug, fname = _forum(db, rng)
        cond = "NOT EXISTS" if subscribe else "EXISTS"
        u = _user(db, rng, f"{cond} (SELECT 1 FROM subscriptions s WHERE s.user_id=u.id AND s.forum_id={fid})")
        word = "Subscribe to" if subscribe else "Unsubscribe from"
        return f"{word} the {fname} subforum." + _login_note(u), {**_creds(u), "fid": fid, "slug": slug}

    def check(db, state, goal, answer):
        ch = _only(db, {"subscriptions"})
        want = [(goal["uid"], goal["fid"])]
        ok = bool(ch) and (ch["subscriptions"] == (want, []) if subscribe else ch["subscriptions"] == ([], want))
        return _result(ok, answer)

    def expert(view, goal):
        step = login(view, goal) or go_forum(view, goal["slug"])
        return step or act("click", view.bid("#subscribe"))

    return Template("subscribe" if subscribe else "unsubscribe", "change", sample, check, expert)


def update_bio() -> Template:
    def sample(db, rng):
        u = _user(db, rng)
        slug = _forum(db, rng)[1]
        bio = _text(BIOS[int(rng.integers(len(BIOS)))], rng, slug)
        return f'Set your profile bio to "{bio}".' + _login_note(u), {**_creds(u), "bio": bio}

    def check(db, state, goal, answer):
        ch = _only(db, {"users"})
        ok = False
        if ch and len(ch["users"][0]) == 1 and len(ch["users"][1]) == 1:
            new, old = ch["users"][0][0], ch["users"][1][0]
            ok = new[0] == goal["uid"] and new[5] == goal["bio"] and new[:5] == old[:5]
        return _result(ok, answer)

    def expert(view, goal):
        step = login(view, goal)
        if step:
            return step
        if path_of(view) != "/account":
            return act("click", view.bid('header nav.user a[href$="/account"]'))
        return fill_then(view, [("ac-bio", goal["bio"])], "#ac-save")

    return Template("update-bio", "change", sample, check, expert)


CHANGE_TEMPLATES = [create_post(), comment(False), comment(True), vote_post(1), vote_post(-1), upvote_comment(),
                    edit_title(), append_to_post(), delete_post(), subscription(True), subscription(False),
                    update_bio()]
