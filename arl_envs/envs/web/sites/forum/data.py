"""The forum's seed database, generated deterministically (numpy ``default_rng(seed)``) into SQLite.

Tables (all ids 1-based):

* ``forums(id, slug, name, description, moderator_id)``: 12 subforums on everyday topics.
* ``users(id, username, email, password, joined, bio)``; a user's karma is computed (sum of the scores of their
  posts and comments), not stored.
* ``posts(id, forum_id, user_id, title, body, score, created, edited)``: ``created`` is ``YYYY-MM-DD HH:MM``, ids
  increase with time; ``edited`` is NULL or the time of the last edit. Titles are unique.
* ``comments(id, post_id, user_id, parent_id, body, score, created)``: ``parent_id`` NULL for a top-level comment.
* ``votes(user_id, post_id, comment_id, value)``: one row per vote a user cast (``value`` +1/-1; exactly one of
  ``post_id`` / ``comment_id`` set); scores already include them.
* ``subscriptions(user_id, forum_id)``; ``sessions(id, user_id)``.

Text comes from per-topic vocabularies (nouns, activities, problems) poured into sentence templates, never
placeholder text. With the default ``n_posts=2000`` there are about 7,000 comments and 400 users.
"""

from __future__ import annotations

import sqlite3

import numpy as np

#: slug -> (name, description, nouns, activities, problems)
TOPICS: dict[str, tuple[str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "cooking": ("Cooking", "Recipes, techniques and kitchen gear.",
                ("cast iron skillet", "sourdough starter", "chef's knife", "stock pot", "rice cooker", "pizza stone",
                 "spice rack", "dutch oven", "stand mixer", "wok"),
                ("baking bread", "meal prepping", "making stock", "sharpening knives", "fermenting vegetables"),
                ("keeps sticking", "turns out bland", "smells burnt", "goes flat overnight", "cracks in the oven")),
    "cycling": ("Cycling", "Road, gravel and commuting by bike.",
                ("gravel bike", "chain", "rear derailleur", "tubeless tyre", "bike lock", "saddle", "cargo bike",
                 "cycling computer", "pannier rack", "disc brake"),
                ("commuting by bike", "climbing hills", "fixing flats", "riding in the rain", "touring with bags"),
                ("squeaks on every turn", "keeps slipping", "loses air overnight", "rubs the frame", "feels sluggish")),
    "gardening": ("Gardening", "Vegetables, flowers and everything that grows.",
                  ("tomato plant", "raised bed", "compost heap", "rose bush", "herb spiral", "greenhouse",
                   "apple tree", "rain barrel", "seed tray", "lawn"),
                  ("starting seeds indoors", "pruning fruit trees", "composting", "growing garlic", "saving seeds"),
                  ("has yellow leaves", "is covered in aphids", "won't flower", "wilts by noon", "rots at the base")),
    "home-repair": ("Home Repair", "Fixing, building and maintaining the house.",
                    ("leaky faucet", "drywall patch", "circuit breaker", "water heater", "deck stain", "door hinge",
                     "window seal", "ceiling fan", "tile grout", "sump pump"),
                    ("painting a room", "replacing a toilet", "insulating the attic", "laying laminate",
                     "fixing a fence"),
                    ("drips all night", "trips every evening", "makes a grinding noise", "lets in a draft",
                     "cracked again")),
    "photography": ("Photography", "Cameras, lenses, editing and critique.",
                    ("prime lens", "mirrorless body", "tripod", "polarising filter", "film camera", "flash unit",
                     "camera bag", "light meter", "macro lens", "editing monitor"),
                    ("shooting street photos", "editing raw files", "shooting portraits", "night photography",
                     "developing film"),
                    ("focuses too slowly", "shows a colour cast", "drains the battery", "has dust on the sensor",
                     "looks soft in the corners")),
    "personal-finance": ("Personal Finance", "Budgets, saving, debt and investing.",
                         ("emergency fund", "index fund", "credit card", "budget spreadsheet", "savings account",
                          "car loan", "retirement account", "mortgage", "side income", "tax return"),
                         ("paying off debt", "tracking expenses", "saving for a house", "investing monthly",
                          "negotiating a raise"),
                         ("keeps growing", "doesn't add up", "got rejected", "has hidden fees", "eats my whole budget")),
    "travel": ("Travel", "Trip reports, itineraries and packing lists.",
               ("carry-on bag", "rail pass", "travel insurance", "hostel", "night train", "city pass", "hiking map",
                "travel adapter", "rental car", "packing cube"),
               ("backpacking on a budget", "travelling by train", "planning a road trip", "travelling solo",
                "packing light"),
               ("got cancelled", "cost twice the estimate", "was overbooked", "arrived late", "was hard to find")),
    "board-games": ("Board Games", "Strategy, party games and game nights.",
                    ("deck builder", "worker placement game", "card sleeve", "game shelf", "cooperative game",
                     "dice tower", "expansion", "party game", "legacy campaign", "trading game"),
                    ("teaching new players", "hosting game nights", "playing solo", "painting miniatures",
                     "organising a tournament"),
                    ("drags on too long", "feels unbalanced", "has a confusing rulebook", "is missing pieces",
                     "falls flat with two players")),
    "programming": ("Programming", "Code, tools and careers in software.",
                    ("text editor", "unit test", "database index", "build script", "web framework", "type checker",
                     "git branch", "code review", "docker image", "regular expression"),
                    ("learning a new language", "writing tests", "refactoring old code", "debugging memory leaks",
                     "preparing for interviews"),
                    ("runs too slowly", "fails only in CI", "breaks on Windows", "leaks memory", "times out")),
    "running": ("Running", "Training plans, races and shoes.",
                ("trail shoe", "running watch", "foam roller", "hydration vest", "race bib", "treadmill",
                 "training plan", "compression sock", "headlamp", "energy gel"),
                ("training for a marathon", "running intervals", "running in winter", "increasing mileage",
                 "recovering from injury"),
                ("gives me blisters", "hurts my knee", "stopped tracking", "feels too heavy", "chafes badly")),
    "books": ("Books", "What we are reading and what to read next.",
              ("mystery novel", "short story collection", "audiobook", "book club pick", "library card",
               "e-reader", "poetry anthology", "memoir", "fantasy series", "history book"),
              ("reading before bed", "running a book club", "reading in another language", "re-reading classics",
               "keeping a reading journal"),
              ("drags in the middle", "has a weak ending", "was hard to get into", "disappointed me",
               "spoiled itself on the cover")),
    "pets": ("Pets", "Dogs, cats and the rest of the family.",
             ("dog harness", "cat tree", "litter box", "aquarium filter", "chew toy", "pet camera", "dog crate",
              "scratching post", "bird cage", "grooming brush"),
             ("crate training a puppy", "introducing a second cat", "teaching recall", "trimming claws",
              "adopting a rescue"),
             ("gets ignored", "smells after a day", "broke within a week", "scares the cat", "is too noisy")),
}
TITLE_PATTERNS = (
    "Best {noun} for a beginner?", "How do I stop my {noun} from getting worse? It {problem}",
    "My {noun} {problem} - any ideas?", "{Noun} or {noun2}: which would you pick?",
    "Tips for {activity} with a {adj} {noun}", "Is a {adj} {noun} worth the money?",
    "What I learned from a year of {activity}", "Finally upgraded my {noun}", "First time {activity}: where to start?",
    "Recommendations for a {noun} under ${price}", "Why does my {adj} {noun} keep failing?",
    "Show and tell: my {adj} {noun}", "{Activity} on a tight schedule", "Unpopular opinion: the {noun} is overrated",
    "Weekly thread: {activity} questions", "Does anyone still use a {adj} {noun}?",
)
ADJECTIVES = ("cheap", "second-hand", "compact", "heavy-duty", "vintage", "budget", "premium", "lightweight",
              "homemade", "well-worn")
OPENERS = (
    "I have been {activity} for about {n} months now.", "Long time reader, first post here.",
    "Quick question for the people who know more than me.", "This has been bugging me all week.",
    "Some context: I am fairly new to {activity}.", "Following up on a thread from last month.",
)
MIDDLES = (
    "Last weekend I tried a {adj} {noun} and it {problem}.", "My {noun} {problem}, even after I cleaned it twice.",
    "I read that {activity} gets easier with a better {noun}, but I am not convinced.",
    "A friend swears by the {noun2}, but it costs about ${price}.",
    "I spent roughly {n} hours on {activity} this month and kept a log.",
    "The {noun} I bought {n} weeks ago already {problem}.",
)
CLOSERS = (
    "Any advice would be appreciated.", "What would you do in my place?", "Thanks in advance!",
    "Happy to share more details if that helps.", "Curious what everyone else thinks.",
    "I will post an update once I have tried your suggestions.",
)
COMMENTS = (
    "I had the same problem with my {noun}; a {adj} {noun2} fixed it for me.",
    "Have you tried {activity} a bit more slowly? It made a big difference for me.",
    "Agreed, the {noun} is the first thing I would look at.", "Great write-up, thanks for sharing the details.",
    "I would not spend more than ${price} on a {noun} until you know you like {activity}.",
    "Same here. Mine {problem} after about {n} weeks.", "Check the manual first, then ask the shop where you bought it.",
    "Honestly the {noun2} is the better choice for {activity}.", "This is the kind of post I joined this forum for.",
    "Could you post a photo? Hard to tell what is going on from the description.",
    "I switched to a {adj} {noun} last year and never looked back.", "Saving this thread for later.",
)
HANDLE_A = ("quiet", "sunny", "rusty", "brave", "lucky", "misty", "swift", "gentle", "clever", "amber", "silver",
            "mossy", "wild", "calm", "bold", "happy", "little", "crimson", "frosty", "golden")
HANDLE_B = ("fern", "otter", "kestrel", "maple", "pine", "badger", "heron", "willow", "fox", "sparrow", "cedar",
            "lynx", "birch", "wren", "comet", "pebble", "harbor", "meadow", "robin", "beacon")
BIOS = (
    "Weekend {activity} enthusiast.", "Here mostly to learn about {activity}.", "Proud owner of a {adj} {noun}.",
    "I answer questions about {activity} when I can.", "Lurker turned poster.", "",
)

SCHEMA = """
CREATE TABLE forums(id INTEGER PRIMARY KEY, slug TEXT UNIQUE, name TEXT, description TEXT, moderator_id INTEGER);
CREATE TABLE users(id INTEGER PRIMARY KEY, username TEXT UNIQUE, email TEXT, password TEXT, joined TEXT, bio TEXT);
CREATE TABLE posts(id INTEGER PRIMARY KEY, forum_id INTEGER, user_id INTEGER, title TEXT UNIQUE, body TEXT,
  score INTEGER, created TEXT, edited TEXT);
CREATE TABLE comments(id INTEGER PRIMARY KEY, post_id INTEGER, user_id INTEGER, parent_id INTEGER, body TEXT,
  score INTEGER, created TEXT);
CREATE TABLE votes(user_id INTEGER, post_id INTEGER, comment_id INTEGER, value INTEGER);
CREATE TABLE subscriptions(user_id INTEGER, forum_id INTEGER);
CREATE TABLE sessions(id TEXT PRIMARY KEY, user_id INTEGER);
CREATE INDEX ix_pf ON posts(forum_id);
CREATE INDEX ix_pu ON posts(user_id);
CREATE INDEX ix_cp ON comments(post_id);
CREATE INDEX ix_cu ON comments(user_id);
CREATE INDEX ix_vu ON votes(user_id);
"""


def stamp(minutes: int) -> str:
    """``YYYY-MM-DD HH:MM`` of ``minutes`` after midnight on January 1st, 2024 (30-day months, enough for ordering and display)."""
    day, rem = divmod(minutes, 24 * 60)
    month, dom = divmod(day, 30)
    return f"2024-{1 + month % 12:02d}-{1 + dom:02d} {rem // 60:02d}:{rem % 60:02d}"


def fill(template: str, rng: np.random.Generator, topic: tuple) -> str:
    _, _, nouns, acts, probs = topic
    i, j = (int(x) for x in rng.choice(len(nouns), size=2, replace=False))
    act_ = acts[int(rng.integers(len(acts)))]
    text = template.format(noun=nouns[i], noun2=nouns[j], Noun=nouns[i][0].upper() + nouns[i][1:], activity=act_,
                           Activity=act_[0].upper() + act_[1:], problem=probs[int(rng.integers(len(probs)))],
                           adj=ADJECTIVES[int(rng.integers(len(ADJECTIVES)))], n=int(rng.integers(2, 13)),
                           price=int(rng.integers(2, 40)) * 10)
    return text


def build(conn: sqlite3.Connection, n_posts: int = 2000, seed: int = 0) -> None:
    """Fill an empty connection with the seed data (same ``n_posts`` and ``seed`` -> the same database)."""
    rng = np.random.default_rng(seed)
    conn.executescript(SCHEMA)
    topics = list(TOPICS.items())
    n_users = max(50, n_posts // 5)
    users, names = [], set()
    for uid in range(1, n_users + 1):
        while True:
            name = f"{HANDLE_A[int(rng.integers(len(HANDLE_A)))]}_{HANDLE_B[int(rng.integers(len(HANDLE_B)))]}"
            if name in names:
                name += str(int(rng.integers(10, 100)))
            if name not in names:
                break
        names.add(name)
        t = topics[int(rng.integers(len(topics)))][1]
        users.append((uid, name, f"{name.replace('_', '.')}@example.org", f"{name.split('_')[1]}-{1000 + uid}",
                      stamp(int(rng.integers(0, 20 * 24 * 60)))[:10], fill(BIOS[int(rng.integers(len(BIOS)))], rng, t)))
    conn.executemany("INSERT INTO users VALUES (?,?,?,?,?,?)", users)
    forums = [(i + 1, slug, t[0], t[1], int(rng.integers(1, n_users + 1))) for i, (slug, t) in enumerate(topics)]
    conn.executemany("INSERT INTO forums VALUES (?,?,?,?,?)", forums)
    posts, comments, votes, titles = [], [], [], set()
    minute = 25 * 24 * 60  # posts start after every user joined
    cid = 0
    for pid in range(1, n_posts + 1):
        f = int(rng.integers(len(topics)))
        topic = topics[f][1]
        for _ in range(50):
            title = fill(TITLE_PATTERNS[int(rng.integers(len(TITLE_PATTERNS)))], rng, topic)
            if title not in titles:
                break
        k = 2
        while title in titles:  # rare: every draw collided
            title = f"{title.rstrip('?')} (follow-up {k})"
            k += 1
        titles.add(title)
        body = " ".join([fill(OPENERS[int(rng.integers(len(OPENERS)))], rng, topic)]
                        + [fill(MIDDLES[int(i)], rng, topic) for i in rng.choice(len(MIDDLES), 2, replace=False)]
                        + [CLOSERS[int(rng.integers(len(CLOSERS)))]])
        minute += int(rng.integers(20, 200))
        author = int(rng.integers(1, n_users + 1))
        score = int(np.clip(rng.lognormal(1.6, 1.0), 0, 400)) - int(rng.integers(0, 4))
        posts.append([pid, f + 1, author, title, body, score, stamp(minute), None])
        first = cid + 1
        t = minute
        for _ in range(int(rng.poisson(3.5))):
            cid += 1
            t += int(rng.integers(3, 240))
            parent = None
            if cid > first and rng.random() < 0.35:
                parent = int(rng.integers(first, cid))
            comments.append([cid, pid, int(rng.integers(1, n_users + 1)), parent,
                             fill(COMMENTS[int(rng.integers(len(COMMENTS)))], rng, topic),
                             int(np.clip(rng.lognormal(0.8, 0.9), 0, 200)) - int(rng.integers(0, 3)), stamp(t)])
    # users' own recorded votes (already counted in the scores above)
    for uid in range(1, n_users + 1):
        for pid in rng.choice(n_posts, size=int(rng.integers(0, 6)), replace=False):
            votes.append((uid, int(pid) + 1, None, 1 if rng.random() < 0.85 else -1))
    subs = []
    for uid in range(1, n_users + 1):
        for f in rng.choice(len(topics), size=int(rng.integers(0, 4)), replace=False):
            subs.append((uid, int(f) + 1))
    conn.executemany("INSERT INTO posts VALUES (?,?,?,?,?,?,?,?)", posts)
    conn.executemany("INSERT INTO comments VALUES (?,?,?,?,?,?,?)", comments)
    conn.executemany("INSERT INTO votes VALUES (?,?,?,?)", votes)
    conn.executemany("INSERT INTO subscriptions VALUES (?,?)", subs)
    conn.commit()
