"""The shop's seed database, generated deterministically (numpy ``default_rng(seed)``) into SQLite.

Tables (all ids 1-based):

* ``categories(id, slug, name, parent)``: 7 departments and their product types (``parent`` NULL for a department).
* ``products(id, name, brand, category_id, price_cents, rating, n_reviews, description, stock)``; ``rating`` is the
  mean review rating rounded to one decimal (0 with no reviews).
* ``product_attributes(product_id, attribute)``: 2-3 features from the type's pool ("waterproof", "organic"...).
* ``product_options(product_id, kind, value)``: ``kind`` ``size`` / ``color`` / ``pack``.
* ``reviews(id, product_id, user_id, rating, title, body)``.
* ``users(id, email, password, name, address, city, zip)``; ``orders(id, user_id, status, total_cents, name,
  address, city, zip, placed)``; ``order_items(order_id, product_id, size, color, qty, price_cents)``.
* ``cart_items(session_id, product_id, size, color, qty)``; ``sessions(id, user_id)``.

Content is drawn from word tables below (brands, product types, features, review sentences), never placeholder
text. With the default ``n_products=5000`` there are about 20,000 reviews, 300 customers and 900 past orders.
"""

from __future__ import annotations

import sqlite3

import numpy as np

#: department -> [(type slug, type name, base price in dollars, options kind, feature pool)]
CATALOG: dict[str, list[tuple[str, str, float, str, tuple[str, ...]]]] = {
    "Clothing": [
        ("t-shirts", "T-Shirt", 18, "apparel", ("organic cotton", "machine washable", "moisture wicking", "relaxed fit", "crew neck")),
        ("hoodies", "Hoodie", 42, "apparel", ("fleece lined", "machine washable", "zip front", "relaxed fit", "kangaroo pocket")),
        ("jeans", "Jeans", 55, "apparel", ("stretch denim", "slim fit", "high waist", "machine washable", "button fly")),
        ("rain-jackets", "Rain Jacket", 78, "apparel", ("waterproof", "packable", "breathable", "adjustable hood", "taped seams")),
        ("dresses", "Dress", 48, "apparel", ("midi length", "machine washable", "pockets", "wrinkle resistant", "lined")),
    ],
    "Shoes": [
        ("running-shoes", "Running Shoes", 85, "shoes", ("lightweight", "breathable mesh", "cushioned", "non-slip", "reflective")),
        ("hiking-boots", "Hiking Boots", 120, "shoes", ("waterproof", "ankle support", "non-slip", "leather", "insulated")),
        ("sandals", "Sandals", 35, "shoes", ("adjustable straps", "arch support", "quick drying", "lightweight", "cork footbed")),
        ("sneakers", "Sneakers", 65, "shoes", ("canvas", "memory foam", "slip on", "lightweight", "vegan leather")),
    ],
    "Home & Kitchen": [
        ("coffee-makers", "Coffee Maker", 60, "color", ("programmable", "stainless steel", "auto shut-off", "bpa free", "thermal carafe")),
        ("blenders", "Blender", 70, "color", ("dishwasher safe", "bpa free", "variable speed", "glass jar", "quiet motor")),
        ("throw-pillows", "Throw Pillow", 22, "color", ("removable cover", "machine washable", "hypoallergenic", "linen blend", "down alternative")),
        ("bath-towels", "Bath Towel Set", 32, "color", ("100% cotton", "quick drying", "extra absorbent", "machine washable", "oversized")),
        ("frying-pans", "Frying Pan", 38, "color", ("non-stick", "induction ready", "oven safe", "dishwasher safe", "cast iron")),
    ],
    "Electronics": [
        ("earbuds", "Wireless Earbuds", 59, "color", ("noise cancelling", "water resistant", "long battery life", "fast charging", "bluetooth 5.3")),
        ("speakers", "Bluetooth Speaker", 45, "color", ("waterproof", "long battery life", "bass boost", "portable", "built-in microphone")),
        ("phone-cases", "Phone Case", 16, "color", ("shockproof", "slim", "wireless charging compatible", "raised edges", "recycled plastic")),
        ("chargers", "USB-C Charger", 25, "pack", ("fast charging", "foldable plug", "dual port", "compact", "overheat protection")),
        ("smartwatches", "Smartwatch", 130, "color", ("heart rate monitor", "gps", "water resistant", "sleep tracking", "long battery life")),
    ],
    "Beauty": [
        ("moisturizers", "Face Moisturizer", 24, "pack", ("fragrance free", "cruelty free", "spf 30", "hyaluronic acid", "vegan")),
        ("shampoos", "Shampoo", 14, "pack", ("sulfate free", "cruelty free", "color safe", "vegan", "paraben free")),
        ("sunscreens", "Sunscreen", 15, "pack", ("spf 50", "water resistant", "reef safe", "fragrance free", "non-greasy")),
        ("lip-balms", "Lip Balm", 6, "pack", ("spf 15", "vegan", "beeswax", "unscented", "long lasting")),
    ],
    "Sports & Outdoors": [
        ("yoga-mats", "Yoga Mat", 30, "color", ("non-slip", "extra thick", "eco friendly", "carrying strap", "lightweight")),
        ("water-bottles", "Water Bottle", 20, "color", ("bpa free", "insulated", "leak proof", "dishwasher safe", "stainless steel")),
        ("tents", "Camping Tent", 150, "color", ("waterproof", "easy setup", "lightweight", "ventilated", "rainfly")),
        ("dumbbells", "Dumbbell Set", 75, "pack", ("adjustable", "rubber coated", "non-slip grip", "compact", "hex shape")),
        ("backpacks", "Hiking Backpack", 68, "color", ("water resistant", "padded straps", "hydration compatible", "lightweight", "laptop sleeve")),
    ],
    "Grocery": [
        ("ground-coffee", "Ground Coffee", 12, "pack", ("organic", "fair trade", "dark roast", "medium roast", "decaf")),
        ("green-tea", "Green Tea", 8, "pack", ("organic", "caffeine free", "loose leaf", "fair trade", "matcha")),
        ("trail-mix", "Trail Mix", 9, "pack", ("gluten free", "non-gmo", "high protein", "no added sugar", "vegan")),
        ("olive-oil", "Olive Oil", 16, "pack", ("extra virgin", "cold pressed", "organic", "non-gmo", "single origin")),
    ],
}
BRANDS = (
    "Northwind", "Alder & Co", "Bluepeak", "Cedarline", "Driftwood", "Evergreen", "Foxglove", "Granite Bay",
    "Harborview", "Ironleaf", "Juniper", "Kestrel", "Lakeside", "Maplecrest", "Nimbus", "Oakridge", "Pinecone",
    "Quarry", "Redfern", "Silverline", "Tidewater", "Upland", "Vireo", "Westbrook", "Yarrow", "Zephyr Goods",
)
SERIES = (
    "Classic", "Essential", "Trail", "Urban", "Summit", "Coastal", "Everyday", "Pro", "Lite", "Heritage", "Nova",
    "Aero", "Terra", "Breeze", "Atlas", "Prime", "Vista", "Pulse", "Haven", "Ridge",
)
COLORS = ("black", "white", "navy", "grey", "red", "forest green", "sky blue", "beige", "burgundy", "mustard")
APPAREL_SIZES = ("XS", "S", "M", "L", "XL", "XXL")
SHOE_SIZES = ("6", "7", "8", "9", "10", "11", "12")
PACKS = ("1 pack", "2 pack", "4 pack", "6 pack")
FIRST = (
    "Emma", "Liam", "Olivia", "Noah", "Ava", "Lucas", "Mia", "Ethan", "Sofia", "Mason", "Chloe", "Logan", "Grace",
    "Henry", "Zoe", "Jack", "Nora", "Owen", "Ruby", "Samuel", "Ivy", "Daniel", "Leah", "Caleb", "Maya", "Isaac",
)
LAST = (
    "Hughes", "Patel", "Nguyen", "Garcia", "Kim", "Okafor", "Larsen", "Rossi", "Dubois", "Silva", "Cohen", "Murphy",
    "Tanaka", "Kowalski", "Andersen", "Reyes", "Walsh", "Fischer", "Moreau", "Bennett",
)
STREETS = ("Oak Street", "Maple Avenue", "Harbor Road", "Cedar Lane", "Hillcrest Drive", "Mill Road", "Park Avenue")
CITIES = (("Portland", "97201"), ("Austin", "73301"), ("Denver", "80202"), ("Madison", "53703"), ("Raleigh", "27601"),
          ("Boise", "83702"), ("Tucson", "85701"), ("Albany", "12207"))
GOOD = (
    "Exactly as described and arrived quickly.", "Great value for the price.", "I use it every day and it still looks new.",
    "Solid build quality, would buy again.", "The colour matches the photos perfectly.", "Fits true to size.",
    "Bought a second one as a gift.", "Comfortable from the very first use.",
)
MID = (
    "Does the job, nothing special.", "Decent, but the packaging was damaged.", "Runs slightly small, order a size up.",
    "Good product, shipping took longer than expected.", "Fine for the price, a bit flimsy.",
)
BAD = (
    "Stopped working after two weeks.", "The colour was nothing like the picture.", "Poor stitching, returned it.",
    "Much smaller than I expected.", "Would not recommend, the quality is low.",
)
TITLES = {5: "Love it", 4: "Very good", 3: "It's okay", 2: "Disappointing", 1: "Not worth it"}
STATUSES = ("delivered", "delivered", "delivered", "shipped", "processing", "cancelled")

SCHEMA = """
CREATE TABLE categories(id INTEGER PRIMARY KEY, slug TEXT UNIQUE, name TEXT, parent INTEGER);
CREATE TABLE products(id INTEGER PRIMARY KEY, name TEXT UNIQUE, brand TEXT, category_id INTEGER, price_cents INTEGER,
  rating REAL, n_reviews INTEGER, description TEXT, stock INTEGER);
CREATE TABLE product_attributes(product_id INTEGER, attribute TEXT);
CREATE TABLE product_options(product_id INTEGER, kind TEXT, value TEXT);
CREATE TABLE users(id INTEGER PRIMARY KEY, email TEXT UNIQUE, password TEXT, name TEXT, address TEXT, city TEXT, zip TEXT);
CREATE TABLE reviews(id INTEGER PRIMARY KEY, product_id INTEGER, user_id INTEGER, rating INTEGER, title TEXT, body TEXT);
CREATE TABLE orders(id INTEGER PRIMARY KEY, user_id INTEGER, status TEXT, total_cents INTEGER, name TEXT, address TEXT,
  city TEXT, zip TEXT, placed TEXT);
CREATE TABLE order_items(order_id INTEGER, product_id INTEGER, size TEXT, color TEXT, qty INTEGER, price_cents INTEGER);
CREATE TABLE cart_items(session_id TEXT, product_id INTEGER, size TEXT, color TEXT, qty INTEGER);
CREATE TABLE sessions(id TEXT PRIMARY KEY, user_id INTEGER);
CREATE INDEX ix_pa ON product_attributes(product_id);
CREATE INDEX ix_po ON product_options(product_id);
CREATE INDEX ix_rv ON reviews(product_id);
CREATE INDEX ix_pc ON products(category_id);
CREATE INDEX ix_oi ON order_items(order_id);
"""


def build(conn: sqlite3.Connection, n_products: int = 5000, seed: int = 0) -> None:
    """Fill an empty connection with the seed data (same ``n_products`` and ``seed`` -> the same database)."""
    rng = np.random.default_rng(seed)
    conn.executescript(SCHEMA)
    types = []
    cid = 0
    for dept, entries in CATALOG.items():
        cid += 1
        dept_id = cid
        conn.execute("INSERT INTO categories VALUES (?,?,?,NULL)", (dept_id, dept.lower().replace(" & ", "-").replace(" ", "-"), dept))
        for slug, name, base, kind, feats in entries:
            cid += 1
            conn.execute("INSERT INTO categories VALUES (?,?,?,?)", (cid, slug, name, dept_id))
            types.append((cid, name, base, kind, feats))
    users = []
    for uid in range(1, 301):
        first, last = FIRST[int(rng.integers(len(FIRST)))], LAST[int(rng.integers(len(LAST)))]
        city, zipc = CITIES[int(rng.integers(len(CITIES)))]
        email = f"{first.lower()}.{last.lower()}{uid}@example.com"
        users.append((uid, email, f"{first.lower()}-{100 + uid}", f"{first} {last}",
                      f"{int(rng.integers(1, 999))} {STREETS[int(rng.integers(len(STREETS)))]}", city, zipc))
    conn.executemany("INSERT INTO users VALUES (?,?,?,?,?,?,?)", users)
    names: set[str] = set()
    products, attrs, opts, reviews = [], [], [], []
    rid = 0
    for pid in range(1, n_products + 1):
        cat, tname, base, kind, feats = types[int(rng.integers(len(types)))]
        brand = BRANDS[int(rng.integers(len(BRANDS)))]
        series = SERIES[int(rng.integers(len(SERIES)))]
        name = f"{brand} {series} {tname}"
        k = 2
        while name in names:
            name = f"{brand} {series} {tname} {k}"
            k += 1
        names.add(name)
        price = int(round(base * float(rng.lognormal(0, 0.35)) * 100)) // 100 * 100 + 99
        chosen = sorted(rng.choice(len(feats), size=int(rng.integers(2, 4)), replace=False).tolist())
        for i in chosen:
            attrs.append((pid, feats[i]))
        colors = [COLORS[i] for i in sorted(rng.choice(len(COLORS), size=int(rng.integers(2, 6)), replace=False))]
        if kind in ("apparel", "shoes", "color"):
            opts += [(pid, "color", c) for c in colors]
        if kind == "apparel":
            lo = int(rng.integers(0, 2))
            opts += [(pid, "size", s) for s in APPAREL_SIZES[lo: lo + int(rng.integers(4, 6))]]
        elif kind == "shoes":
            opts += [(pid, "size", s) for s in SHOE_SIZES[int(rng.integers(0, 2)):]]
        elif kind == "pack":
            opts += [(pid, "size", s) for s in PACKS[: int(rng.integers(2, 5))]]
        quality = float(rng.normal(3.9, 0.7))
        n_rev = int(rng.poisson(4))
        total = 0
        for _ in range(n_rev):
            rid += 1
            r = int(np.clip(round(quality + rng.normal(0, 0.9)), 1, 5))
            pool = GOOD if r >= 4 else MID if r == 3 else BAD
            body = " ".join(pool[int(i)] for i in rng.choice(len(pool), size=2, replace=False))
            reviews.append((rid, pid, int(rng.integers(1, 301)), r, TITLES[r], body))
            total += r
        rating = round(total / n_rev, 1) if n_rev else 0.0
        feat_text = ", ".join(feats[i] for i in chosen)
        desc = (f"The {name} from {brand} is part of the {series} line: {feat_text}. "
                f"{'Available in ' + ', '.join(colors) + '.' if kind != 'pack' else 'Sold in multi-packs.'}")
        products.append((pid, name, brand, cat, price, rating, n_rev, desc, int(rng.integers(0, 60))))
    conn.executemany("INSERT INTO products VALUES (?,?,?,?,?,?,?,?,?)", products)
    conn.executemany("INSERT INTO product_attributes VALUES (?,?)", attrs)
    conn.executemany("INSERT INTO product_options VALUES (?,?,?)", opts)
    conn.executemany("INSERT INTO reviews VALUES (?,?,?,?,?,?)", reviews)
    orders, items = [], []
    for oid in range(1, 901):
        uid = int(rng.integers(1, 301))
        u = users[uid - 1]
        total = 0
        for pid in rng.choice(n_products, size=int(rng.integers(1, 4)), replace=False):
            p = products[int(pid)]
            qty = int(rng.integers(1, 3))
            items.append((oid, p[0], None, None, qty, p[4]))
            total += qty * p[4]
        day = 1 + (oid * 7) % 28
        month = 1 + oid * 12 // 901
        orders.append((oid, uid, STATUSES[int(rng.integers(len(STATUSES)))], total, u[3], u[4], u[5], u[6],
                       f"2024-{month:02d}-{day:02d}"))
    conn.executemany("INSERT INTO orders VALUES (?,?,?,?,?,?,?,?,?)", orders)
    conn.executemany("INSERT INTO order_items VALUES (?,?,?,?,?,?)", items)
    conn.commit()
