// The usage chart of the session view: the context size turn by turn, as
// the provider recorded it (GET …/usage), drawn as an inline SVG by this
// module (no chart library), with the compactions, extraction passes and
// restores marked where they happened and what each saved.
import { api } from './api.js';
import { h, fmtBytes, fmtInt } from './dom.js';
import { errorBox } from './ui.js';

const SVG = 'http://www.w3.org/2000/svg';
const W = 800;
const H = 220;
const PAD = { l: 56, r: 16, t: 18, b: 30 };

// KINDS are the marker kinds, as people read them.
const KINDS = {
  compaction: { label: 'Compaction', cls: 'mk-compaction' },
  extraction: { label: 'Extraction', cls: 'mk-extraction' },
  restore: { label: 'Restore', cls: 'mk-restore' },
};

// s creates an SVG element with attributes and children.
function s(tag, attrs, ...children) {
  const el = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v != null) el.setAttribute(k, String(v));
  for (const c of children.flat()) if (c != null) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return el;
}

// niceTicks returns the y axis' ticks for values up to v: multiples of a
// step of 1, 2 or 5 times a power of ten, from 0 to the first multiple at
// or above v, three to six intervals, so that every label is a round
// number (0, 500, 1,000, … rather than 1.3k, 2.5k, 3.8k).
export function niceTicks(v) {
  if (!(v > 0)) return [0, 1];
  let step = 1;
  for (let p = Math.max(1, 10 ** Math.floor(Math.log10(v / 6))); ; p *= 10) {
    const m = [1, 2, 5].find((k) => Math.ceil(v / (k * p)) <= 6);
    if (m) { step = m * p; break; }
  }
  const n = Math.max(Math.ceil(v / step - 1e-9), 1);
  return Array.from({ length: n + 1 }, (_, i) => i * step);
}

// tickText writes a tick exactly: whole numbers below 10,000, else
// thousands (or millions) with only the decimals the step needs.
function tickText(t, step) {
  if (t === 0) return '0';
  if (t < 10000 && Number.isInteger(t)) return fmtInt(t);
  const [div, unit] = t >= 1e6 ? [1e6, 'M'] : [1e3, 'k'];
  const dec = step % div === 0 ? 0 : (step * 10) % div === 0 ? 1 : 2;
  return `${(t / div).toFixed(dec)}${unit}`;
}

// markerText says what a step did, for its tooltip and the list.
export function markerText(m) {
  const when = m.timestamp ? new Date(m.timestamp).toLocaleString() : 'time unknown';
  switch (m.kind) {
    case 'compaction':
      return `Compaction ${m.entry_id || ''} (${when}): ` + (m.tokens_before
        ? (m.tokens_after ? `${fmtInt(m.tokens_before)} → ${fmtInt(m.tokens_after)} tokens` : `${fmtInt(m.tokens_before)} tokens before (the size after is not recorded)`) +
          (m.saved_tokens ? `, ${fmtInt(m.saved_tokens)} saved` : '')
        : 'tokens not recorded');
    case 'extraction':
      return `Extraction (${when}): ${fmtInt(m.values)} values of ${fmtInt(m.entries)} entries, ${fmtBytes(m.saved_bytes || 0)} out of the transcript`;
    case 'restore':
      return `Restore of ${m.entry_id} (${when})` + (m.saved_bytes ? `: ${fmtBytes(-m.saved_bytes)} back in the transcript` : '');
  }
  return `${m.kind} (${when})`;
}

// drawUsage returns the SVG of a usage series.
export function drawUsage(u) {
  const pts = u.points || [];
  const n = pts.length;
  const ticks = niceTicks([...pts.map((p) => p.tokens), ...(u.markers || []).map((m) => m.tokens_before || 0)].reduce((a, b) => Math.max(a, b), 0));
  const top = ticks[ticks.length - 1];
  const step = ticks[1];
  const iw = W - PAD.l - PAD.r;
  const ih = H - PAD.t - PAD.b;
  // Turn k (1-based) sits at x(k); a step after turn k at x(k + 0.5).
  const x = (k) => PAD.l + (n <= 1 ? iw / 2 : ((k - 1) / (n - 1)) * iw);
  const xm = (after) => (n <= 1 ? PAD.l + iw / 2 : Math.min(PAD.l + iw, Math.max(PAD.l, x(after + 0.5))));
  const y = (t) => PAD.t + ih - (t / top) * ih;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'usage-chart', id: 'usage-chart', role: 'img', 'data-points': n,
    'aria-label': `Context size over ${n} recorded turns, from ${fmtInt(pts[0].tokens)} to ${fmtInt(pts[n - 1].tokens)} tokens` });
  // Grid and y axis.
  for (const t of ticks) {
    const yy = y(t);
    svg.append(s('line', { x1: PAD.l, x2: W - PAD.r, y1: yy, y2: yy, class: 'grid' }),
      s('text', { x: PAD.l - 6, y: yy + 4, class: 'axis y-tick', 'text-anchor': 'end', 'data-tokens': t }, tickText(t, step)));
  }
  // x axis: first, middle and last turn.
  const xticks = [...new Set([1, Math.ceil(n / 2), n])];
  for (const k of xticks) svg.append(s('text', { x: x(k), y: H - PAD.b + 16, class: 'axis', 'text-anchor': 'middle' }, `turn ${fmtInt(k)}`));
  // Markers under the line.
  const marks = s('g', { class: 'markers' });
  const seen = new Map(); // after_turn → markers drawn there: each next one is nudged aside
  for (const m of u.markers || []) {
    const k = KINDS[m.kind] || { label: m.kind, cls: '' };
    const nth = seen.get(m.after_turn) || 0;
    seen.set(m.after_turn, nth + 1);
    const base = xm(m.after_turn);
    const xx = base + (base > PAD.l + iw / 2 ? -1 : 1) * nth * 8;
    marks.append(s('g', { class: `marker ${k.cls}`, 'data-kind': m.kind, 'data-after-turn': m.after_turn },
      s('title', {}, markerText(m)),
      s('line', { x1: xx, x2: xx, y1: PAD.t, y2: PAD.t + ih }),
      s('path', { d: `M${xx - 5},${PAD.t - 9} L${xx + 5},${PAD.t - 9} L${xx},${PAD.t - 1} Z` })));
  }
  svg.append(marks);
  // The area and the line.
  const line = pts.map((p, i) => `${i ? 'L' : 'M'}${x(p.turn || i + 1).toFixed(1)},${y(p.tokens).toFixed(1)}`).join(' ');
  if (n > 1) svg.append(s('path', { d: `${line} L${x(n).toFixed(1)},${y(0)} L${x(1).toFixed(1)},${y(0)} Z`, class: 'area' }));
  svg.append(s('path', { d: line, class: 'line' }));
  // One point per recorded turn.
  const dots = s('g', { class: 'points' });
  const r = n > 400 ? 1.5 : n > 100 ? 2.2 : 3;
  pts.forEach((p, i) => {
    const when = p.timestamp ? ` · ${new Date(p.timestamp).toLocaleString()}` : '';
    dots.append(s('circle', { cx: x(p.turn || i + 1).toFixed(1), cy: y(p.tokens).toFixed(1), r, class: 'usage-point',
      'data-turn': p.turn, 'data-tokens': p.tokens, 'data-entry-id': p.entry_id },
    s('title', {}, `Turn ${fmtInt(p.turn)} · ${fmtInt(p.tokens)} tokens of context${when}`)));
  });
  svg.append(dots);
  return svg;
}

// usagePanel is the session view's panel of the chart; refresh(force)
// reloads the series.
export function usagePanel(base, withB) {
  const body = h('div', { class: 'panel-body' }, h('p', { class: 'muted loading' }, 'Loading the context size…'));
  const el = h('section', { class: 'panel usage-panel', id: 'usage-panel', 'aria-labelledby': 'usage-title' },
    h('div', { class: 'panel-head' }, h('h2', { id: 'usage-title' }, 'Context size by turn'),
      h('span', { class: 'muted small' }, 'recorded usage: input + cache read + cache write')),
    body);
  let last = '';

  async function refresh(force) {
    let u;
    try {
      u = await api('GET', withB(`${base}/usage`));
    } catch (e) {
      last = '';
      body.replaceChildren(errorBox('Could not load the context size by turn', e));
      return;
    }
    const sig = JSON.stringify(u);
    if (sig === last && !force) return;
    last = sig;
    body.replaceChildren(...render(u));
  }

  function render(u) {
    const pts = u.points || [];
    if (pts.length === 0) {
      return [h('p', { class: 'empty', id: 'usage-empty' }, 'This session records no usage: no assistant turn on its active path reports its tokens.')];
    }
    const counts = {};
    for (const m of u.markers || []) counts[m.kind] = (counts[m.kind] || 0) + 1;
    const peak = pts.reduce((a, p) => Math.max(a, p.tokens), 0);
    const legend = h('p', { class: 'usage-legend small' },
      h('span', { class: 'key line', title: 'The input each turn\'s model request carried, as the provider recorded it (input + cache read + cache write; the output is not counted)' },
        `${fmtInt(pts.length)} recorded turns; input per request: peak ${fmtInt(peak)}, last ${fmtInt(pts[pts.length - 1].tokens)} tokens`),
      Object.entries(KINDS).map(([kind, k]) => h('span', { class: `key ${k.cls}` }, `${k.label}s: ${fmtInt(counts[kind] || 0)}`)));
    const steps = (u.markers || []).slice(-50).reverse();
    const list = steps.length ? h('details', { class: 'usage-steps' },
      h('summary', {}, `What each step did (${fmtInt((u.markers || []).length)})`),
      h('ul', {}, steps.map((m) => h('li', { dataset: { kind: m.kind } }, markerText(m), ` — after turn ${fmtInt(m.after_turn)}`)))) : null;
    // Only nodes: replaceChildren would write a null as the text "null".
    return [h('div', { class: 'chart-wrap' }, drawUsage(u)), legend, list].filter(Boolean);
  }

  return { el, refresh };
}
