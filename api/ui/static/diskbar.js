// The disk panel of the sessions page: per agent, a stacked bar of how
// its bytes on disk split into transcripts, our side storage, the host's
// leftovers and the rest (GET /api/disk), drawn as an inline SVG by this
// module (no chart library).
import { api } from './api.js';
import { h, fmtBytes, fmtInt } from './dom.js';
import { errorBox } from './ui.js';

const SVG = 'http://www.w3.org/2000/svg';

// PARTS are the bar's segments, in order.
const PARTS = [
  ['transcripts', 'Transcripts', 'The live transcripts (JSONL files, or the SQLite store)'],
  ['side', 'Side storage', 'Values BrainSurgeon moved out of the transcripts (extracted/)'],
  ['leftovers', 'Host leftovers', 'Locks, reset and deleted archives, backups, checkpoints, trajectories the host left'],
  ['other', 'Other', 'sessions.json, temporary and unknown files'],
];

function partTitle(label, p) {
  const kinds = (p.kinds || []).map((k) => `\n  ${k.kind}: ${fmtBytes(k.bytes)} in ${fmtInt(k.files)} file${k.files === 1 ? '' : 's'}`).join('');
  return `${label}: ${fmtBytes(p.bytes)} in ${fmtInt(p.files)} file${p.files === 1 ? '' : 's'}${kinds}`;
}

// diskBar returns the stacked bar of one agent, scaled so that a bar of
// scale bytes fills the width.
export function diskBar(a, scale) {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 1000 18');
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('class', 'disk-bar');
  svg.setAttribute('role', 'img');
  svg.setAttribute('aria-label', `${a.agent}: ` + PARTS.map(([k, label]) => `${label} ${fmtBytes(a[k].bytes)}`).join(', '));
  let x = 0;
  for (const [k, label] of PARTS) {
    const p = a[k];
    const w = scale > 0 ? (p.bytes / scale) * 1000 : 0;
    if (w <= 0) continue;
    const r = document.createElementNS(SVG, 'rect');
    r.setAttribute('x', x.toFixed(2));
    r.setAttribute('y', '0');
    r.setAttribute('width', Math.max(w, 1.5).toFixed(2)); // a tiny part stays visible
    r.setAttribute('height', '18');
    r.setAttribute('class', `seg seg-${k}`);
    r.setAttribute('data-part', k);
    r.setAttribute('data-bytes', p.bytes);
    const t = document.createElementNS(SVG, 'title');
    t.textContent = partTitle(label, p);
    r.append(t);
    svg.append(r);
    x += w;
  }
  return svg;
}

// diskPanel is the sessions page's disk panel, for one agent or all;
// refresh() reloads it.
export function diskPanel(agent) {
  const body = h('div', { class: 'panel-body' }, h('p', { class: 'muted loading' }, 'Measuring the disk…'));
  const el = h('section', { class: 'panel disk-panel', id: 'disk-panel', 'aria-labelledby': 'disk-title' },
    h('div', { class: 'panel-head' }, h('h2', { id: 'disk-title' }, 'Disk use'),
      h('span', { class: 'muted small' }, 'what each agent\'s bytes are')),
    body);
  let last = '';

  async function refresh() {
    let d;
    try {
      d = await api('GET', '/api/disk');
    } catch (e) {
      last = '';
      body.replaceChildren(errorBox('Could not measure the disk use', e));
      return;
    }
    const sig = JSON.stringify(d);
    if (sig === last) return;
    last = sig;
    const agents = (d.agents || []).filter((a) => !agent || a.agent === agent);
    if (agents.length === 0) {
      body.replaceChildren(h('p', { class: 'empty' }, 'No agent has files on disk.'));
      return;
    }
    const scale = agents.reduce((m, a) => Math.max(m, a.total), 0);
    const legend = h('p', { class: 'disk-legend small' },
      PARTS.map(([k, label, help]) => h('span', { class: `key seg-${k}`, title: help }, label)));
    const rows = agents.map((a) => h('div', { class: 'disk-row', dataset: { agent: a.agent } },
      h('div', { class: 'disk-name' }, h('b', {}, a.agent), h('span', { class: 'muted small' }, fmtBytes(a.total))),
      diskBar(a, scale),
      h('p', { class: 'disk-figures small muted' }, PARTS.map(([k, label]) =>
        h('span', { dataset: { part: k }, title: partTitle(label, a[k]) }, `${label.toLowerCase()} ${fmtBytes(a[k].bytes)}`)))));
    body.replaceChildren(legend, ...rows);
  }

  return { el, refresh };
}
