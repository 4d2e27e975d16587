// Harbor Market Admin: page state for the env (form fields) and a warning when a stock value goes below 5.
window.arlState = () => { const fields = {}; for (const el of document.querySelectorAll("input[id],select[id],textarea[id]")) fields[el.id] = el.value; return {fields}; };
(function () {
  const stock = document.getElementById("pr-stock");
  const warn = document.getElementById("stock-warn");
  if (!stock || !warn) return;
  const show = () => { const v = parseInt(stock.value, 10); warn.textContent = v < 5 ? "Low stock: the product will show on the dashboard." : ""; };
  stock.addEventListener("input", show);
  show();
})();
