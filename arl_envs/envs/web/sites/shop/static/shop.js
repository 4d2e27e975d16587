// Harbor Market: echo the chosen product options and keep the quantity in range.
window.arlState = () => { const fields = {}; for (const el of document.querySelectorAll("input[id],select[id],textarea[id]")) fields[el.id] = el.value; return {fields}; };
(function () {
  const form = document.getElementById('buy');
  if (!form) return;
  const out = document.getElementById('choice');
  const show = () => {
    const parts = ['opt-size', 'opt-color'].map((id) => document.getElementById(id)).filter((el) => el && el.value);
    out.textContent = parts.length ? 'Selected: ' + parts.map((el) => el.value).join(', ') : '';
  };
  form.addEventListener('change', show);
  const qty = document.getElementById('qty');
  qty.addEventListener('change', () => { const v = parseInt(qty.value, 10); qty.value = Math.min(10, Math.max(1, v || 1)); });
})();
