// Quayside: page state for the env (form fields; a checkbox reads "on" when checked) and a comment-length counter.
window.arlState = () => {
  const fields = {};
  for (const el of document.querySelectorAll("input[id],select[id],textarea[id]"))
    fields[el.id] = el.type === "checkbox" ? (el.checked ? "on" : "") : el.value;
  return {fields};
};
(function () {
  const box = document.getElementById("note-body");
  const out = document.getElementById("note-count");
  if (!box || !out) return;
  box.addEventListener("input", () => { out.textContent = box.value.length ? box.value.length + " characters" : ""; });
})();
