// @ts-check
// The daemon's own state (GET /api/health): the page shown while it waits
// for OpenClaw to create the agents dir, the banner when the plugin's last
// calls failed, and where the API key is (GET /api/auth-info) for the key
// dialog.
import { api } from './api.js';
import { h } from './dom.js';

/**
 * @typedef {{at: string, method: string, path: string, status: number, error: string, fix: string}} PluginFailure
 * @typedef {{failing?: boolean, recent_failures?: PluginFailure[], failures_total?: number}} PluginHealth
 * @typedef {{status?: string, waiting_for?: string, agents_dir?: string, plugin?: PluginHealth}} Health
 */

/** @returns {Promise<Health|null>} the daemon's health, null when it does not answer */
export async function readHealth() {
  try { return await api('GET', '/api/health'); } catch { return null; }
}

/**
 * showWaiting replaces the page by the waiting message and reloads it
 * once the daemon serves the agents dir.
 * @param {Health} health
 */
export function showWaiting(health) {
  const main = document.getElementById('main');
  if (!main) return;
  main.replaceChildren(h('section', { class: 'waiting', id: 'waiting' },
    h('h1', {}, 'Waiting for OpenClaw'),
    health.agents_dir
      ? h('p', {}, 'BrainSurgeon is running and waiting for OpenClaw to create the agents dir ', h('code', {}, health.agents_dir), ' (it does at the first turn).')
      : h('p', {}, `BrainSurgeon is running and waiting for ${health.waiting_for || 'the agents dir'}.`),
    h('p', { class: 'muted' }, 'Start the OpenClaw gateway and send a first message; this page opens by itself as soon as the sessions are there.')));
  const timer = setInterval(async () => {
    const now = await readHealth();
    if (now && now.status !== 'waiting') {
      clearInterval(timer);
      location.reload();
    }
  }, 2000);
}

/**
 * showPluginBanner shows "the plugin's last calls failed" with the newest
 * failure and its fix while the plugin is failing, and hides it otherwise.
 * @param {Health|null} health
 */
export function showPluginBanner(health) {
  const b = document.getElementById('plugin-banner');
  if (!b) return;
  const p = health && health.plugin;
  const f = p && p.failing && p.recent_failures && p.recent_failures[0];
  if (!f) {
    b.hidden = true;
    b.replaceChildren();
    return;
  }
  const when = new Date(f.at);
  const total = Number(p.failures_total || 0);
  b.hidden = false;
  b.replaceChildren(
    h('strong', {}, 'The plugin\'s last calls failed: '),
    h('span', { class: 'plugin-error' }, `${f.error} (HTTP ${f.status}, ${f.method} ${f.path}, ${isNaN(when.getTime()) ? f.at : when.toLocaleTimeString()}`
      + `${total > 1 ? `; ${total} failed calls since the daemon started` : ''}).`),
    ' ',
    h('span', { class: 'plugin-fix' }, `Fix: ${f.fix}.`));
}

/**
 * showOpenBanner shows the server's notice that its API is open (no key is
 * required right now; GET /api/auth-info "open" and "open_notice", worded
 * by the server), and hides it otherwise.
 * @param {{open?: boolean, open_notice?: string}|null} info GET /api/auth-info
 */
export function showOpenBanner(info) {
  const b = document.getElementById('open-banner');
  if (!b) return;
  const notice = info && info.open === true && typeof info.open_notice === 'string' ? info.open_notice : '';
  b.hidden = notice === '';
  b.replaceChildren(notice);
}

/**
 * keyWhere fills the key dialog's sentence about where the key is: the key
 * file and how to read it, or BRAINSURGEON_API_KEYS.
 * @param {{key_file?: string, key_hint?: string}} info GET /api/auth-info
 */
export function keyWhere(info) {
  const el = document.getElementById('key-where');
  if (!el) return;
  if (info.key_file) {
    el.replaceChildren('The key is the first line of ', h('code', {}, info.key_file),
      ' on the machine running BrainSurgeon; read it with ', h('code', {}, `cat ${info.key_file}`), '.');
  } else if (info.key_hint) {
    el.replaceChildren(`${info.key_hint}.`);
  }
}
