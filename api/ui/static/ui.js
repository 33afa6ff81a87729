// Shared pieces of the page: the error toasts, the confirm dialog, error
// boxes and the read-only state.
import { h } from './dom.js';

// state is shared by the views.
export const state = {
  readonly: false,
  authRequired: false,
  refreshMS: 10000,
};

// errorText renders an error with its HTTP status.
export function errorText(err) {
  if (!err) return 'Unknown error';
  const status = err.status ? ` (HTTP ${err.status})` : '';
  return `${err.message || String(err)}${status}`;
}

// showError shows an error as a toast until it is dismissed: what was
// being done, then the server's message. The same message is not stacked.
export function showError(what, err) {
  // A missing or wrong key opens the key dialog, which shows the message.
  if (err && (err.status === 401 || (err.status === 403 && !(err.body && err.body.read_only)))) return;
  const box = document.getElementById('errors');
  const msg = `${what}: ${errorText(err)}`;
  for (const t of box.querySelectorAll('.toast')) {
    if (t.dataset.msg === msg) {
      const n = Number(t.dataset.count || 1) + 1;
      t.dataset.count = String(n);
      t.querySelector('.count').textContent = ` (×${n})`;
      return;
    }
  }
  const close = h('button', { type: 'button', class: 'ghost', 'aria-label': 'Dismiss this error' }, '×');
  const toast = h('div', { class: 'toast', dataset: { msg } },
    h('span', { class: 'msg' }, msg, h('span', { class: 'count' })), close);
  close.addEventListener('click', () => toast.remove());
  box.append(toast);
  while (box.children.length > 4) box.firstElementChild.remove();
}

// showOK shows a short success message that goes away by itself.
export function showOK(msg) {
  const box = document.getElementById('errors');
  const toast = h('div', { class: 'toast ok', role: 'status' }, h('span', { class: 'msg' }, msg));
  box.append(toast);
  setTimeout(() => toast.remove(), 4000);
}

// errorBox is an inline error: what failed and the server's message.
export function errorBox(what, err) {
  return h('div', { class: 'error-box', role: 'alert' }, `${what}: ${errorText(err)}`);
}

// confirmDialog asks a yes/no question in a modal dialog and resolves to
// true when confirmed.
export function confirmDialog(title, text, okLabel) {
  const dlg = document.getElementById('confirm-dialog');
  dlg.querySelector('#confirm-title').textContent = title;
  dlg.querySelector('#confirm-text').textContent = text;
  dlg.querySelector('#confirm-ok').textContent = okLabel;
  dlg.returnValue = '';
  return new Promise((resolve) => {
    dlg.addEventListener('close', () => resolve(dlg.returnValue === 'ok'), { once: true });
    dlg.showModal();
    dlg.querySelector('#confirm-cancel').focus();
  });
}

// writeButton is a button for an action that writes: disabled, with the
// reason, in read-only mode. onClick gets the button, which stays
// disabled while the returned promise runs.
export function writeButton(label, cls, onClick, attrs = {}) {
  const b = h('button', { type: 'button', class: cls, ...attrs }, label);
  if (state.readonly) {
    b.disabled = true;
    b.title = 'The server is in read-only mode (BRAINSURGEON_READONLY)';
    return b;
  }
  b.addEventListener('click', async () => {
    b.disabled = true;
    b.setAttribute('aria-busy', 'true');
    try { await onClick(b); } finally {
      b.disabled = false;
      b.removeAttribute('aria-busy');
    }
  });
  return b;
}
