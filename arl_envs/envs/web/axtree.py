"""Page snapshots: the accessibility tree as text, with snapshot-scoped element ids (bids).

One JavaScript call per step (:data:`SNAPSHOT_JS`, installed in every document by an init script and called
through ``window.__arl.snapshot``) walks the DOM of the page and of its same-origin iframes and returns the tree
text, the bids, the focused element and ``window.arlState()``: a step costs one round trip for the observation.

Tree format (one line per node, two spaces of indent per level)::

    RootWebArea 'Sign in', focused
      [a3] heading 'Sign in', level=1
      [a4] LabelText 'User name'
      [a5] textbox 'User name', value='ada', focused
      [a6] button 'Submit', disabled
      [a7] generic 'You clicked Amber.'
      StaticText 'plain text'

Roles and names follow WAI-ARIA / HTML-AAM in a simplified form computed in JavaScript (explicit ``role``,
implicit roles of HTML elements; names from ``aria-label``, ``aria-labelledby``, ``<label>``, ``alt``, ``title``,
``value`` of input buttons, or the element's text for name-from-content roles such as buttons and links). Hidden
elements (``display:none``, ``visibility:hidden``, ``aria-hidden="true"``) are left out and get no bid.

Bids: every visible element gets a ``data-arl-bid`` attribute ``<document prefix><number>``, e.g. ``a12``. The
prefix (``a``, ``b``, ..., ``z``, ``ba``, ...) is given to each new DOCUMENT (page load, iframe load) from a
per-episode counter, so an element keeps its bid while its document lives and a bid from a document that is
gone (after a navigation) is recognised as stale instead of silently naming another element. The counter of an
episode starts at a two-letter prefix drawn from the task instance (``WebEnv``), so a restarted episode and a
freshly loaded one with the same seed show the same bids, while ids from the previous episode (another prefix)
are rejected. Iframes carry
``data-arl-frame="<prefix of their document>"`` so an action can reach into them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

#: Version of the in-page helper; bump when SNAPSHOT_JS changes.
HELPER_VERSION = 7
#: Longest text of one node (characters); longer text is cut with "...".
MAX_NODE_TEXT = 300
#: Longest accessible name (characters).
MAX_NAME = 120
#: Most tree lines per snapshot; the rest is replaced by a marker line.
MAX_TREE_LINES = 4000
#: Milliseconds a snapshot waits for a loading document to fire ``load``.
LOAD_WAIT_MS = 2000

_BID_RE = re.compile(r"^([a-z]+)(\d+)$")

#: JS test "the helper is installed for THIS document". The helper's state (pending navigation, opened tabs,
#: document listeners) belongs to one document: a window that is reused for the next document (a popup's initial
#: about:blank replaced by its URL) must get a fresh helper, else a stale "leaving" flag stalls every snapshot.
HELPER_READY_JS = f"(window.__arl && window.__arl.v === {HELPER_VERSION} && window.__arl.doc === document)"

_EPISODE_JS = r"""
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
"""

SNAPSHOT_JS = r"""
(() => {
if (%(ready)s) return;
// count the tabs this document tries to open (window.open, links with a target): the env then waits for them
let opened = 0;
const _open = window.open;
window.open = function (...args) { opened++; return _open.apply(this, args); };
let leaving = false, lastSubmit = null, formSubmitted = false;
window.addEventListener('beforeunload', () => { leaving = true; }, true);
// a form submission starts its navigation in a later task (after beforeunload could tell us): remember it
document.addEventListener('submit', (e) => { lastSubmit = e; }, true);
const _formSubmit = HTMLFormElement.prototype.submit;
HTMLFormElement.prototype.submit = function (...args) {
  if (!this.target || this.target === '_self') formSubmitted = true;
  return _formSubmit.apply(this, args);
};
function navigationPending() {
  let pending = formSubmitted;
  if (lastSubmit && !lastSubmit.defaultPrevented) {
    const f = lastSubmit.target, t = (lastSubmit.submitter && lastSubmit.submitter.formTarget) || (f && f.target) || '';
    if (!t || t === '_self') pending = true;
  }
  lastSubmit = null; formSubmitted = false;
  return pending;
}
document.addEventListener('click', (e) => {
  const a = e.target && e.target.closest ? e.target.closest('a[href][target]') : null;
  if (a && !['', '_self', '_parent', '_top'].includes(a.target)) opened++;
}, true);
const MAX_TEXT = %(max_text)d, MAX_NAME = %(max_name)d, MAX_LINES = %(max_lines)d, LOAD_WAIT_MS = %(load_wait)d;
const SKIP_TAGS = new Set(['SCRIPT','STYLE','NOSCRIPT','TEMPLATE','HEAD','META','LINK','TITLE','BASE']);
const SILENT = new Set(['generic','none','presentation','rowgroup']);
const CONTENT_NAMED = new Set(['button','link','heading','option','tab','menuitem','menuitemcheckbox',
  'menuitemradio','treeitem','cell','columnheader','rowheader','LabelText','legend','caption','tooltip',
  'summary','listitem','paragraph','switch','checkbox','radio','gridcell']);
const TEXT_INPUTS = new Set(['','text','email','tel','url','password','search','number','date','time',
  'datetime-local','month','week','color','range']);
const letters = (n) => { let s = ''; n += 1; while (n > 0) { n -= 1; s = String.fromCharCode(97 + (n %% 26)) + s; n = Math.floor(n / 26); } return s; };
const clean = (t, max) => { t = (t || '').replace(/\s+/g, ' ').trim(); return t.length > max ? t.slice(0, max - 3) + '...' : t; };
const q = (t) => "'" + t.replace(/\\/g, '\\\\').replace(/'/g, "\\'") + "'";
function implicitRole(el) {
  const tag = el.tagName;
  switch (tag) {
    case 'A': case 'AREA': return el.hasAttribute('href') ? 'link' : 'generic';
    case 'BUTTON': return 'button';
    case 'INPUT': {
      const t = (el.getAttribute('type') || '').toLowerCase();
      if (t === 'hidden') return 'none';
      if (['button','submit','reset','image','file'].includes(t)) return 'button';
      if (t === 'checkbox') return 'checkbox';
      if (t === 'radio') return 'radio';
      if (t === 'range') return 'slider';
      if (t === 'number') return 'spinbutton';
      if (t === 'search') return 'searchbox';
      return 'textbox';
    }
    case 'SELECT': return (el.multiple || el.size > 1) ? 'listbox' : 'combobox';
    case 'OPTION': return 'option';
    case 'OPTGROUP': return 'group';
    case 'TEXTAREA': return 'textbox';
    case 'IMG': return (el.getAttribute('alt') === '') ? 'presentation' : 'img';
    case 'SVG': case 'svg': return 'img';
    case 'H1': case 'H2': case 'H3': case 'H4': case 'H5': case 'H6': return 'heading';
    case 'UL': case 'OL': case 'MENU': return 'list';
    case 'LI': return 'listitem';
    case 'TABLE': return 'table';
    case 'THEAD': case 'TBODY': case 'TFOOT': return 'rowgroup';
    case 'TR': return 'row';
    case 'TD': return 'cell';
    case 'TH': return (el.getAttribute('scope') === 'row') ? 'rowheader' : 'columnheader';
    case 'CAPTION': return 'caption';
    case 'NAV': return 'navigation';
    case 'MAIN': return 'main';
    case 'HEADER': return 'banner';
    case 'FOOTER': return 'contentinfo';
    case 'ASIDE': return 'complementary';
    case 'ARTICLE': return 'article';
    case 'SECTION': return (el.hasAttribute('aria-label') || el.hasAttribute('aria-labelledby')) ? 'region' : 'generic';
    case 'FORM': return 'form';
    case 'P': return 'paragraph';
    case 'LABEL': return 'LabelText';
    case 'FIELDSET': return 'group';
    case 'LEGEND': return 'legend';
    case 'DIALOG': return 'dialog';
    case 'DETAILS': return 'group';
    case 'SUMMARY': return 'summary';
    case 'HR': return 'separator';
    case 'PROGRESS': return 'progressbar';
    case 'METER': return 'meter';
    case 'IFRAME': case 'FRAME': return 'iframe';
    case 'BLOCKQUOTE': return 'blockquote';
    case 'CODE': return 'code';
    case 'PRE': return 'generic';
    case 'DL': return 'list';
    case 'DT': return 'term';
    case 'DD': return 'definition';
    default:
      if (el.namespaceURI === 'http://www.w3.org/2000/svg') {
        return ['rect','circle','ellipse','polygon','path','line','polyline','text'].includes(el.localName) ? 'graphics-symbol' : 'generic';
      }
      return 'generic';
  }
}
function labelText(el) {
  const doc = el.ownerDocument;
  const lb = el.getAttribute('aria-labelledby');
  if (lb) {
    const t = lb.split(/\s+/).map(id => { const r = doc.getElementById(id); return r ? r.textContent : ''; }).join(' ');
    if (clean(t, MAX_NAME)) return clean(t, MAX_NAME);
  }
  const al = el.getAttribute('aria-label');
  if (al && al.trim()) return clean(al, MAX_NAME);
  if (el.labels && el.labels.length) {
    const t = Array.from(el.labels).map(l => l.textContent).join(' ');
    if (clean(t, MAX_NAME)) return clean(t, MAX_NAME);
  }
  return '';
}
function nameOf(el, role) {
  let n = labelText(el);
  if (n) return n;
  const tag = el.tagName;
  if (tag === 'INPUT') {
    const t = (el.getAttribute('type') || '').toLowerCase();
    if (['button','submit','reset'].includes(t)) return clean(el.value || (t === 'submit' ? 'Submit' : t === 'reset' ? 'Reset' : ''), MAX_NAME);
    if (t === 'image') return clean(el.getAttribute('alt') || 'Submit', MAX_NAME);
  }
  if (tag === 'IMG' || tag === 'AREA') { n = el.getAttribute('alt'); if (n) return clean(n, MAX_NAME); }
  if (CONTENT_NAMED.has(role) && !(tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA')) {
    n = clean(el.innerText !== undefined ? el.innerText : el.textContent, MAX_NAME);
    if (n) return n;
  }
  if (el.localName === 'text' && el.namespaceURI === 'http://www.w3.org/2000/svg') return clean(el.textContent, MAX_NAME);
  const title = el.getAttribute('title');
  if (title) return clean(title, MAX_NAME);
  return '';
}
function directText(el) {
  for (const c of el.childNodes) if (c.nodeType === 3 && c.nodeValue.trim()) return true;
  return false;
}
function hasElementChild(el) {
  for (const c of el.children) if (!SKIP_TAGS.has(c.tagName)) return true;
  return false;
}
function liveActive(doc) {
  // the focused element, ignoring one that just became hidden (Chromium blurs it only at a later update: timing)
  const a = doc.activeElement;
  if (!a || a === doc.body || a === doc.documentElement) return null;
  try { if (!a.checkVisibility()) return null; } catch (e) {}
  return a;
}
function snapshotDoc(top, counter) {
  const lines = [], bids = [], disabled = [], docs = {}, seen = new Set();
  let next = counter, truncated = false;
  const prefixOf = (doc) => {
    if (doc.__arlPrefix === undefined) { doc.__arlPrefix = letters(next++); doc.__arlNext = 0; }
    return doc.__arlPrefix;
  };
  const bidOf = (el, prefix) => {
    let b = el.getAttribute('data-arl-bid');
    if (!b || !b.startsWith(prefix) || !/^\d+$/.test(b.slice(prefix.length)) || seen.has(b)) {
      b = prefix + (el.ownerDocument.__arlNext++);
      el.setAttribute('data-arl-bid', b);
    }
    seen.add(b); bids.push(b);
    return b;
  };
  const emit = (depth, text) => {
    if (lines.length >= MAX_LINES) { truncated = true; return; }
    lines.push('  '.repeat(depth) + text);
  };
  function walkDoc(doc, depth, path) {
    const prefix = prefixOf(doc);
    docs[prefix] = path;
    const title = clean(doc.title, MAX_NAME);
    const rootProps = (doc === top && liveActive(doc) === null) ? ', focused' : '';
    emit(depth, 'RootWebArea ' + q(title) + rootProps);
    if (doc.body) walkChildren(doc.body, depth + 1, prefix, path, false);
  }
  function walkChildren(el, depth, prefix, path, inNamed) {
    const kids = el.shadowRoot ? el.shadowRoot.childNodes : el.childNodes;
    for (const c of kids) {
      if (truncated) return;
      if (c.nodeType === 3) {
        if (!inNamed) { const t = clean(c.nodeValue, MAX_TEXT); if (t) emit(depth, 'StaticText ' + q(t)); }
      } else if (c.nodeType === 1) walkEl(c, depth, prefix, path, inNamed);
    }
  }
  function walkEl(el, depth, prefix, path, inNamed) {
    if (SKIP_TAGS.has(el.tagName)) return;
    if (el.getAttribute('aria-hidden') === 'true') return;
    const isOption = el.tagName === 'OPTION' || el.tagName === 'OPTGROUP';
    if (!isOption) {
      if (!el.checkVisibility()) return;  // display:none (or inside it): nothing below is shown
      if (!el.checkVisibility({visibilityProperty: true})) { walkChildren(el, depth, prefix, path, inNamed); return; }
    }
    const role = (el.getAttribute('role') || '').trim().split(/\s+/)[0] || implicitRole(el);
    if (role === 'none' && el.tagName === 'INPUT') return;
    const bid = bidOf(el, prefix);
    const tag = el.tagName;
    const isControl = tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA' || tag === 'BUTTON';
    let clickable = false;
    if (SILENT.has(role) && !isControl) {
      clickable = el.hasAttribute('onclick') || el.hasAttribute('tabindex') || el.isContentEditable && el.getAttribute('contenteditable') !== null
        || el.getAttribute('draggable') === 'true';
      if (!clickable && el.ownerDocument.defaultView) {
        const cur = el.ownerDocument.defaultView.getComputedStyle(el).cursor;
        clickable = cur === 'pointer' && !(el.parentElement && el.ownerDocument.defaultView.getComputedStyle(el.parentElement).cursor === 'pointer');
      }
    }
    const printed = !SILENT.has(role) || isControl || clickable || (!inNamed && directText(el));
    if (!printed) {
      if (tag === 'IFRAME' || tag === 'FRAME') return;
      walkChildren(el, depth, prefix, path, inNamed);
      return;
    }
    let name = nameOf(el, role);
    const leafText = !hasElementChild(el) && !CONTENT_NAMED.has(role) && !isControl;
    if (!name && leafText) name = clean(el.textContent, MAX_TEXT);
    const props = [];
    if (role === 'heading') { const m = /^H(\d)$/.exec(tag); props.push('level=' + (m ? m[1] : (el.getAttribute('aria-level') || '2'))); }
    if (tag === 'INPUT' && (el.type === 'checkbox' || el.type === 'radio')) props.push('checked=' + (el.checked ? 'true' : 'false'));
    else if (el.hasAttribute('aria-checked')) props.push('checked=' + el.getAttribute('aria-checked'));
    if ((tag === 'INPUT' && TEXT_INPUTS.has((el.getAttribute('type') || '').toLowerCase())) || tag === 'TEXTAREA') {
      const t = (el.getAttribute('type') || '').toLowerCase();
      const v = t === 'password' ? '\u2022'.repeat(el.value.length) : el.value;
      props.push('value=' + q(clean(v.replace(/\n/g, '\u21b5'), MAX_TEXT)));
      if (t && !['text','password','search','number'].includes(t)) props.push('type=' + t);
      const ph = el.getAttribute('placeholder'); if (ph) props.push('placeholder=' + q(clean(ph, MAX_NAME)));
      if (el.readOnly) props.push('readonly');
      if (t === 'range' || t === 'number') { if (el.min !== '') props.push('min=' + el.min); if (el.max !== '') props.push('max=' + el.max); }
    } else if (el.isContentEditable && el.getAttribute('contenteditable') !== null) {
      props.push('editable'); props.push('value=' + q(clean(el.innerText, MAX_TEXT)));
    }
    if (tag === 'SELECT') props.push('value=' + q(clean(Array.from(el.selectedOptions).map(o => o.label).join(', '), MAX_NAME)));
    if (tag === 'OPTION' && el.selected) props.push('selected');
    for (const a of ['expanded','pressed','selected']) { const v = el.getAttribute('aria-' + a); if (v !== null) props.push(a + '=' + v); }
    let dis = false;
    try { dis = el.matches(':disabled') || el.getAttribute('aria-disabled') === 'true'; } catch (e) {}
    if (dis) { props.push('disabled'); disabled.push(bid); }
    if (el.required) props.push('required');
    if (el.getAttribute('aria-invalid') === 'true') props.push('invalid');
    if (el.getAttribute('draggable') === 'true') props.push('draggable');
    if (clickable) props.push('clickable');
    if (el === liveActive(el.ownerDocument)) props.push('focused');
    emit(depth, '[' + bid + '] ' + role + (name ? ' ' + q(name) : '') + (props.length ? ', ' + props.join(', ') : ''));
    if (tag === 'IFRAME' || tag === 'FRAME') {
      let cd = null;
      try { cd = el.contentDocument; } catch (e) { cd = null; }
      if (cd && cd.documentElement) {
        const childPrefix = prefixOf(cd);
        el.setAttribute('data-arl-frame', childPrefix);
        walkDoc(cd, depth + 1, path.concat([childPrefix]));
      } else emit(depth + 1, '(frame content not available)');
      return;
    }
    if (tag === 'INPUT' || tag === 'TEXTAREA') return;
    if (leafText && name) return;
    walkChildren(el, depth + 1, prefix, path, inNamed || CONTENT_NAMED.has(role));
  }
  walkDoc(top, 0, []);
  if (truncated) lines.push('[... tree truncated at ' + MAX_LINES + ' lines ...]');
  return {lines, bids, disabled, docs, next};
}
function focusedBid(doc) {
  let el = liveActive(doc);
  for (let i = 0; i < 16 && el && (el.tagName === 'IFRAME' || el.tagName === 'FRAME'); i++) {
    let cd = null; try { cd = el.contentDocument; } catch (e) {}
    const inner = cd ? liveActive(cd) : null;
    if (!inner) break;
    el = inner;
  }
  if (!el) return null;
  return el.getAttribute('data-arl-bid');
}
async function snapshot(counter, force) {
  if (navigationPending()) leaving = true;
  if (leaving && !force) return {leaving: true};
  leaving = false;
  if (document.readyState !== 'complete') {
    await new Promise(r => { window.addEventListener('load', r, {once: true}); setTimeout(r, LOAD_WAIT_MS); });
  }
  let state = null, stateOk = false, stateError = null;
  try {
    if (typeof window.arlState === 'function') {
      state = JSON.parse(JSON.stringify(await window.arlState()) || 'null');
      stateOk = state !== null && typeof state === 'object' && !Array.isArray(state);
      if (!stateOk) { stateError = 'window.arlState() did not return an object'; state = null; }
    } else stateError = 'window.arlState is not defined on this page';
  } catch (e) { stateError = 'window.arlState() failed: ' + String(e).slice(0, 300); state = null; }
  const s = snapshotDoc(document, counter);
  return {text: s.lines.join('\n'), bids: s.bids, disabled: s.disabled, docs: s.docs, next: s.next,
          focused: focusedBid(document), title: document.title, url: location.href,
          state: state, stateOk: stateOk, stateError: stateError, opened: takeOpened()};
}
function findBid(bid) {
  const sel = '[data-arl-bid="' + bid.replace(/[^a-z0-9]/g, '') + '"]';
  const search = (doc, depth) => {
    const el = doc.querySelector(sel);
    if (el) return el;
    if (depth > 8) return null;
    for (const f of doc.querySelectorAll('iframe,frame')) {
      let cd = null; try { cd = f.contentDocument; } catch (e) {}
      if (cd) { const r = search(cd, depth + 1); if (r) return r; }
    }
    return null;
  };
  return search(document, 0);
}
function describe(el) {
  if (!el) return 'nothing';
  let d = el.tagName.toLowerCase();
  if (el.id) d += '#' + el.id;
  const b = el.getAttribute && el.getAttribute('data-arl-bid');
  if (b) d += ' [' + b + ']';
  return d;
}
function target(bid, hitTest) {
  const el = findBid(bid);
  if (!el) return {error: 'element ' + bid + ' is no longer on the page'};
  if (!el.checkVisibility({visibilityProperty: true})) return {error: 'element ' + bid + ' is hidden'};
  let dis = false; try { dis = el.matches(':disabled'); } catch (e) {}
  const info = {tag: el.tagName, type: (el.getAttribute('type') || '').toLowerCase(), disabled: dis,
                checked: el.checked === undefined ? (el.getAttribute('aria-checked') === 'true') : !!el.checked,
                role: (el.getAttribute('role') || '').trim()};
  // scroll it (and the frames holding it) into view
  let w = el.ownerDocument.defaultView, node = el;
  for (let i = 0; i < 10 && node; i++) {
    if (node.scrollIntoViewIfNeeded) node.scrollIntoViewIfNeeded(true); else node.scrollIntoView({block: 'center'});
    if (!w || w === window || !w.frameElement) break;
    node = w.frameElement; w = w.parent;
  }
  const rects = el.getClientRects();
  const r = rects.length ? rects[0] : el.getBoundingClientRect();
  if (!(r.width > 0 && r.height > 0)) return Object.assign(info, {error: 'element ' + bid + ' has no size (not visible)'});
  const ew = el.ownerDocument.defaultView;
  const cx = Math.min(Math.max(r.left + r.width / 2, 0), ew.innerWidth - 1);
  const cy = Math.min(Math.max(r.top + r.height / 2, 0), ew.innerHeight - 1);
  if (hitTest) {
    const hit = el.ownerDocument.elementFromPoint(cx, cy);
    const ok = hit && (hit === el || el.contains(hit) || hit.control === el
                       || (el.labels && Array.from(el.labels).some(l => l.contains(hit))));
    if (!ok) return Object.assign(info, {error: 'element ' + bid + ' is covered by ' + describe(hit) + ' (that element would get the click)'});
  }
  let x = cx, y = cy;
  w = ew;
  for (let i = 0; i < 10 && w && w !== window && w.frameElement; i++) {
    const f = w.frameElement, fr = f.getBoundingClientRect();
    x += fr.left + f.clientLeft; y += fr.top + f.clientTop; w = w.parent;
  }
  if (x < 0 || y < 0 || x >= window.innerWidth || y >= window.innerHeight) return Object.assign(info, {error: 'element ' + bid + ' is outside the viewport'});
  return Object.assign(info, {x: x, y: y});
}
const DIRECT_VALUE_TYPES = new Set(['date', 'time', 'datetime-local', 'month', 'week', 'color', 'range']);
function prepareFill(bid, value) {
  const el = findBid(bid);
  if (!el) return {error: 'element ' + bid + ' is no longer on the page'};
  const tag = el.tagName, type = (el.getAttribute('type') || '').toLowerCase();
  const textual = (tag === 'INPUT' && !['checkbox','radio','button','submit','reset','image','file','hidden'].includes(type)) || tag === 'TEXTAREA';
  if (!textual && !el.isContentEditable) return {error: 'element ' + bid + ' (' + describe(el) + ') is not a text field: fill works on inputs, textareas and contenteditable elements'};
  let dis = false; try { dis = el.matches(':disabled'); } catch (e) {}
  if (dis) return {error: 'element ' + bid + ' is disabled'};
  if (el.readOnly) return {error: 'element ' + bid + ' is read-only'};
  if (!el.checkVisibility({visibilityProperty: true})) return {error: 'element ' + bid + ' is hidden'};
  if (tag === 'INPUT' && DIRECT_VALUE_TYPES.has(type)) {
    el.focus();
    const setter = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, 'value').set;
    setter.call(el, value);
    if (value !== '' && el.value !== value) return {error: 'malformed value for an input of type ' + type + ': ' + JSON.stringify(value)};
    el.dispatchEvent(new Event('input', {bubbles: true}));
    el.dispatchEvent(new Event('change', {bubbles: true}));
    return {done: true};
  }
  if (el.scrollIntoViewIfNeeded) el.scrollIntoViewIfNeeded(true);
  el.focus();
  if (tag === 'INPUT' || tag === 'TEXTAREA') { el.select(); }
  else { const rng = el.ownerDocument.createRange(); rng.selectNodeContents(el); const sel = el.ownerDocument.defaultView.getSelection(); sel.removeAllRanges(); sel.addRange(rng); }
  return {done: false};
}
function selectOption(bid, wanted) {
  let el = findBid(bid);
  if (!el) return {error: 'element ' + bid + ' is no longer on the page'};
  let own = null;
  if (el.tagName === 'OPTION') { own = el; el = el.closest('select') || el; }
  if (wanted === null && own) wanted = [own.value];
  if (el.tagName !== 'SELECT') return {error: 'element ' + bid + ' (' + describe(el) + ') is not a <select>'};
  let dis = false; try { dis = el.matches(':disabled'); } catch (e) {}
  if (dis) return {error: 'element ' + bid + ' is disabled'};
  const opts = Array.from(el.options);
  const norm = (t) => (t || '').replace(/\s+/g, ' ').trim();
  const picked = [];
  for (const w of wanted) {
    const o = opts.find(o => o.value === w) || opts.find(o => norm(o.label) === norm(w)) || opts.find(o => norm(o.label).toLowerCase() === norm(w).toLowerCase());
    if (!o) return {error: 'no option ' + JSON.stringify(w) + ' in ' + bid + '; options: ' + opts.map(o => JSON.stringify(norm(o.label))).join(', ')};
    if (o.disabled) return {error: 'option ' + JSON.stringify(w) + ' is disabled'};
    picked.push(o);
  }
  if (picked.length > 1 && !el.multiple) return {error: 'element ' + bid + ' accepts one option, got ' + picked.length};
  if (el.multiple) opts.forEach(o => { o.selected = picked.includes(o); }); else picked[0].selected = true;
  el.dispatchEvent(new Event('input', {bubbles: true}));
  el.dispatchEvent(new Event('change', {bubbles: true}));
  return {done: true};
}
function focusBid(bid) {
  const el = findBid(bid);
  if (!el) return {error: 'element ' + bid + ' is no longer on the page'};
  let w = el.ownerDocument.defaultView;
  for (let i = 0; i < 10 && w && w !== window && w.frameElement; i++) { w.frameElement.focus(); w = w.parent; }
  el.focus();
  return {done: true};
}
function fresh(url) {
  // the env's reset when it reloads: forget this origin's storage and cookies, then load the next page in place
  const left = clearStorage();
  leaving = true;
  location.replace(url);
  return {cookies: left};
}
function takeOpened() { const n = opened; opened = 0; return n; }
function resolve(selector) {
  const out = [];
  const search = (doc, depth) => {
    let found = [];
    try { found = doc.querySelectorAll(selector); } catch (e) { throw new Error('bad CSS selector: ' + selector); }
    for (const el of found) { const b = el.getAttribute('data-arl-bid'); if (b) out.push(b); }
    if (depth > 8) return;
    for (const f of doc.querySelectorAll('iframe,frame')) {
      let cd = null; try { cd = f.contentDocument; } catch (e) {}
      if (cd) search(cd, depth + 1);
    }
  };
  search(document, 0);
  return out;
}
%(episode)s
Object.defineProperty(window, '__arl', {value: {v: %(version)d, doc: document, snapshot, resolve, fresh, target, prepareFill, selectOption, focusBid, episode, episodeBegins, restartEpisode}, configurable: true, enumerable: false, writable: true});
const baseline = new Set(Object.getOwnPropertyNames(window));
})();
""" % {
    "version": HELPER_VERSION,
    "ready": HELPER_READY_JS,
    "max_text": MAX_NODE_TEXT,
    "max_name": MAX_NAME,
    "max_lines": MAX_TREE_LINES,
    "load_wait": LOAD_WAIT_MS,
    "episode": _EPISODE_JS,
}

#: Expression evaluated in the top frame for a snapshot: ``[document-prefix counter, force, episode token]``; a
#: token marks the observed document as the one this episode's reset opened (see :data:`RESTART_CALL`).
SNAPSHOT_CALL = f"""async ([counter, force, token]) => {{
  if (!{HELPER_READY_JS}) {{ {SNAPSHOT_JS} }}
  const r = await window.__arl.snapshot(counter, force);
  if (token && !r.leaving) window.__arl.episode(token);
  return r;
}}"""

#: Expression evaluated in the top frame to restart the episode in the same document (the env's reset):
#: ``[mode, payload, token of the ending episode, token of the new one]`` -> ``{ok, why, cookies}``. Mode
#: ``"rebuild"`` (payload: the new episode's HTML) cancels what the page scheduled or attached outside its body,
#: clears storage, cookies, globals, focus and scroll, and rebuilds the document, running its scripts in order;
#: mode ``"core"`` (payload: a MiniWoB++ seed) refuses while the previous episode left anything pending, then
#: clears storage, cookies, focus and scroll and calls the page's ``window.__arlRestart(seed)``. Either refuses
#: (``ok`` False, ``why``) unless the helper was installed before the page's scripts ran, the document is the one
#: the ending episode's reset observed (token), its URL is unchanged and the tab has no history.
RESTART_CALL = f"""(args) => {{
  if (!{HELPER_READY_JS}) return {{ok: false, why: 'no page helper in this document'}};
  return window.__arl.restartEpisode(...args);
}}"""

#: Expression evaluated in the top frame to prepare an action: ``[helper name, args...]``.
ACTION_CALL = f"""(args) => {{
  if (!{HELPER_READY_JS}) {{ {SNAPSHOT_JS} }}
  return window.__arl[args[0]](...args.slice(1));
}}"""

#: Expression evaluated in the top frame to find bids by CSS selector (argument: the selector).
RESOLVE_CALL = f"""(selector) => {{
  if (!{HELPER_READY_JS}) {{ {SNAPSHOT_JS} }}
  return window.__arl.resolve(selector);
}}"""


@dataclass
class Snapshot:
    """One observation of the active page.

    Attributes:
        tree: The accessibility tree text (see the module docstring).
        url: Absolute URL of the active page.
        title: Document title.
        focused: Bid of the focused element, or None.
        bids: Every bid present in this snapshot.
        disabled: Bids of disabled elements.
        docs: Document prefix -> iframe prefix path from the top document (``[]`` for the top one).
        state: ``window.arlState()`` (an object), or None when missing or failing.
        state_error: Why ``state`` is None, else None.
        next_prefix: The per-episode document counter after this snapshot.
    """

    tree: str
    url: str
    title: str
    focused: str | None
    bids: frozenset[str]
    disabled: frozenset[str]
    docs: dict[str, list[str]]
    state: dict[str, Any] | None
    state_error: str | None
    next_prefix: int
    issued_prefixes: int = field(default=0)

    @classmethod
    def from_js(cls, raw: dict[str, Any]) -> Snapshot:
        return cls(
            tree=str(raw.get("text", "")),
            url=str(raw.get("url", "")),
            title=str(raw.get("title", "")),
            focused=raw.get("focused") or None,
            bids=frozenset(raw.get("bids") or ()),
            disabled=frozenset(raw.get("disabled") or ()),
            docs={str(k): [str(p) for p in v] for k, v in (raw.get("docs") or {}).items()},
            state=raw.get("state") if raw.get("stateOk") else None,
            state_error=raw.get("stateError"),
            next_prefix=int(raw.get("next", 0)),
        )


def split_bid(bid: str) -> tuple[str, int] | None:
    """``"ab12"`` -> ``("ab", 12)``; None when ``bid`` is not of the bid form."""
    m = _BID_RE.match(bid)
    return (m.group(1), int(m.group(2))) if m else None


def prefix_index(prefix: str) -> int:
    """Index of a document prefix in the issue order (``a`` = 0, ``z`` = 25, ``aa`` = 26, ...)."""
    n = 0
    for ch in prefix:
        n = n * 26 + (ord(ch) - 96)
    return n - 1


def check_bid(bid: str, snap: Snapshot, first_prefix: int = 0) -> str | None:
    """Why ``bid`` cannot be acted on in ``snap`` (an error for the agent), or None if it can.

    Distinguishes a STALE bid (its document is gone: the page navigated or the frame reloaded, or it came from an
    earlier episode) from an unknown one (never issued, or its element was removed or hidden on a live page).

    Args:
        bid: The element id the action names.
        snap: The current snapshot.
        first_prefix: Index (:func:`prefix_index`) of the first document prefix of the current episode: prefixes
            below it or at/after ``snap.next_prefix`` were not issued in this episode.
    """
    parts = split_bid(bid)
    if parts is None:
        return f"invalid element id {bid!r}: element ids look like 'a12' (letters, then digits) as shown in [brackets]"
    prefix, _ = parts
    if bid in snap.bids:
        return None
    if prefix in snap.docs:
        return f"unknown element id {bid!r}: no such element on the current page (removed or hidden)"
    if first_prefix <= prefix_index(prefix) < snap.next_prefix:
        return (
            f"stale element id {bid!r}: it belongs to a page that is no longer shown (the page navigated or "
            "reloaded). Use the ids of the current page below."
        )
    return (
        f"unknown element id {bid!r}: not an id of this episode's pages (ids from an earlier episode are stale). "
        "Use the ids of the current page below."
    )
