// The session view: a session's entries, page by page, with their role
// and type, an "extracted" badge per extracted value (click: its size and
// first 200 characters, then the rest on demand), restore buttons and the
// entry's "_extractable" setting.
import { api } from './api.js';
import { h, add, fmtBytes, fmtInt, fmtTokens, time, seg, longText } from './dom.js';
import { errorBox, showError, showOK, confirmDialog, writeButton, state } from './ui.js';
import { compactionPanel } from './compaction.js';
import { usagePanel } from './usagechart.js';
import { healthPill, problemsPanel } from './health.js';

const PAGE = 200;
const PREVIEW = 200;

export function sessionView(agent, id, query) {
  const offset = Math.max(0, parseInt(query.get('offset') || '0', 10) || 0);
  const backend = query.get('backend') || '';
  const only = query.get('only') === 'extracted';
  const base = `/api/sessions/${seg(agent)}/${seg(id)}`;
  const bq = backend ? `backend=${seg(backend)}` : '';
  const withB = (p, q = '') => p + (q || bq ? '?' + [q, bq].filter(Boolean).join('&') : '');

  // Open value panels survive refreshes: key → {preview, full}.
  const open = new Map();
  // Notes shown under an entry after an action: entry id → node.
  const notes = new Map();

  const head = h('div', {}, h('p', { class: 'muted loading' }, 'Loading session…'));
  const side = h('div', { class: 'side-summary', 'aria-live': 'polite' });
  const doctor = h('div', { class: 'doctor' });
  const bar = h('div', { class: 'entries-bar' });
  const list = h('ol', { class: 'entries', 'aria-label': 'Entries' });
  const ctx = compactionPanel(base, withB);
  const usage = usagePanel(base, withB);
  const el = h('section', { class: 'view' }, head, side, doctor, ctx.el, usage.el, bar, list);
  let last = '';
  let data = null;

  async function refresh(force) {
    let d;
    try {
      d = await api('GET', withB(base, `offset=${offset}&limit=${PAGE}`));
    } catch (e) {
      last = '';
      head.replaceChildren(crumbs(), errorBox(`Could not load session ${agent}/${id}`, e));
      bar.replaceChildren();
      list.replaceChildren();
      return;
    }
    const sig = JSON.stringify(d);
    if (sig === last && !force) return;
    last = sig;
    data = d;
    render();
    loadContext();
    ctx.refresh(force);
    usage.refresh(force);
  }

  // loadContext shows what the side store holds for the session: values
  // out of the transcript, values lost (retention, damage) and queued
  // write-backs (GET …/context).
  async function loadContext() {
    let c;
    try {
      c = await api('GET', withB(`${base}/context`));
    } catch (e) {
      side.replaceChildren(errorBox('Could not read the session\'s extracted values', e));
      return;
    }
    const lost = c.lost_values || 0;
    const items = [
      h('span', {}, h('b', {}, fmtInt(c.entries_with_placeholders)), ' entries hold placeholders'),
      h('span', {}, h('b', {}, fmtBytes(c.extracted_bytes)), ' out of the transcript'),
      h('span', {}, h('b', {}, fmtInt(c.context_messages)), data && data.engine_view ? ' messages in the stored transcript\'s context' : ' messages in the model\'s context'),
      c.pending ? h('span', { class: 'pill running' }, `${fmtInt(c.pending)} write-back${c.pending === 1 ? '' : 's'} queued until idle`) : null,
      lost ? h('span', { class: 'pill err', title: (c.lost || []).map((p) => `${p.entry_id} ${p.path}: ${p.kind} ${p.detail}`).join('\n') },
        `${fmtInt(lost)} value${lost === 1 ? '' : 's'} lost`) : h('span', { class: 'pill ok' }, 'every value restorable'),
    ];
    side.replaceChildren(h('p', { class: 'side-line' }, items));
  }

  // engineLine shows what the context engine did to the model's view of
  // the session (the detail's "engine" member, absent when it never
  // served the session), with its degradation warning.
  function engineLine(e) {
    if (!e) return null;
    const n = (k, one, many) => `${fmtInt(k)} ${k === 1 ? one : many}`;
    return h('div', { class: 'engine-status', id: 'engine-status' },
      viewLine(e.view),
      h('p', { class: 'side-line' },
        h('span', {}, h('b', {}, 'Context engine: '),
          `${n(e.collapsed, 'value', 'values')} collapsed (${fmtInt(e.collapsed_chars)} chars), `,
          `${n(e.summaries, 'summary', 'summaries')} (levels ${fmtInt(e.levels)}), `,
          `${n(e.compactions, 'compaction', 'compactions')}`),
        e.risk ? h('span', { class: `pill risk-${e.risk}` }, `risk ${e.risk}`) : null),
      e.warning ? h('p', { class: 'note warn' }, e.warning) : null,
      viewsTable(e.last_views));
  }

  // viewsTable lists the context engine's last views of the session (the
  // detail's engine.last_views, newest first): when, the host's messages
  // and the view's, the layers applied, the characters the host sent and
  // the view held, whether the cached prefix changed, the time the engine
  // took and why the host's messages passed through, if they did.
  function viewsTable(views) {
    if (!views || !views.length) return null;
    const col = (label, cls) => h('th', { scope: 'col', class: cls || null }, label);
    const ms = (x) => (x > 0 ? x.toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 }) : '–');
    const row = (v) => h('tr', { dataset: { turn: String(v.turn) } },
      h('td', {}, time(v.at), h('span', { class: 'muted small' }, ` · view ${fmtInt(v.turn)}`)),
      h('td', { class: 'num' }, v.passthrough ? fmtInt(v.messages) : `${fmtInt(v.messages)} → ${fmtInt(v.view_messages)}`),
      h('td', {}, (v.layers || []).join(', ') || '–'),
      h('td', { class: 'num' }, v.host_chars ? `${fmtInt(v.host_chars)} → ${fmtInt(v.view_chars)}` : '–'),
      h('td', {}, v.prefix_changed ? h('span', { class: 'pill warn' }, 'changed') : 'kept'),
      h('td', { class: 'num' }, ms(v.elapsed_ms)),
      h('td', { class: 'reason' }, v.passthrough ? h('span', { title: v.passthrough }, v.passthrough) : '–'));
    return h('div', { class: 'engine-views table-wrap' },
      h('h3', {}, 'Last views sent to the model'),
      h('table', { class: 'inspect-table', id: 'engine-views' },
        h('thead', {}, h('tr', {}, col('Time'), col('Messages (host → view)', 'num'), col('Layers'), col('Characters (host → view)', 'num'),
          col('Cached prefix'), col('Engine ms', 'num'), col('Pass-through reason'))),
        h('tbody', {}, views.map(row))));
  }

  // viewLine says what the context engine's last view sent the model,
  // beside what the host's messages held (the detail's "engine_view").
  function viewLine(v) {
    if (!v) return null;
    const parts = [
      h('span', {}, h('b', {}, 'Sent to the model (last view): '),
        h('span', { id: 'engine-view-tokens', dataset: { tokens: String(v.predicted_tokens) } }, `${fmtInt(v.predicted_tokens)} tokens predicted`),
        v.measured_turn ? `, ${fmtInt(v.measured_tokens)} measured (view ${fmtInt(v.measured_turn)})` : ', not measured yet'),
      v.passthrough ? h('span', { class: 'pill warn', title: v.passthrough }, 'passed through unchanged')
        : h('span', {}, `${fmtInt(v.messages)} of the host's ${fmtInt(v.host_messages)} messages` +
          (v.host_chars ? `, ${fmtInt(v.chars)} of their ${fmtInt(v.host_chars)} characters` : '')),
      h('span', { class: 'muted' }, 'view ', fmtInt(v.turn), ', ', time(v.at)),
    ];
    return h('p', { class: 'side-line engine-view', id: 'engine-view' }, parts);
  }

  function crumbs() {
    return h('nav', { class: 'crumbs', 'aria-label': 'Breadcrumb' },
      h('a', { href: '#/' }, 'Sessions'), ' › ', h('a', { href: `#/?agent=${seg(agent)}` }, agent), ' › ', id);
  }

  function render() {
    const s = data.session;
    const title = s.label || s.session_key || s.session_id;
    head.replaceChildren(
      crumbs(),
      h('div', { class: 'view-head' },
        h('div', {}, h('h1', {}, title), title !== s.session_id ? h('span', { class: 'id' }, s.session_id) : null),
        h('div', { class: 'toolbar' },
          writeButton('Restore all values', '', restoreAll, { title: 'Put every extracted value of this session back into the transcript' }),
          s.backend === 'sqlite' ? null : writeButton('Move to trash', 'danger', trash))),
      h('div', { class: 'panel' }, h('div', { class: 'panel-body' }, h('dl', { class: 'meta' },
        meta('Agent', s.agent), meta('Backend', s.backend), meta('Health', healthPill(s)), meta('Status', s.status || '–'),
        meta('Size', fmtBytes(s.size)),
        data.engine_view ? meta('Sent to the model (last view)', `${fmtInt(data.engine_view.predicted_tokens)} tokens (predicted)`,
          'The size of the last view BrainSurgeon\'s context engine sent the model: system prompt, tools and the prompt included') : null,
        meta(data.engine_view ? 'Stored transcript (next turn, estimated)' : 'Next turn\'s context (estimated)', s.tokens ? `${fmtInt(s.tokens)} tokens` : 'not measured',
          'The stored transcript\'s current context counted as the next model request would carry it (calibrated by the recorded usage; system prompt and tools included)'),
        meta('Last turn\'s recorded usage', s.last_usage_tokens ? `${fmtInt(s.last_usage_tokens)} tokens` : 'none recorded',
          'What the latest assistant message recorded as its usage (input, output and cache), as the provider billed it'),
        meta('Entries', fmtInt(s.entries), 'Entry lines of the transcript; the list below also shows the session header line'), meta('Messages', fmtInt(s.messages)), meta('Tool calls', fmtInt(s.tool_calls)),
        meta('With extracted values', fmtInt(s.extracted)), meta('Updated', time(s.updated)),
        s.malformed ? meta('Malformed lines', fmtInt(s.malformed)) : null,
        s.session_key ? meta('Session key', s.session_key) : null),
        engineLine(data.engine))));
    doctor.replaceChildren(...[problemsPanel(data.doctor, `${s.agent}/${s.session_id}`, data.doctor_error)].filter((n) => n));

    const total = data.total;
    const from = total ? data.offset + 1 : 0;
    const to = Math.min(data.offset + data.entries.length, total);
    const shown = data.entries.filter((e) => !only || e.extracted);
    // The list shows every line but blank ones: the entries, the session
    // header and malformed lines, which the header's count leaves out.
    const others = total - s.entries - (s.malformed || 0);
    const lines = [`${fmtInt(s.entries)} entr${s.entries === 1 ? 'y' : 'ies'}`,
      others > 0 ? `the session header` : null,
      s.malformed ? `${fmtInt(s.malformed)} malformed line${s.malformed === 1 ? '' : 's'}` : null].filter(Boolean);
    const heading = only
      ? `${fmtInt(shown.length)} line${shown.length === 1 ? '' : 's'} with extracted values among lines ${fmtInt(from)}–${fmtInt(to)} of ${fmtInt(total)}`
      : `Lines ${fmtInt(from)}–${fmtInt(to)} of ${fmtInt(total)}`;
    const onlyBox = h('input', { type: 'checkbox', id: 'only-extracted', checked: only });
    onlyBox.addEventListener('change', () => go(offset, onlyBox.checked));
    bar.replaceChildren(
      h('h2', { id: 'entries-heading', title: lines.join(', ') }, heading,
        lines.length > 1 ? h('span', { class: 'muted small' }, ` (${lines.join(', ')})`) : null),
      h('div', { class: 'toolbar' },
        h('label', { class: 'switch-label', for: 'only-extracted' }, onlyBox, 'Only entries with extracted values'),
        h('div', { class: 'pager' },
          h('button', { type: 'button', disabled: offset === 0, onclick: () => go(Math.max(0, offset - PAGE), only) }, '← Previous'),
          h('button', { type: 'button', disabled: to >= total, onclick: () => go(offset + PAGE, only) }, 'Next →'))));

    if (shown.length === 0) {
      list.replaceChildren(h('li', { class: 'panel' }, h('p', { class: 'empty' },
        only ? 'No entry of this page has extracted values.' : 'This page has no entries.')));
      return;
    }
    list.replaceChildren(...shown.map(entryItem));
  }

  function go(off, onlyExtracted) {
    const q = new URLSearchParams();
    if (off) q.set('offset', String(off));
    if (backend) q.set('backend', backend);
    if (onlyExtracted) q.set('only', 'extracted');
    const qs = q.toString();
    location.hash = `#/session/${seg(agent)}/${seg(id)}${qs ? '?' + qs : ''}`;
  }

  function entryItem(ev) {
    const entry = ev.entry && typeof ev.entry === 'object' ? ev.entry : null;
    const role = ev.role || (entry && entry.message && entry.message.role) || '';
    const li = h('li', {
      class: `entry${role ? ' role-' + role : ''}${ev.extracted ? ' has-extracted' : ''}`,
      dataset: { entryId: ev.id || '', line: String(ev.line) },
      'aria-label': `Line ${ev.line}: ${role || ev.type || ev.kind}`,
    });
    const toolName = entry && entry.message && entry.message.toolName;
    add(li, h('div', { class: 'entry-head' },
      h('span', { class: 'line' }, `#${ev.line}`),
      role ? h('span', { class: 'role' }, role) : null,
      ev.type && ev.type !== 'message' ? h('span', { class: 'pill' }, ev.type) : null,
      ev.custom_type ? h('span', { class: 'pill' }, ev.custom_type) : null,
      toolName ? h('span', { class: 'pill' }, toolName) : null,
      ev.extracted ? h('span', { class: 'pill count' }, `${ev.extracted_paths ? ev.extracted_paths.length : 1} extracted`) : null,
      entry && entry._restored ? h('span', { class: 'pill ok', title: `Restored at ${entry._restored}` }, 'restored') : null,
      entry && entry._redacted ? h('span', { class: 'pill', title: 'A restore call, redacted after it was answered' }, 'redacted') : null,
      h('span', { class: 'spacer' }),
      ev.timestamp ? time(ev.timestamp) : null,
      h('span', { class: 'muted' }, fmtBytes(ev.size)),
      ev.id ? h('code', { class: 'muted', title: 'Entry id' }, ev.id) : null));

    if (ev.kind === 'malformed' || !entry) {
      add(li, h('div', { class: 'blocks' }, h('div', { class: 'block' },
        h('div', { class: 'block-kind' }, 'malformed line (kept as it is)'),
        ev.error ? h('p', { class: 'field-error' }, ev.error) : null,
        longText(ev.raw_text || ''))));
      return li;
    }

    const paths = ev.extracted_paths || [];
    const placed = new Set();
    const blocks = blocksOf(entry);
    const blocksEl = h('div', { class: 'blocks' });
    for (const b of blocks) {
      const mine = b.ptr ? paths.filter((p) => p === b.ptr || p.startsWith(b.ptr + '/')) : [];
      mine.forEach((p) => placed.add(p));
      const kind = h('div', { class: 'block-kind' }, b.kind);
      const box = h('div', { class: `block ${b.cls || ''}` }, kind);
      if (b.text) add(box, longText(b.text));
      if (mine.length) add(box, badges(ev, mine));
      blocksEl.append(box);
    }
    const rest = paths.filter((p) => !placed.has(p));
    if (blocks.length) li.append(blocksEl);
    if (rest.length) li.append(badges(ev, rest));

    // _extractable matters for what reaches the model: messages (and any
    // entry that already has it).
    const modelEntry = ev.type === 'message' || ev.type === 'custom_message' || ev.extracted ||
      Object.hasOwn(entry, '_extractable');
    if (ev.id && modelEntry) li.append(actions(ev, entry));
    const note = notes.get(ev.id);
    if (note) li.append(note);
    li.append(h('details', { class: 'raw' }, h('summary', {}, 'Raw JSON'),
      h('pre', {}, JSON.stringify(entry, null, 2))));
    return li;
  }

  function badges(ev, paths) {
    const wrap = h('div', { class: 'badges-wrap' });
    const row = h('div', { class: 'badges' });
    wrap.append(row);
    for (const p of paths) {
      const key = `${ev.id}\u0000${p}`;
      const panelID = `value-${cssID(ev.id)}-${cssID(p)}`;
      const btn = h('button', {
        type: 'button', class: 'badge-extracted', 'aria-expanded': 'false', 'aria-controls': panelID,
        title: `Show the extracted value at ${p}`, dataset: { path: p },
      }, 'extracted', h('span', { class: 'path' }, p));
      const panel = h('div', { class: 'value-panel', id: panelID, hidden: true, 'aria-live': 'polite' });
      row.append(btn);
      wrap.append(panel);
      btn.addEventListener('click', () => toggleValue(ev, p, key, btn, panel));
      if (open.has(key)) {
        btn.setAttribute('aria-expanded', 'true');
        panel.hidden = false;
        renderValue(ev, p, key, panel);
      }
    }
    return wrap;
  }

  async function toggleValue(ev, path, key, btn, panel) {
    if (open.has(key)) {
      open.delete(key);
      btn.setAttribute('aria-expanded', 'false');
      panel.hidden = true;
      panel.replaceChildren();
      return;
    }
    open.set(key, { preview: null, full: null, error: null });
    btn.setAttribute('aria-expanded', 'true');
    panel.hidden = false;
    panel.replaceChildren(h('p', { class: 'muted' }, 'Loading the extracted value…'));
    const st = open.get(key);
    try {
      st.preview = await fetchValue(ev.id, path, PREVIEW);
    } catch (e) {
      st.error = e;
    }
    if (open.get(key) === st) renderValue(ev, path, key, panel);
  }

  async function fetchValue(entryID, path, preview) {
    const q = `key=${encodeURIComponent(path)}` + (preview ? `&preview=${preview}` : '');
    const res = await api('GET', withB(`${base}/entries/${seg(entryID)}/extracted`, q));
    const vals = res.values || [];
    const v = vals.find((x) => x.path === path) || vals[0];
    if (!v) throw new Error(`the answer holds no value for ${path}`);
    return { ...v, trigger_type: res.trigger_type };
  }

  function renderValue(ev, path, key, panel) {
    const st = open.get(key);
    if (!st) return;
    if (st.error) {
      panel.replaceChildren(errorBox('Could not load the extracted value', st.error),
        h('button', { type: 'button', class: 'link', onclick: () => { open.delete(key); panel.hidden = true; } }, 'Close'));
      return;
    }
    const v = st.full || st.preview;
    if (!v) { panel.replaceChildren(h('p', { class: 'muted' }, 'Loading the extracted value…')); return; }
    const parts = [
      h('span', {}, h('b', {}, v.trigger || v.trigger_type || 'value')),
      h('span', {}, 'size ', h('b', { class: 'value-size', dataset: { bytes: String(v.size) } }, fmtBytes(v.size)), ` (${fmtInt(v.size)} bytes)`),
      h('span', {}, h('b', {}, fmtInt(v.chars)), ' characters'),
      v.extracted_at ? h('span', {}, 'extracted ', time(v.extracted_at)) : null,
      v.sha256 ? h('span', { title: `sha256 ${v.sha256}` }, 'sha256 ', h('code', {}, v.sha256.slice(0, 12) + '…')) : null,
    ];
    const text = h('pre', { class: 'value-text' }, v.content);
    const kids = [h('div', { class: 'value-meta' }, parts)];
    if (v.error) kids.push(h('p', { class: 'note err' }, `This value cannot be trusted: ${v.error}`));
    kids.push(text);
    if (v.truncated && !st.full) {
      kids.push(h('p', { class: 'muted small' }, `First ${fmtInt(PREVIEW)} of ${fmtInt(v.chars)} characters.`));
      const more = h('button', { type: 'button', class: 'show-all' }, `Show all ${fmtInt(v.chars)} characters`);
      more.addEventListener('click', async () => {
        more.disabled = true;
        more.textContent = 'Loading…';
        try {
          st.full = await fetchValue(ev.id, path, 0);
          renderValue(ev, path, key, panel);
        } catch (e) {
          more.disabled = false;
          more.textContent = `Show all ${fmtInt(v.chars)} characters`;
          panel.append(errorBox('Could not load the whole value', e));
        }
      });
      kids.push(more);
    }
    panel.replaceChildren(...kids);
  }

  function actions(ev, entry) {
    const bar = h('div', { class: 'entry-actions' });
    if (ev.extracted) {
      bar.append(writeButton('Restore', 'primary restore', async () => {
        try {
          const res = await api('POST', withB(`${base}/entries/${seg(ev.id)}/restore`), {});
          notes.set(ev.id, restoreNote(res));
          for (const k of [...open.keys()]) if (k.startsWith(ev.id + '\u0000')) open.delete(k);
          showOK(res.applied ? `Restored ${ev.id}.` : `Restore of ${ev.id} queued.`);
          await refresh(true);
        } catch (e) {
          showError(`Could not restore ${ev.id}`, e);
        }
      }, { title: 'Put the extracted values back into this entry' }));
    }
    const cur = entry && Object.hasOwn(entry, '_extractable') ? String(entry._extractable) : '';
    const selID = `extractable-${cssID(ev.id)}`;
    const sel = h('select', { id: selID, class: 'extractable', disabled: state.readonly },
      h('option', { value: '', disabled: true, selected: cur === '' }, 'as the policy decides'),
      h('option', { value: 'true', selected: cur === 'true' }, 'always (true)'),
      h('option', { value: 'false', selected: cur === 'false' }, 'never (false)'),
      /^\d+$/.test(cur) ? h('option', { value: cur, selected: true }, `kept for ${cur} messages`) : null);
    sel.addEventListener('change', async () => {
      const value = /^\d+$/.test(sel.value) ? Number(sel.value) : sel.value === 'true';
      sel.disabled = true;
      try {
        const res = await api('POST', withB(`${base}/entries/${seg(ev.id)}/extractable`), { value });
        notes.set(ev.id, h('p', { class: res.queued ? 'note warn' : 'note' },
          res.queued ? `_extractable: ${res.value} is queued: it is written when the session is idle.`
            : `_extractable is now ${res.value}${res.previous ? ` (was ${res.previous})` : ''}.`));
        await refresh(true);
      } catch (e) {
        showError(`Could not set _extractable of ${ev.id}`, e);
        sel.value = cur;
      } finally {
        sel.disabled = state.readonly;
      }
    });
    bar.append(h('label', { for: selID, title: '"_extractable" of this entry: true forces extraction (outside keep_recent), false prevents it' }, 'Extractable'), sel);
    return bar;
  }

  async function restoreAll() {
    const ok = await confirmDialog('Restore every extracted value?',
      `All extracted values of ${agent}/${id} go back into the transcript. The side store keeps its copies.`, 'Restore all');
    if (!ok) return;
    try {
      const res = await api('POST', withB(`${base}/restore`), {});
      const lost = (res.lost || []).length;
      showOK(`Restored ${fmtInt(res.values)} values (${fmtBytes(res.bytes)}) in ${fmtInt(res.entries)} entries` +
        (lost ? `; ${lost} could not be restored.` : '.'));
      open.clear();
      await refresh(true);
    } catch (e) { showError(`Could not restore ${agent}/${id}`, e); }
  }

  async function trash() {
    const ok = await confirmDialog('Move this session to the trash?',
      `${agent}/${id} and its extracted values move to the trash, from where they can be restored.`, 'Move to trash');
    if (!ok) return;
    try {
      await api('DELETE', withB(base));
      showOK(`Moved ${agent}/${id} to the trash.`);
      location.hash = '#/trash';
    } catch (e) { showError(`Could not delete ${agent}/${id}`, e); }
  }

  return { el, refresh, title: `Session ${id}` };
}

function meta(label, value, title) {
  return h('div', title ? { title } : {}, h('dt', {}, label), h('dd', {}, value));
}

// restoreNote describes a restore's answer under its entry.
function restoreNote(res) {
  const keys = res.keys_restored || [];
  const bytes = Object.values(res.sizes_bytes || {}).reduce((a, b) => a + b, 0);
  const lines = [];
  if (res.applied) lines.push(`Restored ${keys.length} value${keys.length === 1 ? '' : 's'} (${fmtBytes(bytes)}) into the transcript.`);
  else if (res.queued) lines.push(`The content is ready; writing it back is queued until the session is idle.`);
  else lines.push('Nothing was written back.');
  if (res.redacted) lines.push('The restore call was redacted.');
  if (res.suggestion) lines.push(res.suggestion);
  if (res.warning) lines.push(`Warning: ${res.warning}`);
  if (res.write_back_error) lines.push(`Write-back failed: ${res.write_back_error}`);
  const bad = res.warning || res.write_back_error;
  return h('p', { class: `note restore-note${bad || res.queued ? ' warn' : ''}`, role: 'status' }, lines.join(' '));
}

// cssID turns any text into a string usable in an id attribute.
function cssID(s) {
  return String(s).replace(/[^A-Za-z0-9_-]/g, (c) => '_' + c.charCodeAt(0).toString(16));
}

// blocksOf describes what an entry says, as blocks of text, each with the
// JSON Pointer of the value it shows (so that badges sit on their block).
export function blocksOf(entry) {
  const out = [];
  const str = (v) => (typeof v === 'string' ? v : JSON.stringify(v, null, 2));
  const m = entry.message;
  if (m && typeof m === 'object') {
    if (typeof m.content === 'string') out.push({ kind: 'text', text: m.content, ptr: '/message/content' });
    else if (Array.isArray(m.content)) {
      m.content.forEach((b, i) => {
        const ptr = `/message/content/${i}`;
        if (!b || typeof b !== 'object') { out.push({ kind: 'value', text: str(b), ptr }); return; }
        switch (b.type) {
          case 'text': out.push({ kind: 'text', text: str(b.text ?? ''), ptr }); break;
          case 'thinking': out.push({ kind: 'thinking', text: str(b.thinking ?? ''), ptr, cls: 'thinking' }); break;
          case 'toolCall': out.push({ kind: `tool call · ${b.name || '?'}`, text: str(b.arguments ?? {}), ptr }); break;
          case 'image': out.push({ kind: 'image', text: `[${b.mimeType || 'image'}, ${fmtBytes((b.data || '').length)} of base64]`, ptr }); break;
          default: out.push({ kind: b.type || 'block', text: str(b), ptr });
        }
      });
    }
    for (const k of ['output', 'command', 'errorMessage']) {
      if (typeof m[k] === 'string' && m[k]) out.push({ kind: k, text: m[k], ptr: `/message/${k}` });
    }
    if (m.details !== undefined && m.details !== null && typeof m.details !== 'boolean') {
      out.push({ kind: 'details', text: str(m.details), ptr: '/message/details' });
    }
    if (m.usage && typeof m.usage === 'object') {
      const u = m.usage;
      const total = u.totalTokens || (u.input || 0) + (u.output || 0) + (u.cacheRead || 0) + (u.cacheWrite || 0);
      if (total) out.push({ kind: `usage · ${fmtTokens(total)} tokens`, text: '', ptr: '/message/usage' });
    }
    return out;
  }
  if (typeof entry.summary === 'string') out.push({ kind: 'summary', text: entry.summary, ptr: '/summary' });
  for (const k of ['content', 'output', 'text', 'thinking', 'input', 'data']) {
    if (entry[k] !== undefined && entry[k] !== null) out.push({ kind: k, text: str(entry[k]), ptr: `/${k}` });
  }
  if (out.length === 0) {
    const rest = {};
    for (const [k, v] of Object.entries(entry)) {
      if (!['id', 'parentId', 'timestamp', 'type', '__id'].includes(k)) rest[k] = v;
    }
    const t = JSON.stringify(rest);
    if (t !== '{}') out.push({ kind: entry.type || 'entry', text: t.length > 600 ? t.slice(0, 600) + '…' : t, ptr: '' });
  }
  return out;
}

