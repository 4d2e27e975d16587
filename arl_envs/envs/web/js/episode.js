// ---- in-place episode restart (env.WebEnv's reset; see restartEpisode below) ------------------------------------
// What page code schedules or attaches outside the <body> is tracked from here on, so that a restart can cancel it
// ("rebuild": our own task pages) or refuse to run while any of it is pending ("core": MiniWoB++ pages).
const early = document.readyState === 'loading';  // installed by the init script, before any page script ran
const ep = {timers: new Set(), rafs: new Set(), listeners: [], observers: new Set(), token: null, url: null};
const W = window, _st = W.setTimeout, _si = W.setInterval, _ct = W.clearTimeout, _ci = W.clearInterval;
const _raf = W.requestAnimationFrame, _caf = W.cancelAnimationFrame;
W.setTimeout = function (fn, ...rest) {
  let id;
  const f = typeof fn === 'function' ? function (...a) { ep.timers.delete(id); return fn.apply(this, a); } : fn;
  id = _st.call(W, f, ...rest);
  ep.timers.add(id);
  return id;
};
W.setInterval = function (...args) { const id = _si.apply(W, args); ep.timers.add(id); return id; };
W.clearTimeout = function (id) { ep.timers.delete(id); return _ct.call(W, id); };
W.clearInterval = function (id) { ep.timers.delete(id); return _ci.call(W, id); };
W.requestAnimationFrame = function (cb) {
  let id;
  id = _raf.call(W, function (t) { ep.rafs.delete(id); return cb(t); });
  ep.rafs.add(id);
  return id;
};
W.cancelAnimationFrame = function (id) { ep.rafs.delete(id); return _caf.call(W, id); };
const ET = EventTarget.prototype, _ael = ET.addEventListener, _rel = ET.removeEventListener;
const outside = (t) => t === W || t === document || (t && (t === document.documentElement || t === document.head ||
  t === document.body));
const capOf = (o) => !!(o === true || (o && typeof o === 'object' && o.capture));
ET.addEventListener = function (type, fn, opts) {
  if (fn && outside(this)) ep.listeners.push([this, String(type), fn, capOf(opts)]);
  return _ael.call(this, type, fn, opts);
};
ET.removeEventListener = function (type, fn, opts) {
  const c = capOf(opts), t = String(type);
  ep.listeners = ep.listeners.filter((l) => !(l[0] === this && l[1] === t && l[2] === fn && l[3] === c));
  return _rel.call(this, type, fn, opts);
};
for (const O of [W.MutationObserver, W.ResizeObserver, W.IntersectionObserver]) {
  if (!O) continue;
  const _obs = O.prototype.observe, _disc = O.prototype.disconnect;
  O.prototype.observe = function (...a) { ep.observers.add(this); return _obs.apply(this, a); };
  O.prototype.disconnect = function (...a) { ep.observers.delete(this); return _disc.apply(this, a); };
}
const onProps = (o) => { const out = []; for (const k in o) if (/^on[a-z]+$/.test(k)) out.push(k); return out; };
function episode(token) { ep.token = token; ep.url = location.href; }
function episodeBegins() {  // a MiniWoB++ page's own episode starts: what its loading code scheduled stays
  ep.timers.clear(); ep.rafs.clear(); ep.listeners = []; ep.observers.clear();
}
function pendingWork() {
  const n = ep.timers.size + ep.rafs.size + ep.listeners.length + ep.observers.size;
  return n ? `${ep.timers.size} timer(s), ${ep.rafs.size} animation frame(s), ${ep.listeners.length} ` +
    `window/document listener(s) and ${ep.observers.size} observer(s) of the previous episode are live` : null;
}
function cancelWork() {
  for (const id of ep.timers) { _ct.call(W, id); _ci.call(W, id); }
  for (const id of ep.rafs) _caf.call(W, id);
  for (const [t, type, fn, cap] of ep.listeners) _rel.call(t, type, fn, cap);
  for (const o of ep.observers) { try { o.disconnect(); } catch (e) {} }
  ep.timers.clear(); ep.rafs.clear(); ep.listeners = []; ep.observers.clear();
  for (const o of [W, document]) for (const k of onProps(o)) { try { if (o[k] !== null) o[k] = null; } catch (e) {} }
}
function clearStorage() {
  try { localStorage.clear(); sessionStorage.clear(); } catch (e) {}
  const parts = location.pathname.split('/');
  for (const c of document.cookie.split(';')) {
    const n = c.split('=')[0].trim();
    if (!n) continue;
    for (let i = 1; i <= parts.length; i++) {
      const p = parts.slice(0, i).join('/') || '/';
      document.cookie = n + '=; expires=Thu, 01 Jan 1970 00:00:00 GMT; path=' + p;
    }
  }
  return document.cookie;
}
function forgetBids(doc, depth) {  // the next snapshot numbers this document as a new one ('a', from 0)
  delete doc.__arlPrefix; delete doc.__arlNext;
  for (const el of doc.querySelectorAll('[data-arl-bid]')) el.removeAttribute('data-arl-bid');
  for (const el of doc.querySelectorAll('[data-arl-frame]')) el.removeAttribute('data-arl-frame');
  if (depth > 8) return;
  for (const f of doc.querySelectorAll('iframe,frame')) {
    let cd = null; try { cd = f.contentDocument; } catch (e) {}
    if (cd) forgetBids(cd, depth + 1);
  }
}
function resetUserState() {
  const sel = W.getSelection && W.getSelection();
  if (sel) sel.removeAllRanges();
  const a = document.activeElement;
  if (a && a !== document.body && a.blur) a.blur();
  W.scrollTo(0, 0);
  leaving = false; lastSubmit = null; formSubmitted = false; opened = 0;
}
function insertLikeParser(node, parent) {  // scripts run in document order, each seeing the nodes before it
  if (node.nodeType === 1 && node.tagName === 'SCRIPT') {
    const s = document.createElement('script');
    for (const a of node.attributes) s.setAttribute(a.name, a.value);
    s.textContent = node.textContent;
    parent.appendChild(s);
  } else if (node.nodeType === 1) {
    const el = document.importNode(node, false);
    parent.appendChild(el);
    for (const c of Array.from(node.childNodes)) insertLikeParser(c, el);
  } else parent.appendChild(document.importNode(node, true));
}
function rebuild(html) {
  const parsed = new DOMParser().parseFromString(html, 'text/html');
  if (parsed.querySelector('script[src],[autofocus],iframe,frame,object,embed'))
    return 'the page has external scripts, autofocus or frames';
  cancelWork();
  clearStorage();
  resetUserState();
  const root = document.documentElement;
  while (root.firstChild) root.firstChild.remove();
  for (const a of Array.from(root.attributes)) root.removeAttribute(a.name);
  for (const a of parsed.documentElement.attributes) root.setAttribute(a.name, a.value);
  for (const k of Object.getOwnPropertyNames(W)) {  // globals the previous episode's scripts created
    if (baseline.has(k) || k.startsWith('__pw') || k.startsWith('__playwright')) continue;
    try { delete W[k]; } catch (e) {}
    try { if (k in W) W[k] = undefined; } catch (e) {}
  }
  delete document.__arlPrefix; delete document.__arlNext;
  document.designMode = 'off';
  let errors = 0;
  const onErr = () => { errors++; };
  _ael.call(W, 'error', onErr);
  try {
    for (const c of Array.from(parsed.documentElement.childNodes)) insertLikeParser(c, root);
    document.dispatchEvent(new Event('DOMContentLoaded', {bubbles: true}));
    W.dispatchEvent(new Event('load'));
  } finally { _rel.call(W, 'error', onErr); }
  W.scrollTo(0, 0);
  return errors ? `${errors} script error(s) while re-running the page` : null;
}
// mode "rebuild": payload = the new episode's HTML (same URL); mode "core": payload = the MiniWoB++ seed string.
function restartEpisode(mode, payload, token, newToken) {
  if (!early) return {ok: false, why: 'the page helper was installed late'};
  if (ep.token === null || ep.token !== token) return {ok: false, why: 'not the document the last reset opened'};
  if (location.href !== ep.url) return {ok: false, why: 'the URL changed'};
  if (history.length !== 1 || history.state !== null) return {ok: false, why: 'the tab has history'};
  let why = null;
  if (mode === 'rebuild') why = rebuild(payload);
  else if (mode === 'core') {
    why = pendingWork();
    if (!why && typeof W.__arlRestart !== 'function') why = 'no MiniWoB++ restart hook';
    if (!why) {
      clearStorage();
      resetUserState();
      forgetBids(document, 0);
      why = W.__arlRestart(payload);
    }
  } else why = 'unknown restart mode ' + mode;
  if (why) { ep.token = null; return {ok: false, why: why}; }
  episode(newToken);
  return {ok: true, cookies: document.cookie};
}
