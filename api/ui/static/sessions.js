// The sessions list: every agent's sessions with their size and tokens.
import { api } from './api.js';
import { h, fmtBytes, fmtInt, fmtTokens, time, seg } from './dom.js';
import { healthPill } from './health.js';
import { errorBox, showError, showOK, confirmDialog, writeButton } from './ui.js';
import { diskPanel } from './diskbar.js';

export function sessionsView(query) {
  const agent = query.get('agent') || '';
  const cards = h('div', { class: 'cards', 'aria-label': 'Totals' });
  const list = h('div', {}, h('p', { class: 'muted loading' }, 'Loading sessions…'));
  const filter = h('select', { id: 'agent-filter' }, h('option', { value: '' }, 'All agents'));
  filter.addEventListener('change', () => {
    location.hash = filter.value ? `#/?agent=${seg(filter.value)}` : '#/';
  });
  const search = h('input', { type: 'search', id: 'session-filter', placeholder: 'id, key or label', autocomplete: 'off', spellcheck: 'false' });
  search.addEventListener('input', () => { if (lastData) render(lastData); });
  const runNote = h('div', { 'aria-live': 'polite' });
  // Agents whose whole list is shown (else the first ROWS sessions).
  const expanded = new Set();
  let lastData = null;
  const disk = diskPanel(agent);
  const el = h('section', { class: 'view' },
    h('div', { class: 'view-head' },
      h('div', {}, h('h1', {}, 'Sessions'),
        h('p', { class: 'muted small' }, 'Every agent\'s transcripts, their size and the tokens of their current context (as the context panel counts them).')),
      h('div', { class: 'toolbar' },
        h('label', { for: 'session-filter' }, 'Find'), search,
        h('label', { for: 'agent-filter' }, 'Agent'), filter,
        writeButton('Run pruning now', 'primary', async () => {
          try {
            const res = await api('POST', '/api/prune/run');
            runNote.replaceChildren(h('p', { class: 'note' }, pruneSummary(res.report)));
            await refresh(true);
          } catch (e) { showError('Could not run a pruning pass', e); }
        }))),
    runNote, cards, disk.el, list);

  let last = '';
  async function refresh(force) {
    loadAgents();
    let data;
    try {
      data = await api('GET', '/api/sessions' + (agent ? `?agent=${seg(agent)}` : ''));
    } catch (e) {
      last = '';
      list.replaceChildren(errorBox('Could not load the sessions', e));
      return;
    }
    const sig = JSON.stringify(data);
    if (sig === last && !force) return;
    last = sig;
    render(data);
    disk.refresh();
  }

  let lastAgents = '';
  async function loadAgents() {
    try {
      const data = await api('GET', '/api/agents');
      const sig = JSON.stringify(data);
      if (sig === lastAgents) return;
      lastAgents = sig;
      filter.replaceChildren(h('option', { value: '' }, 'All agents'),
        ...data.agents.map((a) => h('option', { value: a.agent, selected: a.agent === agent }, `${a.agent} (${a.sessions})`)));
      if (agent && !data.agents.some((a) => a.agent === agent)) {
        filter.append(h('option', { value: agent, selected: true }, agent));
      }
    } catch (e) { showError('Could not load the agents', e); }
  }

  function render(data) {
    lastData = data;
    const needle = search.value.trim().toLowerCase();
    const all = data.sessions || [];
    const sessions = needle ? all.filter((s) => [s.session_id, s.session_key, s.label, s.agent]
      .some((v) => v && String(v).toLowerCase().includes(needle))) : all;
    let tokens = 0;
    let extracted = 0;
    for (const s of sessions) { tokens += s.tokens || 0; extracted += s.extracted || 0; }
    cards.replaceChildren(
      card('Sessions', needle ? `${fmtInt(sessions.length)} of ${fmtInt(all.length)}` : fmtInt(data.total ?? all.length)),
      card('Total size', fmtBytes(needle ? sessions.reduce((n, s) => n + (s.size || 0), 0) : data.total_size)),
      card('Context tokens', fmtTokens(tokens), 'Sum over sessions of the current context, calibrated by the recorded usage'),
      card('Entries with extracted values', fmtInt(extracted)));
    if (sessions.length === 0) {
      list.replaceChildren(h('div', { class: 'panel' }, h('p', { class: 'empty' },
        needle ? `No session matches "${search.value.trim()}".`
          : agent ? `Agent ${agent} has no sessions.` : 'No sessions found in the agents directory.')));
      return;
    }
    const byAgent = new Map();
    for (const s of sessions) {
      if (!byAgent.has(s.agent)) byAgent.set(s.agent, []);
      byAgent.get(s.agent).push(s);
    }
    const panels = [];
    for (const [name, rows] of byAgent) {
      const size = rows.reduce((n, s) => n + (s.size || 0), 0);
      panels.push(h('section', { class: 'panel', 'aria-labelledby': `agent-${name}` },
        h('div', { class: 'panel-head' },
          h('h2', { id: `agent-${name}` }, name),
          h('span', { class: 'muted small' }, `${rows.length} session${rows.length === 1 ? '' : 's'} · ${fmtBytes(size)}`)),
        h('div', { class: 'table-wrap' }, table(expanded.has(name) ? rows : rows.slice(0, ROWS))),
        rows.length > ROWS && !expanded.has(name) ? h('div', { class: 'panel-body' },
          h('button', { type: 'button', onclick: () => { expanded.add(name); render(lastData); } },
            `Show all ${fmtInt(rows.length)} sessions of ${name}`)) : null));
    }
    list.replaceChildren(...panels);
  }

  function table(rows) {
    return h('table', {},
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col' }, 'Session'), h('th', { scope: 'col' }, 'Health'), h('th', { scope: 'col' }, 'Status'), h('th', { scope: 'col' }, 'Updated'),
        h('th', { scope: 'col', class: 'num' }, 'Size'), h('th', { scope: 'col', class: 'num' }, 'Context tokens'),
        h('th', { scope: 'col', class: 'num' }, 'Entries'), h('th', { scope: 'col', class: 'num' }, 'Tool calls'),
        h('th', { scope: 'col', class: 'num' }, 'Extracted'), h('th', { scope: 'col' }, 'Backend'),
        h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')))),
      h('tbody', {}, rows.map(row)));
  }

  function row(s) {
    const href = `#/session/${seg(s.agent)}/${seg(s.session_id)}` + (s.backend === 'sqlite' ? '?backend=sqlite' : '');
    const title = s.label || s.session_key || s.session_id;
    return h('tr', { dataset: { session: s.session_id } },
      h('td', {}, h('a', { class: 'session-link', href }, title),
        title !== s.session_id ? h('span', { class: 'id' }, s.session_id) : null,
        s.error ? h('span', { class: 'pill err', title: s.error }, 'unreadable') : null),
      h('td', { class: 'health-cell' }, healthPill(s)),
      h('td', {}, s.status ? h('span', { class: `pill ${s.status}` }, s.status) : h('span', { class: 'muted' }, '–')),
      h('td', {}, time(s.updated)),
      h('td', { class: 'num' }, fmtBytes(s.size)),
      h('td', { class: 'num', title: `${s.tokens ? `stored transcript: ${fmtInt(s.tokens)} tokens in the next turn's context (estimated)` : 'Context not measured'}; last turn's recorded usage: ${s.last_usage_tokens ? fmtInt(s.last_usage_tokens) : 'none'}` +
        (s.engine_view ? `; sent to the model (last view of the context engine): ${fmtInt(s.engine_view.predicted_tokens)} tokens predicted` : '') },
      s.engine_view ? h('span', { class: 'engine-view-cell' }, h('span', { title: 'Sent to the model (last view of the context engine)' }, fmtTokens(s.engine_view.predicted_tokens)),
        h('span', { class: 'muted small' }, ` sent · ${fmtTokens(s.tokens)} stored`)) : fmtTokens(s.tokens)),
      h('td', { class: 'num' }, fmtInt(s.entries)),
      h('td', { class: 'num' }, fmtInt(s.tool_calls)),
      h('td', { class: 'num' }, s.extracted ? h('span', { class: 'pill count' }, fmtInt(s.extracted)) : '0'),
      h('td', {}, h('span', { class: 'pill' }, s.backend)),
      h('td', {}, s.backend === 'sqlite' ? null : writeButton('Delete', 'danger', async () => {
        const ok = await confirmDialog('Move this session to the trash?',
          `${s.agent}/${s.session_id} and its extracted values move to the trash, from where they can be restored.`, 'Move to trash');
        if (!ok) return;
        try {
          await api('DELETE', `/api/sessions/${seg(s.agent)}/${seg(s.session_id)}`);
          showOK(`Moved ${s.agent}/${s.session_id} to the trash.`);
          await refresh(true);
        } catch (e) { showError(`Could not delete ${s.agent}/${s.session_id}`, e); }
      }, { 'aria-label': `Move session ${s.session_id} to the trash` })));
  }

  return { el, refresh, title: 'Sessions' };
}

// ROWS is how many sessions of an agent are listed before "Show all".
const ROWS = 100;

function card(label, value, title) {
  return h('div', { class: 'card', title }, h('div', { class: 'label' }, label), h('div', { class: 'value' }, value));
}

// pruneSummary describes a pruning pass's report in one sentence.
export function pruneSummary(rep) {
  if (!rep || !Array.isArray(rep.sessions)) return 'Pruning pass done.';
  const by = {};
  let saved = 0;
  let values = 0;
  for (const s of rep.sessions) {
    by[s.status] = (by[s.status] || 0) + 1;
    if (s.result) { saved += s.result.bytes_saved || 0; values += s.result.values || 0; }
  }
  const parts = Object.entries(by).map(([k, n]) => `${n} ${k.replaceAll('_', ' ')}`);
  return `Pruning pass done over ${rep.sessions.length} sessions (${parts.join(', ') || 'none'}): ` +
    `${fmtInt(values)} values extracted, ${fmtBytes(saved)} saved` + (rep.failed ? `, ${rep.failed} failed.` : '.');
}
