"""``arl/web.shop-v0``: put the right items in the right quantities into a cart and check out (multi-page)."""

from __future__ import annotations

from typing import Any

import numpy as np

from arl_envs.envs.web.task import (
    ExpertView,
    Score,
    TaskInstance,
    WebTask,
    act,
    html_escape,
    register_task,
)
from arl_envs.envs.web.tasks._kit import (
    COLORS,
    FIRST_NAMES,
    LAST_NAMES,
    PRODUCTS,
    page,
    pick,
    sample,
)

#: Products in the catalogue; items ordered (range, inclusive); quantity of each (range, inclusive).
N_PRODUCTS = 9
N_ITEMS = (2, 3)
QTY = (1, 3)

# Cart and order live in sessionStorage ('arl:cart' = {product id: qty}, 'arl:order'), so every page reports them.
_COMMON_JS = """
function cart() { return ARL_STORE.get('cart', {}); }
function order() { return ARL_STORE.get('order', null); }
function cartCount() { var c = cart(), n = 0; Object.keys(c).forEach(function (k) { n += c[k]; }); return n; }
function setCartLink() { var a = document.getElementById('cartlink'); if (a) a.textContent = 'Cart (' + cartCount() + ')'; }
setCartLink();
"""

_CATALOGUE_JS = _COMMON_JS + """
document.querySelectorAll('.add').forEach(function (b) {
  b.addEventListener('click', function () {
    var id = b.dataset.id, q = parseInt(document.getElementById('qty-' + id).value, 10);
    if (!(q >= 1 && q <= 99)) { document.getElementById('status').textContent = 'Quantity must be 1 to 99.'; return; }
    var c = cart(); c[id] = (c[id] || 0) + q; ARL_STORE.set('cart', c); setCartLink();
    document.getElementById('status').textContent = 'Added ' + q + ' x ' + ARL_DATA.products[id].name + ' to the cart.';
  });
});
window.arlState = () => {
  var qty = {};
  document.querySelectorAll('input[id^=qty-]').forEach(function (i) { qty[i.id.slice(4)] = i.value; });
  return {page: 'catalogue', cart: cart(), order: order(), qty: qty};
};
"""

_CART_JS = _COMMON_JS + """
function render() {
  var c = cart(), ids = Object.keys(c), total = 0;
  document.getElementById('lines').innerHTML = ids.map(function (id) {
    var p = ARL_DATA.products[id]; total += p.price * c[id];
    return '<tr><td>' + arlEsc(p.name) + '</td><td><input type="number" min="0" class="q" data-id="' + id +
      '" value="' + c[id] + '" aria-label="Quantity of ' + arlEsc(p.name) + '"></td><td>$' + (p.price * c[id]).toFixed(2) +
      '</td><td><button type="button" class="rm" data-id="' + id + '">Remove ' + arlEsc(p.name) + '</button></td></tr>';
  }).join('') || '<tr><td colspan="4">Your cart is empty.</td></tr>';
  document.getElementById('total').textContent = 'Total: $' + total.toFixed(2);
  document.querySelectorAll('.rm').forEach(function (b) {
    b.addEventListener('click', function () { var c = cart(); delete c[b.dataset.id]; ARL_STORE.set('cart', c); render(); setCartLink(); });
  });
  document.querySelectorAll('.q').forEach(function (inp) {
    inp.addEventListener('input', function () {
      var c = cart(), q = parseInt(inp.value, 10);
      if (isNaN(q)) return;
      if (q >= 1) c[inp.dataset.id] = q; else delete c[inp.dataset.id];
      ARL_STORE.set('cart', c); setCartLink();
    });
    inp.addEventListener('change', render);
  });
}
render();
window.arlState = () => ({page: 'cart', cart: cart(), order: order()});
"""

_CHECKOUT_JS = _COMMON_JS + """
document.getElementById('co').addEventListener('submit', function (ev) {
  ev.preventDefault();
  var name = document.getElementById('name').value.trim(), addr = document.getElementById('address').value.trim();
  if (!name || !addr) { document.getElementById('error').textContent = 'Name and address are required.'; return; }
  if (cartCount() === 0) { document.getElementById('error').textContent = 'Your cart is empty.'; return; }
  if (order() === null) ARL_STORE.set('order', {items: cart(), name: name, address: addr});
  ARL_STORE.set('cart', {});
  location.href = 'done.html';
});
window.arlState = () => ({page: 'checkout', cart: cart(), order: order(),
  name: document.getElementById('name').value, address: document.getElementById('address').value});
"""

_DONE_JS = _COMMON_JS + """
var o = order();
document.getElementById('msg').textContent = o ? 'Thank you, ' + o.name + '. Your order is on its way.' : 'No order found.';
window.arlState = () => ({page: 'done', cart: cart(), order: order()});
"""

_CSS = "input[type=number]{width:56px}"
NAV = '<nav><a href="index.html">Catalogue</a> <a href="cart.html" id="cartlink">Cart</a></nav>'


@register_task
class Shop(WebTask):
    """Order exactly the requested items and quantities, with the given name and address.

    Instance: ``N_PRODUCTS`` products (colour + product names, several sharing a colour or a product); 2-3 of
    them ordered, 1-3 of each. Pages: ``index.html`` (catalogue: quantity box + "Add to cart" per product),
    ``cart.html`` (change quantities, remove lines), ``checkout.html`` (name, address, "Place order"),
    ``done.html``. Cart and order are kept in sessionStorage.
    State: ``{"page", "cart": {product id: qty}, "order": {items, name, address} | None}`` (+ form values on
    the checkout page).
    Validation: done once an order is placed; success iff its items equal the requested ones exactly (no
    missing, extra or mis-counted item) and the name and address match (whitespace-trimmed, case-insensitive).
    Sub-goals: ``"cart-correct"`` (the cart holds exactly the requested items), ``"at-checkout"`` (on the
    checkout page with a correct cart), ``"ordered"`` (the right order placed).
    """

    name = "shop"
    description = "Add the requested items in the requested quantities to a cart and check out (multi-page)."
    max_turns = 20
    n_subgoals = 3

    def setup(self, rng: np.random.Generator) -> TaskInstance:
        colors = sample(rng, COLORS, 4)
        kinds = sample(rng, PRODUCTS, 4)
        names: list[str] = []
        while len(names) < N_PRODUCTS:
            n = f"{pick(rng, colors)} {pick(rng, kinds)}"
            if n not in names:
                names.append(n)
        products = {str(i + 1): {"name": n, "price": round(float(rng.integers(300, 9000)) / 100, 2)} for i, n in enumerate(names)}
        k = int(rng.integers(N_ITEMS[0], N_ITEMS[1] + 1))
        items = {pid: int(rng.integers(QTY[0], QTY[1] + 1)) for pid in sorted(sample(rng, sorted(products), k))}
        name = f"{pick(rng, FIRST_NAMES)} {pick(rng, LAST_NAMES)}"
        address = f"{int(rng.integers(1, 200))} {pick(rng, LAST_NAMES)} Street"
        rows = "".join(
            f'<div class="card"><strong>{html_escape(p["name"])}</strong> ${p["price"]:.2f} '
            f'<label for="qty-{pid}">Qty</label><input id="qty-{pid}" type="number" min="1" value="1" size="3" '
            f'aria-label="Quantity of {html_escape(p["name"])}">'
            f'<button type="button" class="add" data-id="{pid}">Add {html_escape(p["name"])} to cart</button></div>'
            for pid, p in products.items()
        )
        data = {"products": products}
        files: dict[str, str | bytes] = {
            "index.html": page(
                "Shop", f'{NAV}<h1>Catalogue</h1>{rows}<p id="status" role="status"></p>', _CATALOGUE_JS, data, _CSS
            ),
            "cart.html": page(
                "Cart",
                f"{NAV}<h1>Your cart</h1><table><thead><tr><th>Item</th><th>Qty</th><th>Price</th><th></th></tr></thead>"
                '<tbody id="lines"></tbody></table><p id="total"></p><a href="checkout.html">Proceed to checkout</a>',
                _CART_JS,
                data,
                _CSS,
            ),
            "checkout.html": page(
                "Checkout",
                f'{NAV}<h1>Checkout</h1><form id="co"><div class="row"><label for="name">Full name</label><input id="name"></div>'
                '<div class="row"><label for="address">Address</label><input id="address" size="40"></div>'
                '<button type="submit">Place order</button></form><p id="error" class="error" role="alert"></p>',
                _CHECKOUT_JS,
                data,
            ),
            "done.html": page("Order placed", f'{NAV}<h1>Order placed</h1><p id="msg"></p>', _DONE_JS, data),
        }
        wanted = ", ".join(f"{q} x {products[pid]['name']}" for pid, q in items.items())
        return TaskInstance(
            goal={"items": items, "name": name, "address": address},
            utterance=f"Buy exactly {wanted}. Check out with the name {name} and the address {address}.",
            files=files,
        )

    @staticmethod
    def _items_ok(got: Any, want: dict[str, int]) -> bool:
        return isinstance(got, dict) and {str(k): v for k, v in got.items()} == want

    def validate(self, state: dict[str, Any], goal: dict[str, Any], answer: str | None) -> Score:
        sub = set()
        if self._items_ok(state.get("cart"), goal["items"]):
            sub.add("cart-correct")
            if state.get("page") == "checkout":
                sub.add("at-checkout")
        order = state.get("order")
        if not isinstance(order, dict):
            return Score(done=False, success=False, subgoals=frozenset(sub))
        ok = (
            self._items_ok(order.get("items"), goal["items"])
            and str(order.get("name", "")).strip().casefold() == goal["name"].casefold()
            and str(order.get("address", "")).strip().casefold() == goal["address"].casefold()
        )
        if ok:
            sub.update({"cart-correct", "at-checkout", "ordered"})
        return Score(done=True, success=ok, subgoals=frozenset(sub))

    def expert(self, view: ExpertView, goal: dict[str, Any]) -> str:
        st = view.state
        cart = {str(k): v for k, v in (st.get("cart") or {}).items()}
        want = goal["items"]
        where = st.get("page")
        if cart != want:
            wrong = sorted(pid for pid in cart if pid not in want or cart[pid] > want[pid])
            if wrong:  # Fix on the cart page: set the right quantity (0 removes).
                if where != "cart":
                    return act("click", view.bid("#cartlink"))
                pid = wrong[0]
                return act("fill", view.bid(f'input.q[data-id="{pid}"]'), str(want.get(pid, 0)))
            if where != "catalogue":
                return act("click", view.bid('nav a[href="index.html"]'))
            pid = min(p for p in want if cart.get(p, 0) < want[p])
            need = str(want[pid] - cart.get(pid, 0))
            qty_bid = view.bid(f"#qty-{pid}")
            if st.get("qty", {}).get(pid) != need:
                return act("fill", qty_bid, need)
            return act("click", view.bid(f'button.add[data-id="{pid}"]'))
        if where == "catalogue":
            return act("click", view.bid("#cartlink"))
        if where == "cart":
            return act("click", view.bid('a[href="checkout.html"]'))
        if where == "checkout":
            if st.get("name") != goal["name"]:
                return act("fill", view.bid("#name"), goal["name"])
            if st.get("address") != goal["address"]:
                return act("fill", view.bid("#address"), goal["address"])
            return act("click", view.bid('#co button[type="submit"]'))
        return act("click", view.bid('nav a[href="index.html"]'))
