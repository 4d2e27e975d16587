"""The retail domain: users, orders, products with variants, payment methods; 13 tools; 60 task templates.

Templates are the rows of :data:`INTENTS` crossed with how the user authenticates (:data:`AUTH`: e-mail, or name
and zip code) and, for order intents, how the user names the order (:data:`REFS`: its id, or the product in it).
"""

from __future__ import annotations

import random
from typing import Any, Callable

from pydantic import BaseModel, Field

from arl_envs.core.tools import Tool
from arl_envs.envs.tooluse.domain import Domain, Fact, TaskSpec, ToolError, Write, pick

#: Product catalogue: name -> (option name, values) axes; every combination is a variant.
PRODUCTS: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = (
    ("t-shirt", (("color", ("red", "blue", "black")), ("size", ("S", "M", "L")))),
    ("running shoes", (("color", ("white", "grey")), ("size", ("8", "9", "10")))),
    ("backpack", (("color", ("green", "black", "navy")), ("capacity", ("20L", "30L")))),
    ("water bottle", (("material", ("steel", "glass", "plastic")), ("capacity", ("500ml", "1L")))),
    ("desk lamp", (("color", ("white", "black")), ("bulb", ("LED", "halogen")))),
    ("headphones", (("type", ("over-ear", "in-ear")), ("color", ("black", "silver", "blue")))),
    ("coffee maker", (("capacity", ("4 cups", "8 cups", "12 cups")), ("color", ("black", "red")))),
    ("yoga mat", (("thickness", ("4mm", "6mm")), ("color", ("purple", "teal", "grey")))),
)
FIRST = ("Ava", "Liam", "Mia", "Noah", "Zoe", "Omar", "Yuki", "Sofia", "Ivan", "Lena", "Raj", "Emma")
LAST = ("Garcia", "Kim", "Novak", "Smith", "Rossi", "Khan", "Silva", "Muller", "Lopez", "Chen")
STREETS = ("Oak Street", "Maple Avenue", "Pine Road", "Elm Court", "Cedar Lane", "Birch Way")
CITIES = (("Austin", "TX"), ("Denver", "CO"), ("Seattle", "WA"), ("Boston", "MA"), ("Phoenix", "AZ"))
REASONS = ("no longer needed", "ordered by mistake")
#: Order intents (each crossed with AUTH and REFS) and account intents (crossed with AUTH): name -> kind.
ORDER_INTENTS = {
    "cancel_pending": "write", "modify_order_address": "write", "modify_items_1": "write",
    "modify_items_2": "write", "return_1": "write", "return_2": "write", "exchange_1": "write",
    "exchange_2": "write", "cancel_and_return": "write", "lookup_status": "lookup", "lookup_total": "lookup",
    "trap_cancel_delivered": "refuse", "trap_return_pending": "refuse", "trap_other_user_order": "refuse",
    "trap_compensation": "transfer",
}
ACCOUNT_INTENTS = {"modify_user_address": "write", "lookup_variant_price": "lookup"}
AUTH = ("email", "name_zip")
REFS = ("id", "product")

POLICY = """You are a customer-service agent of an online shop. Policy:
- Authenticate the user first, by e-mail (find_user_id_by_email) or by first name, last name and zip code
  (find_user_id_by_name_zip), even if they give you a user id. Act only on that user's account and orders.
- Before any action that changes the database (cancel, modify, return, exchange, address update), list the action's
  details (order id, item ids, new item ids, payment method id, address or reason) and get an explicit yes from the
  user: ask them to confirm (yes/no). A write without authentication or confirmation ends the conversation.
- Only pending orders can be cancelled or modified; an order's items can be modified once. Only delivered orders
  can be returned or exchanged. Cancellation reasons: 'no longer needed' or 'ordered by mistake'.
- A new item must be an available variant of the same product. Refunds and price differences go to the original
  payment method or a gift card of the user.
- Refuse requests the policy forbids and say that you cannot do them. Transfer to a human agent
  (transfer_to_human) only when the user asks for something outside your tools, such as compensation.
- Talk to the user with respond; one tool call per turn."""


class EmailArgs(BaseModel):
    email: str = Field(description="The user's e-mail address.")


class NameZipArgs(BaseModel):
    first_name: str = Field(description="First name.")
    last_name: str = Field(description="Last name.")
    zip: str = Field(description="Zip code, 5 digits.", pattern=r"^\d{5}$")


class UserArgs(BaseModel):
    user_id: str = Field(description="User id, e.g. 'ava_kim_1234'.")


class OrderArgs(BaseModel):
    order_id: str = Field(description="Order id, e.g. '#W1234567'.", pattern=r"^#W\d{7}$")


class ProductArgs(BaseModel):
    product_id: str = Field(description="Product id, e.g. 'P03'.")


class NoArgs(BaseModel):
    pass


class CancelArgs(OrderArgs):
    reason: str = Field(description="'no longer needed' or 'ordered by mistake'.")


class AddressArgs(BaseModel):
    address1: str = Field(description="Street and number.")
    city: str
    state: str = Field(pattern=r"^[A-Z]{2}$")
    zip: str = Field(pattern=r"^\d{5}$")


class OrderAddressArgs(OrderArgs, AddressArgs):
    pass


class UserAddressArgs(UserArgs, AddressArgs):
    pass


class ItemsArgs(OrderArgs):
    item_ids: list[str] = Field(description="Item ids of the order.", min_length=1)
    payment_method_id: str = Field(description="Payment method for the refund / price difference.")


class SwapArgs(ItemsArgs):
    new_item_ids: list[str] = Field(description="New item ids, one per item id, same product.", min_length=1)


def _user(db: dict[str, Any], user_id: str) -> dict[str, Any]:
    if user_id not in db["users"]:
        raise ToolError(f"user {user_id!r} not found")
    return db["users"][user_id]


def _order(db: dict[str, Any], order_id: str, status: str | None = None) -> dict[str, Any]:
    if order_id not in db["orders"]:
        raise ToolError(f"order {order_id!r} not found")
    order = db["orders"][order_id]
    if status is not None and order["status"] != status:
        raise ToolError(f"order {order_id} is {order['status']}, not {status}")
    return order


def _variant(db: dict[str, Any], item_id: str) -> tuple[str, dict[str, Any]]:
    for pid, product in db["products"].items():
        if item_id in product["variants"]:
            return pid, product["variants"][item_id]
    raise ToolError(f"item {item_id!r} not found")


def _payment(db: dict[str, Any], order: dict[str, Any], pm_id: str, allow_gift: bool = True) -> dict[str, Any]:
    methods = db["users"][order["user_id"]]["payment_methods"]
    if pm_id not in methods:
        raise ToolError(f"payment method {pm_id!r} is not one of the user's")
    if pm_id != order["payment_method_id"] and not (allow_gift and methods[pm_id]["source"] == "gift_card"):
        raise ToolError("money goes to the original payment method or a gift card of the user")
    return methods[pm_id]


def _items(order: dict[str, Any], item_ids: list[str]) -> None:
    have = [i["item_id"] for i in order["items"]]
    for item_id in item_ids:
        if have.count(item_id) < item_ids.count(item_id):
            raise ToolError(f"item {item_id!r} is not in order {order['order_id']}")


def _swap(db: dict[str, Any], order: dict[str, Any], old: list[str], new: list[str], pm_id: str) -> float:
    if len(old) != len(new):
        raise ToolError("item_ids and new_item_ids must have the same length")
    _items(order, old)
    diff = 0.0
    for a, b in zip(old, new):
        pa, va = _variant(db, a)
        pb, vb = _variant(db, b)
        if pa != pb:
            raise ToolError(f"new item {b} is not a variant of the same product as {a}")
        if a == b or not vb["available"]:
            raise ToolError(f"new item {b} is not an available different variant")
        diff += vb["price"] - va["price"]
    pm = _payment(db, order, pm_id)
    if pm["source"] == "gift_card" and pm["balance"] < diff:
        raise ToolError("the gift card balance does not cover the price difference")
    return round(diff, 2)


def find_user_id_by_email(db: dict[str, Any], a: dict[str, Any]) -> str:
    for uid, u in db["users"].items():
        if u["email"] == a["email"].strip().lower():
            return uid
    raise ToolError("no user with this e-mail")


def find_user_id_by_name_zip(db: dict[str, Any], a: dict[str, Any]) -> str:
    for uid, u in db["users"].items():
        if (u["first_name"].lower(), u["last_name"].lower(), u["address"]["zip"]) == (
            a["first_name"].strip().lower(), a["last_name"].strip().lower(), a["zip"]
        ):
            return uid
    raise ToolError("no user with this name and zip code")


def get_user_details(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    return _user(db, a["user_id"])


def get_order_details(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    return _order(db, a["order_id"])


def get_product_details(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    if a["product_id"] not in db["products"]:
        raise ToolError(f"product {a['product_id']!r} not found")
    return db["products"][a["product_id"]]


def list_all_product_types(db: dict[str, Any], a: dict[str, Any]) -> dict[str, str]:
    return {p["name"]: pid for pid, p in db["products"].items()}


def cancel_pending_order(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    order = _order(db, a["order_id"], "pending")
    if a["reason"] not in REASONS:
        raise ToolError(f"reason must be one of {REASONS}")
    pm = db["users"][order["user_id"]]["payment_methods"][order["payment_method_id"]]
    if pm["source"] == "gift_card":
        pm["balance"] = round(pm["balance"] + sum(i["price"] for i in order["items"]), 2)
    order.update(status="cancelled", cancel_reason=a["reason"])
    return order


def modify_pending_order_address(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    order = _order(db, a["order_id"], "pending")
    order["address"] = {k: a[k] for k in ("address1", "city", "state", "zip")}
    return order


def modify_user_address(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    user = _user(db, a["user_id"])
    user["address"] = {k: a[k] for k in ("address1", "city", "state", "zip")}
    return user


def modify_pending_order_items(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    order = _order(db, a["order_id"], "pending")
    if order.get("items_modified"):
        raise ToolError("this order's items were already modified once")
    diff = _swap(db, order, a["item_ids"], a["new_item_ids"], a["payment_method_id"])
    pm = db["users"][order["user_id"]]["payment_methods"][a["payment_method_id"]]
    if pm["source"] == "gift_card":
        pm["balance"] = round(pm["balance"] - diff, 2)
    todo = list(zip(a["item_ids"], a["new_item_ids"]))
    for item in order["items"]:
        for k, (old, new) in enumerate(todo):
            if item["item_id"] == old:
                pid, v = _variant(db, new)
                item.update(item_id=new, price=v["price"], options=dict(v["options"]))
                todo.pop(k)
                break
    order["items_modified"] = True
    return order


def return_delivered_order_items(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    order = _order(db, a["order_id"], "delivered")
    _items(order, a["item_ids"])
    _payment(db, order, a["payment_method_id"])
    order.update(status="return requested", return_items=sorted(a["item_ids"]),
                 refund_payment_method_id=a["payment_method_id"])
    return order


def exchange_delivered_order_items(db: dict[str, Any], a: dict[str, Any]) -> dict[str, Any]:
    order = _order(db, a["order_id"], "delivered")
    diff = _swap(db, order, a["item_ids"], a["new_item_ids"], a["payment_method_id"])
    order.update(status="exchange requested", exchange_items=sorted(a["item_ids"]),
                 exchange_new_items=sorted(a["new_item_ids"]), exchange_price_difference=diff,
                 exchange_payment_method_id=a["payment_method_id"])
    return order


_TOOLS: tuple[tuple[str, str, type[BaseModel], Callable[[dict[str, Any], dict[str, Any]], Any]], ...] = (
    ("find_user_id_by_email", "Find a user id by e-mail (authenticates the user).", EmailArgs,
     find_user_id_by_email),
    ("find_user_id_by_name_zip", "Find a user id by first name, last name and zip (authenticates the user).",
     NameZipArgs, find_user_id_by_name_zip),
    ("get_user_details", "A user's profile: name, address, payment methods, order ids.", UserArgs, get_user_details),
    ("get_order_details", "An order: status, items (item ids, prices, options), payment, address.", OrderArgs,
     get_order_details),
    ("get_product_details", "A product and its variants (item ids, options, price, availability).", ProductArgs,
     get_product_details),
    ("list_all_product_types", "Product names and their product ids.", NoArgs, list_all_product_types),
    ("cancel_pending_order", "Cancel a pending order (refund to its payment method).", CancelArgs,
     cancel_pending_order),
    ("modify_pending_order_address", "Change the shipping address of a pending order.", OrderAddressArgs,
     modify_pending_order_address),
    ("modify_user_address", "Change the default address of a user.", UserAddressArgs, modify_user_address),
    ("modify_pending_order_items", "Swap items of a pending order for other variants of the same products "
     "(once per order).", SwapArgs, modify_pending_order_items),
    ("return_delivered_order_items", "Request the return of items of a delivered order.", ItemsArgs,
     return_delivered_order_items),
    ("exchange_delivered_order_items", "Request the exchange of items of a delivered order for other variants.",
     SwapArgs, exchange_delivered_order_items),
)

_ASK_ID = ("To verify your identity, could you give me your email address, or your first name, last name and zip "
           "code?")
_ID_WORDS = ("email", "identity", "verify", "zip code", "your name", "authenticate")
_ORDER_WORDS = ("which order", "order id", "order number")
_ITEM_WORDS = ("which item", "what item", "which product", "what would you like")
_PAY_WORDS = ("payment", "refund", "pay ")
_ADDR_WORDS = ("address",)
_REASON_WORDS = ("reason", "why")


def _opts(options: dict[str, str]) -> str:
    return ", ".join(f"{k} {v}" for k, v in options.items())


class RetailDomain(Domain):
    """Retail: 12 users with 4 orders each (2 pending, 2 delivered; products distinct within a user), 8 products
    with 4-9 variants, credit cards, gift cards and PayPal accounts."""

    name = "retail"
    policy = POLICY
    write_tools = frozenset({"cancel_pending_order", "modify_pending_order_address", "modify_user_address",
                             "modify_pending_order_items", "return_delivered_order_items",
                             "exchange_delivered_order_items"})

    def tools(self) -> list[Tool]:
        return [Tool(name, desc, args) for name, desc, args, _ in _TOOLS]

    def functions(self) -> dict[str, Callable[[dict[str, Any], dict[str, Any]], Any]]:
        return {name: fn for name, _, _, fn in _TOOLS}

    def templates(self) -> list[str]:
        out = [f"{i}.{a}.{r}" for i in ORDER_INTENTS for a in AUTH for r in REFS]
        return out + [f"{i}.{a}" for i in ACCOUNT_INTENTS for a in AUTH]

    # ------------------------------------------------------------------ database
    def make_db(self, rng: random.Random) -> dict[str, Any]:
        ids: set[int] = set()

        def uid(lo: int, hi: int) -> int:
            while (n := rng.randrange(lo, hi)) in ids:
                pass
            ids.add(n)
            return n

        products: dict[str, Any] = {}
        for k, (pname, axes) in enumerate(PRODUCTS):
            combos: list[dict[str, str]] = [{}]
            for axis, values in axes:
                combos = [{**c, axis: v} for c in combos for v in values]
            variants = {
                str(uid(10**9, 10**10)): {"options": c, "price": round(rng.uniform(15, 200), 2),
                                          "available": rng.random() < 0.8}
                for c in combos
            }
            for v in list(variants.values())[:2]:
                v["available"] = True
            products[f"P{k + 1:02d}"] = {"name": pname, "variants": variants}
        users: dict[str, Any] = {}
        orders: dict[str, Any] = {}
        names = rng.sample([(f, la) for f in FIRST for la in LAST], 12)
        for first, last in names:
            user_id = f"{first.lower()}_{last.lower()}_{uid(1000, 10000)}"
            city, state = rng.choice(CITIES)
            address = {"address1": f"{rng.randrange(1, 999)} {rng.choice(STREETS)}", "city": city, "state": state,
                       "zip": f"{uid(10000, 100000)}"}
            pms = {f"credit_card_{uid(10**6, 10**7)}": {"source": "credit_card", "last_four": f"{rng.randrange(10**4):04d}"}}
            if rng.random() < 0.6:
                pms[f"gift_card_{uid(10**6, 10**7)}"] = {"source": "gift_card", "balance": float(rng.randrange(400, 900))}
            if rng.random() < 0.5:
                pms[f"paypal_{uid(10**6, 10**7)}"] = {"source": "paypal"}
            pids = rng.sample(sorted(products), 8)
            order_ids = []
            for j, status in enumerate(("pending", "delivered", "pending", "delivered")):
                oid = f"#W{uid(10**6, 10**7)}"
                items = []
                for pid in pids[2 * j: 2 * j + 2]:
                    item_id, v = rng.choice(sorted(products[pid]["variants"].items()))
                    items.append({"item_id": item_id, "product_id": pid, "name": products[pid]["name"],
                                  "price": v["price"], "options": dict(v["options"])})
                orders[oid] = {"order_id": oid, "user_id": user_id, "status": status, "items": items,
                               "payment_method_id": rng.choice(sorted(pms)), "address": dict(address)}
                order_ids.append(oid)
            users[user_id] = {"first_name": first, "last_name": last, "email": f"{first}.{last}{rng.randrange(10, 99)}"
                              "@example.com".lower(), "address": address, "payment_methods": pms, "orders": order_ids}
        return {"users": users, "orders": orders, "products": products}

    def verified_user(self, name: str, args: dict[str, Any], result: Any) -> str | None:
        return result if name in ("find_user_id_by_email", "find_user_id_by_name_zip") else None

    def owner(self, db: dict[str, Any], name: str, args: dict[str, Any]) -> str | None:
        if "order_id" in args:
            order = db["orders"].get(args["order_id"])
            return None if order is None else order["user_id"]
        return args.get("user_id")

    # ------------------------------------------------------------------ tasks
    def instantiate(self, template: str, db: dict[str, Any], rng: random.Random) -> TaskSpec:
        intent, auth, ref = (template.split(".") + [""])[:3]
        kind = ORDER_INTENTS.get(intent) or ACCOUNT_INTENTS[intent]
        user_id = rng.choice(sorted(db["users"]))
        user = db["users"][user_id]
        full = f"{user['first_name']} {user['last_name']}"
        if auth == "email":
            id_fact = Fact("identity", _ID_WORDS, pick(rng, (f"My email is {user['email']}.",
                                                             f"Sure, it's {user['email']}.")))
            auth_call = ("find_user_id_by_email", {"email": user["email"]})
        else:
            id_fact = Fact("identity", _ID_WORDS, f"I don't remember which email I used. I'm {full}, zip code "
                           f"{user['address']['zip']}.")
            auth_call = ("find_user_id_by_name_zip", {"first_name": user["first_name"],
                                                      "last_name": user["last_name"], "zip": user["address"]["zip"]})
        facts = [id_fact]
        plan: list[tuple[str, dict[str, Any]]] = [("respond", {"message": _ASK_ID}), auth_call,
                                                   ("get_user_details", {"user_id": user_id})]
        orders = [db["orders"][o] for o in user["orders"]]
        pending = [o for o in orders if o["status"] == "pending"]
        delivered = [o for o in orders if o["status"] == "delivered"]

        def say(text: str) -> None:
            plan.append(("respond", {"message": text}))

        def order_fact(targets: list[dict[str, Any]], what: str) -> None:
            if ref == "id":
                ids = " and ".join(o["order_id"] for o in targets)
                text = pick(rng, (f"It's order {ids}.", f"The order number is {ids}.")) if len(targets) == 1 else (
                    f"The orders are {ids}.")
            else:
                text = " ".join(f"I don't have the order number; it's the order with the {o['items'][0]['name']} "
                                f"in it." for o in targets)
            facts.append(Fact("order", _ORDER_WORDS, text))
            say(f"Which order {what}? Please give me the order id, or describe it.")
            plan.extend(("get_order_details", {"order_id": o["order_id"]}) for o in targets)

        def swap_items(order: dict[str, Any], n: int) -> tuple[list[str], list[str], str]:
            old, new, words = [], [], []
            for item in order["items"][:n]:
                choices = [(i, v) for i, v in sorted(db["products"][item["product_id"]]["variants"].items())
                           if v["available"] and i != item["item_id"]]
                new_id, v = rng.choice(choices)
                old.append(item["item_id"])
                new.append(new_id)
                words.append(f"the {item['name']} ({_opts(item['options'])}) for the one with {_opts(v['options'])}")
                plan.append(("get_product_details", {"product_id": item["product_id"]}))
            facts.append(Fact("items", _ITEM_WORDS, "I'd like to swap " + " and ".join(words) + "."))
            return old, new, " and ".join(words)

        def payment(order: dict[str, Any]) -> str:
            pm = order["payment_method_id"]
            facts.append(Fact("payment", _PAY_WORDS, f"Please use {pm}, the one I paid with."))
            return pm

        writes: list[Write] = []
        outputs: list[str] = []
        product = ""
        if intent == "cancel_pending":
            order = rng.choice(pending)
            product = order["items"][0]["name"]
            reason = rng.choice(REASONS)
            order_fact([order], "would you like to cancel")
            facts.append(Fact("reason", _REASON_WORDS, f"The reason: {reason}."))
            say("What is the reason for the cancellation?")
            writes.append(Write("cancel_pending_order", {"order_id": order["order_id"], "reason": reason},
                                (order["order_id"], reason)))
            goal = f"cancel your order with the {product} ({reason})"
        elif intent in ("modify_order_address", "modify_user_address"):
            city, state = rng.choice(CITIES)
            addr = {"address1": f"{rng.randrange(1, 999)} {rng.choice(STREETS)}", "city": city, "state": state,
                    "zip": f"{rng.randrange(10000, 100000)}"}
            line = f"{addr['address1']}, {addr['city']}, {addr['state']} {addr['zip']}"
            facts.append(Fact("address", _ADDR_WORDS, f"The new address is {line}."))
            if intent == "modify_order_address":
                order = rng.choice(pending)
                order_fact([order], "should ship to the new address")
                say("What is the new shipping address?")
                writes.append(Write("modify_pending_order_address", {"order_id": order["order_id"], **addr},
                                    (order["order_id"], addr["address1"], addr["zip"])))
                goal = f"ship your order with the {order['items'][0]['name']} to {line}"
            else:
                say("What is your new address?")
                writes.append(Write("modify_user_address", {"user_id": user_id, **addr}, (addr["address1"], addr["zip"])))
                goal = f"change your default address to {line}"
        elif intent.startswith(("modify_items", "exchange")):
            order = rng.choice(pending if intent.startswith("modify") else delivered)
            order_fact([order], "is it")
            say("Which items would you like to change, and to which options?")
            old, new, words = swap_items(order, int(intent[-1]))
            say("Which payment method should take the price difference?")
            pm = payment(order)
            tool = "modify_pending_order_items" if intent.startswith("modify") else "exchange_delivered_order_items"
            writes.append(Write(tool, {"order_id": order["order_id"], "item_ids": old, "new_item_ids": new,
                                       "payment_method_id": pm}, (order["order_id"], *new)))
            goal = f"{'change' if tool.startswith('modify') else 'exchange'} {words}"
        elif intent.startswith("return") or intent == "cancel_and_return":
            order = rng.choice(delivered)
            if intent == "cancel_and_return":
                other = rng.choice(pending)
                reason = rng.choice(REASONS)
                order_fact([other, order], "are they")
                facts.append(Fact("reason", _REASON_WORDS, f"The reason for the cancellation: {reason}."))
                say("What is the reason for the cancellation?")
                writes.append(Write("cancel_pending_order", {"order_id": other["order_id"], "reason": reason},
                                    (other["order_id"], reason)))
            else:
                order_fact([order], "is it")
            n = 1 if intent != "return_2" else 2
            items = order["items"][:n]
            facts.append(Fact("items", _ITEM_WORDS, "I want to return the " + " and the ".join(
                f"{i['name']} ({_opts(i['options'])})" for i in items) + "."))
            say("Which items would you like to return?")
            say("Which payment method should receive the refund?")
            pm = payment(order)
            ids = sorted(i["item_id"] for i in items)
            writes.append(Write("return_delivered_order_items", {"order_id": order["order_id"], "item_ids": ids,
                                                                 "payment_method_id": pm}, (order["order_id"], *ids)))
            goal = "return the " + " and the ".join(i["name"] for i in items)
            if intent == "cancel_and_return":
                goal = f"cancel your order with the {other['items'][0]['name']} and {goal}"
        elif intent in ("lookup_status", "lookup_total"):
            order = rng.choice(orders)
            order_fact([order], "is it")
            if intent == "lookup_status":
                outputs.append(order["status"])
                goal = "learn the status of your order"
            else:
                outputs.append(f"{sum(i['price'] for i in order['items']):.2f}")
                goal = "learn the total price of your order"
        elif intent == "lookup_variant_price":
            pid = rng.choice(sorted(db["products"]))
            item_id, v = rng.choice(sorted(db["products"][pid]["variants"].items()))
            product = f"{db['products'][pid]['name']} ({_opts(v['options'])})"
            plan.append(("list_all_product_types", {}))
            plan.append(("get_product_details", {"product_id": pid}))
            outputs.append(f"{v['price']:.2f}")
            goal = f"learn the price of the {product}"
        else:  # traps
            pool = {"trap_cancel_delivered": delivered, "trap_return_pending": pending,
                    "trap_compensation": delivered}.get(intent)
            if pool is None:  # trap_other_user_order: a pending order of someone else
                other_user = rng.choice([u for u in sorted(db["users"]) if u != user_id])
                order = next(db["orders"][o] for o in db["users"][other_user]["orders"]
                             if db["orders"][o]["status"] == "pending")
                facts.append(Fact("order", _ORDER_WORDS, f"It's my friend's order, {order['order_id']}."))
                say("Which order would you like to cancel? Please give me the order id.")
                plan.append(("get_order_details", {"order_id": order["order_id"]}))
            else:
                order = rng.choice(pool)
                order_fact([order], "is it")
            product = order["items"][0]["name"]
            goal = {"trap_cancel_delivered": f"cancel your order with the {product} (it was delivered)",
                    "trap_return_pending": f"return the {product} of your order (it is still pending)",
                    "trap_other_user_order": f"cancel your friend's order {order['order_id']}",
                    "trap_compensation": f"get compensation because your {product} arrived broken"}[intent]
        openings = {
            "cancel_pending": "Hi, I'd like to cancel an order.",
            "modify_order_address": "Hello, I need to change the shipping address of an order.",
            "modify_user_address": "Hi, I moved and need to update my address on my account.",
            "modify_items_1": "Hi! I want to change an item in an order I just placed.",
            "modify_items_2": "Hi, I'd like to change two items in an order I placed.",
            "return_1": "Hello, I want to return something I received.",
            "return_2": "Hi, I'd like to return a couple of items.",
            "exchange_1": "Hi, I want to exchange an item I received for a different version.",
            "exchange_2": "Hello, I'd like to exchange two items from an order.",
            "cancel_and_return": "Hi, I need to cancel one order and return something from another one.",
            "lookup_status": "Hi, what's the status of my order?",
            "lookup_total": "Hello, how much did I pay in total for one of my orders?",
            "lookup_variant_price": f"Hi, how much does the {product} cost?",
            "trap_cancel_delivered": "Hi, I want to cancel my order with the " + product + ".",
            "trap_return_pending": f"Hello, I'd like to return the {product} from my order.",
            "trap_other_user_order": "Hi, I need to cancel an order for my friend.",
            "trap_compensation": f"My {product} arrived broken and I want compensation for the trouble.",
        }
        for w in writes:
            args = ", ".join(f"{k}={v}" for k, v in w.args.items())
            plan.append(("respond", {"message": f"I will call {w.name} with {args}. Do you confirm (yes/no)?"}))
            plan.append((w.name, w.args))
        if kind == "transfer":
            plan.append(("transfer_to_human", {"summary": f"User {user_id} asks for compensation: {goal}."}))
        elif kind == "refuse":
            say("I'm sorry, but I cannot do that: the policy does not allow it.")
        else:
            say(("Done. " if writes else "") + (f"The answer: {', '.join(outputs)}. " if outputs else "")
                + "Is there anything else?")
        return TaskSpec(template, kind, openings[intent], facts, writes, outputs, plan, goal + ".",
                        pick(rng, ("You are polite and brief.", "You are in a hurry.", "You are friendly and chatty.")))
