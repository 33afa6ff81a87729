// BrainSurgeon web UI: boot, routing (location.hash), auto-refresh and the
// API key dialog. The views are in sessions.js, session.js, settings.js
// and trash.js.
import { api, getKey, setKey, onAuthNeeded } from './api.js';
import { h } from './dom.js';
import { state, showError, errorText } from './ui.js';
import { sessionsView } from './sessions.js';
import { sessionView } from './session.js';
import { settingsView } from './settings.js';
import { trashView } from './trash.js';
import { readHealth, showWaiting, showPluginBanner, showOpenBanner, keyWhere } from './daemon.js';

let view = null;
let timer = null;
let refreshing = false;

// route shows the view named by location.hash:
//   #/ (or #/?agent=A)          the sessions
//   #/session/A/ID[?offset=N]   one session
//   #/settings, #/trash
function route() {
  const raw = location.hash.replace(/^#/, '') || '/';
  const [path, qs] = raw.split('?', 2);
  const query = new URLSearchParams(qs || '');
  const parts = path.split('/').filter(Boolean).map((p) => { try { return decodeURIComponent(p); } catch { return p; } });
  let nav = 'sessions';
  if (parts[0] === 'session' && parts.length === 3) {
    view = sessionView(parts[1], parts[2], query);
  } else if (parts[0] === 'settings') {
    view = settingsView(); nav = 'settings';
  } else if (parts[0] === 'trash') {
    view = trashView(); nav = 'trash';
  } else {
    view = sessionsView(query);
  }
  for (const a of document.querySelectorAll('[data-nav]')) {
    if (a.dataset.nav === nav) a.setAttribute('aria-current', 'page'); else a.removeAttribute('aria-current');
  }
  document.title = `${view.title} · BrainSurgeon`;
  const main = document.getElementById('main');
  main.replaceChildren(view.el);
  window.scrollTo(0, 0);
  runRefresh(true);
}

async function runRefresh(force) {
  const v = view;
  if (!v || (refreshing && !force)) return;
  refreshing = true;
  try {
    readHealth().then(showPluginBanner);
    await v.refresh(force);
    if (v === view) {
      document.getElementById('refresh-status').textContent = `Updated ${new Date().toLocaleTimeString()}`;
    }
  } catch (e) {
    showError('Could not refresh', e);
  } finally {
    refreshing = false;
  }
}

// schedule refreshes the current view every AUTO_REFRESH_MS while the
// tab is visible and auto-refresh is on.
function schedule() {
  clearInterval(timer);
  const box = document.getElementById('auto-refresh');
  box.parentElement.title = `Refresh every ${Math.round(state.refreshMS / 100) / 10} s (AUTO_REFRESH_MS)`;
  if (!box.checked) return;
  timer = setInterval(() => {
    if (!document.hidden && !document.querySelector('dialog[open]')) runRefresh(false);
  }, state.refreshMS);
}

// The API key dialog.
function setupKeyDialog() {
  const dlg = document.getElementById('key-dialog');
  const form = document.getElementById('key-form');
  const input = document.getElementById('key-input');
  const err = document.getElementById('key-error');
  const btn = document.getElementById('key-button');
  btn.addEventListener('click', () => openKeyDialog(''));
  document.getElementById('key-cancel').addEventListener('click', () => dlg.close());
  document.getElementById('key-forget').addEventListener('click', () => {
    setKey('');
    input.value = '';
    err.textContent = 'The key is forgotten in this tab.';
    updateKeyButton();
  });
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    const key = input.value.trim();
    if (!key) { err.textContent = 'Enter the API key.'; input.setAttribute('aria-invalid', 'true'); return; }
    const old = getKey();
    setKey(key);
    try {
      await api('GET', '/api/agents'); // any keyed endpoint checks the key
    } catch (ex) {
      setKey(old);
      err.textContent = `This key was refused: ${errorText(ex)}`;
      input.setAttribute('aria-invalid', 'true');
      input.select();
      return;
    }
    input.removeAttribute('aria-invalid');
    err.textContent = '';
    input.value = '';
    dlg.close();
    updateKeyButton();
    runRefresh(true);
  });
  onAuthNeeded((e) => {
    // A key is required now (a key file may have appeared since the page
    // loaded): the API is no longer open.
    state.authRequired = true;
    showOpenBanner(null);
    updateKeyButton();
    openKeyDialog(getKey() ? `The server refused the key: ${e.message}` : '');
  });
}

function openKeyDialog(message) {
  const dlg = document.getElementById('key-dialog');
  document.getElementById('key-error').textContent = message;
  if (!dlg.open) dlg.showModal();
  document.getElementById('key-input').focus();
}

function updateKeyButton() {
  const btn = document.getElementById('key-button');
  btn.hidden = !state.authRequired;
  btn.textContent = getKey() ? 'API key ✓' : 'API key';
}

async function boot() {
  setupKeyDialog();
  const health = await readHealth();
  if (health && health.status === 'waiting') {
    showWaiting(health);
    return;
  }
  showPluginBanner(health);
  try {
    const info = await api('GET', '/api/auth-info');
    state.authRequired = Boolean(info.auth_required);
    state.readonly = Boolean(info.read_only);
    keyWhere(info);
    showOpenBanner(info);
  } catch (e) {
    showError('Could not reach the API', e);
  }
  try {
    const env = await api('GET', '/api/config/env');
    if (Number(env.auto_refresh_interval_ms) > 0) state.refreshMS = Math.max(1000, Number(env.auto_refresh_interval_ms));
    state.readonly = state.readonly || Boolean(env.read_only);
  } catch (e) {
    showError('Could not read the UI settings (/api/config/env)', e);
  }
  if (state.readonly) {
    const b = document.getElementById('banner');
    b.hidden = false;
    b.replaceChildren(h('span', {}, 'Read-only mode: this server shows your sessions but changes nothing (BRAINSURGEON_READONLY).'));
  }
  updateKeyButton();
  document.getElementById('auto-refresh').addEventListener('change', schedule);
  window.addEventListener('hashchange', route);
  if (state.authRequired && !getKey()) openKeyDialog('');
  route();
  schedule();
}

boot();
