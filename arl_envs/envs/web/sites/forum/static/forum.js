// Commons: a live character count under the comment box and the post form's text field.
window.arlState = () => { const fields = {}; for (const el of document.querySelectorAll("input[id],select[id],textarea[id]")) fields[el.id] = el.value; return {fields}; };
(function () {
  const box = document.getElementById('c-body');
  const out = document.getElementById('c-count');
  if (box && out) box.addEventListener('input', () => { out.textContent = box.value.length + ' / 2000 characters'; });
})();
