// The trash: deleted sessions, restored or deleted for good.
import { api } from './api.js';
import { h, fmtBytes, time, seg } from './dom.js';
import { errorBox, showError, showOK, confirmDialog, writeButton } from './ui.js';

export function trashView() {
  const list = h('div', {}, h('p', { class: 'muted loading' }, 'Loading the trash…'));
  const el = h('section', { class: 'view' },
    h('div', { class: 'view-head' }, h('div', {}, h('h1', {}, 'Trash'),
      h('p', { class: 'muted small' }, 'Deleted sessions with their extracted values. Restore puts everything back, sessions.json entry included.'))),
    list);
  let last = '';

  async function refresh(force) {
    let data;
    try {
      data = await api('GET', '/api/trash');
    } catch (e) {
      last = '';
      list.replaceChildren(errorBox('Could not load the trash', e));
      return;
    }
    const sig = JSON.stringify(data);
    if (sig === last && !force) return;
    last = sig;
    render(itemsOf(data));
  }

  function render(items) {
    if (items.length === 0) {
      list.replaceChildren(h('div', { class: 'panel' }, h('p', { class: 'empty' }, 'The trash is empty.')));
      return;
    }
    list.replaceChildren(h('div', { class: 'panel' }, h('div', { class: 'table-wrap' }, h('table', {},
      h('thead', {}, h('tr', {},
        h('th', { scope: 'col' }, 'Session'), h('th', { scope: 'col' }, 'Trashed'), h('th', { scope: 'col' }, 'Expires'),
        h('th', { scope: 'col', class: 'num' }, 'Size'), h('th', { scope: 'col' }, 'Details'),
        h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'Actions')))),
      h('tbody', {}, items.map(row))))));
  }

  function row(it) {
    const name = `${it.agent}/${it.id}`;
    const extra = [h('dt', {}, 'files'), h('dd', {}, String(it.raw.files ?? '–'))];
    if (it.children > 0) extra.push(h('dt', {}, 'child sessions'), h('dd', {}, String(it.children)));
    if (it.raw.state && it.raw.state !== 'trashed') extra.push(h('dt', {}, 'state'), h('dd', {}, String(it.raw.state)));
    // The trash item's own id names it unambiguously (a session may have
    // been trashed more than once).
    const ref = `${seg(it.agent)}/${seg(it.raw.id ?? it.id)}`;
    return h('tr', { dataset: { session: it.id } },
      h('td', {}, h('strong', {}, it.agent), ' / ', h('code', {}, it.id)),
      h('td', {}, time(it.trashed)),
      h('td', {}, time(it.expires)),
      h('td', { class: 'num' }, it.size != null ? fmtBytes(it.size) : '–'),
      h('td', {}, h('dl', { class: 'kv' }, extra)),
      h('td', {}, h('div', { class: 'toolbar' },
        writeButton('Restore', 'primary', async () => {
          try {
            await api('POST', `/api/trash/${ref}/restore`);
            showOK(`Restored ${name}.`);
            await refresh(true);
          } catch (e) { showError(`Could not restore ${name}`, e); }
        }, { 'aria-label': `Restore ${name}` }),
        writeButton('Delete forever', 'danger', async () => {
          const ok = await confirmDialog('Delete for good?',
            `${name}, its transcript and its extracted values are deleted for good. This cannot be undone.`, 'Delete forever');
          if (!ok) return;
          try {
            await api('DELETE', `/api/trash/${ref}`);
            showOK(`Deleted ${name} for good.`);
            await refresh(true);
          } catch (e) { showError(`Could not delete ${name}`, e); }
        }, { 'aria-label': `Delete ${name} for good` }))));
  }

  return { el, refresh, title: 'Trash' };
}

// itemsOf reads the trash's answer: an array of items (package trash's
// Item: id, agent, session_id, trashed_at, expires_at, sessions, files,
// bytes).
function itemsOf(data) {
  const arr = Array.isArray(data) ? data : [];
  return arr.map((x) => ({
    raw: x,
    agent: x.agent ?? '?',
    id: x.session_id ?? x.id ?? '?',
    children: Array.isArray(x.sessions) ? Math.max(0, x.sessions.length - 1) : 0,
    trashed: x.trashed_at,
    expires: x.expires_at,
    size: x.bytes,
  }));
}

