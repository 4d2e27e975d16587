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
