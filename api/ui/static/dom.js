// DOM helpers. Everything is built with createElement and text nodes:
// transcripts hold arbitrary text, so no HTML is ever parsed from data.

// h creates an element. props: "class", "text", "dataset" (object),
// "on<event>" (a function), "value", "checked", "disabled", "hidden",
// "selected" (properties) and any other attribute (set as a string).
// Children are nodes, strings (text) or arrays of them; null and false
// are left out.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = String(v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'value') el.value = String(v);
    else if (k === 'checked' || k === 'disabled' || k === 'hidden' || k === 'selected' || k === 'open') el[k] = Boolean(v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  add(el, children);
  return el;
}

// add appends children (see h) to el.
export function add(el, children) {
  for (const c of [children].flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// fmtBytes renders a size: "512 B", "12.3 KB", "4.5 MB".
export function fmtBytes(n) {
  if (typeof n !== 'number' || !isFinite(n)) return '–';
  if (n < 1024) return `${n} B`;
  const units = ['KB', 'MB', 'GB', 'TB'];
  let v = n / 1024;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) { v /= 1024; i++; }
  return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

// fmtInt renders an integer with thousands separators.
export function fmtInt(n) {
  return typeof n === 'number' && isFinite(n) ? n.toLocaleString('en-US') : '–';
}

// fmtTokens renders a token count: "950", "12.4k", "1.2M".
export function fmtTokens(n) {
  if (typeof n !== 'number' || !isFinite(n) || n <= 0) return '–';
  if (n < 1000) return String(n);
  if (n < 1e6) return `${(n / 1000).toFixed(n < 1e4 ? 1 : 0)}k`;
  return `${(n / 1e6).toFixed(1)}M`;
}

// time renders an ISO time as a <time> with a relative text ("5 min
// ago") and the exact local time as its title.
export function time(iso) {
  if (!iso) return h('span', { class: 'muted' }, '–');
  const d = new Date(iso);
  if (isNaN(d)) return h('span', {}, String(iso));
  return h('time', { datetime: d.toISOString(), title: d.toLocaleString() }, relTime(d));
}

// relTime renders a date relative to now.
export function relTime(d) {
  const s = Math.round((Date.now() - d.getTime()) / 1000);
  const abs = Math.abs(s);
  const fut = s < 0;
  let t;
  if (abs < 45) t = 'seconds';
  else if (abs < 3600) t = `${Math.round(abs / 60)} min`;
  else if (abs < 86400) t = `${Math.round(abs / 3600)} h`;
  else if (abs < 86400 * 60) { const n = Math.round(abs / 86400); t = n === 1 ? '1 day' : `${n} days`; }
  else return d.toLocaleDateString();
  return fut ? `in ${t}` : `${t} ago`;
}

// seg encodes one path segment of an API URL.
export const seg = (s) => encodeURIComponent(String(s));

// PLACEHOLDER matches BrainSurgeon's placeholders in a text.
const PLACEHOLDER = /\[\[extracted-[^\]\s]{1,200}\]\]/g;

// textWithPlaceholders renders a text as text nodes, with each
// placeholder in a <mark>.
export function textWithPlaceholders(text) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(PLACEHOLDER)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    out.push(h('mark', { class: 'ph', title: 'Placeholder: the value is in the side store' }, m[0]));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

// longText renders a text in a <pre>, cut at limit characters with a
// button that shows the rest.
export function longText(text, limit = 1200) {
  const pre = h('pre', { class: 'text' });
  if (text.length <= limit) return add(pre, textWithPlaceholders(text));
  add(pre, textWithPlaceholders(text.slice(0, limit)));
  const more = h('button', { type: 'button', class: 'link' }, `Show all ${fmtInt(text.length)} characters`);
  const wrap = h('div', {}, pre, more);
  more.addEventListener('click', () => {
    pre.replaceChildren(...textWithPlaceholders(text));
    more.remove();
  });
  return wrap;
}
