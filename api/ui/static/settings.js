// The settings panel: the runtime config (GET/POST /api/config) with the
// validation message of each field, and the scheduler's jobs.
import { api } from './api.js';
import { h, time, fmtBytes, fmtInt } from './dom.js';
import { errorBox, showError, showOK, writeButton, state } from './ui.js';
import { pruneSummary } from './sessions.js';

const TRIGGERS = ['thinking', 'tool_result', 'tool_call', 'image', 'assistant', 'user', 'system'];

// GROUPS lists the fields the panel knows, with their help. A field the
// server sends that is not listed here is shown under "Other" as JSON.
const GROUPS = [
  ['Automatic pruning', [
    { name: 'enabled', type: 'bool', label: 'Enabled', help: 'Master switch. While off, nothing rewrites your sessions.' },
    { name: 'auto_cron', type: 'text', label: 'Schedule (cron)', help: 'When passes run, e.g. */2 * * * * (every two minutes).' },
    { name: 'idle_seconds', type: 'int', label: 'Idle before editing (seconds)', help: 'A session is edited only after being left alone this long (the prompt-cache lifetime).' },
    { name: 'min_saving_tokens', type: 'int', label: 'Minimum saving (tokens)', help: 'A pass that would save less leaves the session alone.' },
  ]],
  ['What to extract', [
    { name: 'trigger_types', type: 'set', options: TRIGGERS, label: 'Value types', help: 'Kinds of values that may move to the side store.' },
    { name: 'min_value_length', type: 'int', label: 'Minimum value length (bytes)', help: 'Values shorter than this many bytes (of their JSON text; for an image, the whole block) stay in the transcript.' },
    { name: 'keep_recent', type: 'int', label: 'Keep recent messages', help: 'The last N messages are never extracted.' },
    { name: 'age_threshold_hours', type: 'float', label: 'Age threshold (hours)', help: 'Entries younger than this stay; 0 means no protection by age.' },
    { name: 'preview_chars', type: 'int', label: 'Preview before placeholder (characters)', help: 'Characters kept in front of each placeholder; 0 keeps none.' },
  ]],
  ['Plugin offload at the source', [
    { name: 'source_offload_above_chars', type: 'int', label: 'Offload results above (characters)', help: 'The OpenClaw plugin stores a tool result whose text is longer than this at the source and the transcript gets a placeholder (at least 1000).' },
    { name: 'source_preview_chars', type: 'int', label: 'Placeholder preview (characters)', help: 'Head and tail of an offloaded result its placeholder shows, each (at most a quarter of the text); 0 shows none.' },
  ]],
  ['Restore', [
    { name: 'keep_after_restore_seconds', type: 'int', label: 'Protect after restore (seconds)', help: 'A restored entry is not extracted again for this long.' },
    { name: 'keep_purge_control_calls', type: 'bool', label: 'Keep restore calls', help: 'Keep the agent\'s purge_control calls verbatim instead of redacting them.' },
  ]],
  ['Retention', [
    { name: 'retention', type: 'text', label: 'Keep extracted values for', help: 'A duration from 30m to 52w, such as 24h, 7d or 1d12h.' },
    { name: 'retention_scope', type: 'select', options: [['all', 'all expired values'], ['orphans', 'only values no placeholder points to']], label: 'Retention deletes', help: '"orphans" never deletes a value a live placeholder still needs.' },
    { name: 'retention_cron', type: 'text', label: 'Retention schedule (cron)', help: 'When retention runs, e.g. 0 */6 * * *.' },
  ]],
  ['Doctor', [
    { name: 'doctor_schedule', type: 'text', label: 'Doctor report schedule (cron)', help: 'When every session is diagnosed and the host\'s leftovers are counted, into the log (nothing is changed), e.g. 17 3 * * *; empty turns it off.' },
  ]],
];
const READONLY_FIELDS = new Set(['last_run_at', 'last_retention_run_at']);
const KNOWN = new Set(GROUPS.flatMap(([, fs]) => fs.map((f) => f.name)));

export function settingsView() {
  const formBox = h('div', {}, h('p', { class: 'muted loading' }, 'Loading the config…'));
  const jobsBox = h('div', { class: 'panel-body jobs' }, h('p', { class: 'muted' }, 'Loading…'));
  const runNote = h('div', { 'aria-live': 'polite' });
  const el = h('section', { class: 'view' },
    h('div', { class: 'view-head' }, h('div', {}, h('h1', {}, 'Settings'),
      h('p', { class: 'muted small' }, 'The runtime config, saved in .brainsurgeon/config.json. Changes apply at once.'))),
    h('div', { class: 'settings-stack' },
      h('div', {},
        h('section', { class: 'panel jobs-panel', 'aria-labelledby': 'jobs-title' },
          h('div', { class: 'panel-head' }, h('h2', { id: 'jobs-title' }, 'Scheduled jobs')),
          jobsBox,
          h('div', { class: 'panel-body toolbar' },
            writeButton('Run pruning now', 'primary', async () => {
              try {
                const res = await api('POST', '/api/prune/run');
                runNote.replaceChildren(h('p', { class: 'note' }, pruneSummary(res.report)));
                refresh(true);
              } catch (e) { showError('Could not run a pruning pass', e); }
            }),
            writeButton('Run retention now', '', async () => {
              try {
                const res = await api('POST', '/api/retention/run');
                const r = res.report || {};
                runNote.replaceChildren(h('p', { class: r.errors ? 'note warn' : 'note' },
                  `Retention done: ${fmtInt(r.cleaned)} values deleted (${fmtBytes(r.bytes)}), ${fmtInt(r.errors)} errors.`));
                refresh(true);
              } catch (e) { showError('Could not run retention', e); }
            })),
          h('div', { class: 'panel-body' }, runNote))),
      formBox));

  let cfg = null;        // the config the form shows
  let dirty = false;
  let lastCfg = '';
  const inputs = new Map(); // field → {get(), set(v), input, err}

  async function refresh(force) {
    loadJobs();
    let c;
    try {
      c = await api('GET', '/api/config');
    } catch (e) {
      lastCfg = '';
      formBox.replaceChildren(errorBox('Could not load the config', e));
      return;
    }
    const sig = JSON.stringify(c);
    if (sig === lastCfg && !force) return;
    lastCfg = sig;
    if (dirty && cfg) { updateLastRuns(c); return; } // never overwrite what the user is typing
    cfg = c;
    renderForm();
  }

  async function loadJobs() {
    try {
      jobsBox.replaceChildren(...renderJobs(await api('GET', '/api/scheduler/status')));
    } catch (e) {
      jobsBox.replaceChildren(errorBox('Could not load the scheduler status', e));
    }
  }

  function renderForm() {
    inputs.clear();
    dirty = false;
    const status = h('p', { id: 'settings-status', class: 'muted', 'aria-live': 'polite' });
    const form = h('form', { id: 'settings-form', novalidate: true });
    for (const [title, fields] of GROUPS) {
      const fs = h('fieldset', {}, h('legend', {}, title));
      for (const f of fields) if (Object.hasOwn(cfg, f.name)) fs.append(field(f, cfg[f.name]));
      form.append(fs);
    }
    const extra = Object.keys(cfg).filter((k) => !KNOWN.has(k) && !READONLY_FIELDS.has(k));
    if (extra.length) {
      const fs = h('fieldset', {}, h('legend', {}, 'Other'));
      for (const k of extra) fs.append(field({ name: k, type: 'json', label: k, help: 'JSON value.' }, cfg[k]));
      form.append(fs);
    }
    form.append(h('fieldset', {}, h('legend', {}, 'Last runs'), h('dl', { class: 'kv', id: 'last-runs' }, lastRuns(cfg))));
    const save = h('button', { type: 'submit', class: 'primary', disabled: state.readonly, title: state.readonly ? 'The server is in read-only mode' : null }, 'Save settings');
    const reset = h('button', { type: 'button', class: 'ghost', onclick: () => { cfg && renderForm(); } }, 'Discard changes');
    form.append(h('div', { class: 'form-actions' }, save, reset, status));
    form.addEventListener('input', () => { dirty = true; status.textContent = 'Unsaved changes.'; });
    form.addEventListener('change', () => { dirty = true; status.textContent = 'Unsaved changes.'; });
    form.addEventListener('submit', (e) => { e.preventDefault(); submit(save, status); });
    formBox.replaceChildren(form);
  }

  function updateLastRuns(c) {
    const dl = formBox.querySelector('#last-runs');
    if (dl) dl.replaceChildren(...lastRuns(c));
  }

  function field(f, value) {
    const id = `cfg-${f.name}`;
    const errID = `err-${f.name}`;
    const helpID = `help-${f.name}`;
    const err = h('p', { class: 'field-error', id: errID, 'aria-live': 'polite' });
    let control;
    let get;
    let input;
    switch (f.type) {
      case 'bool':
        input = h('input', { type: 'checkbox', id, name: f.name, checked: value === true, 'aria-describedby': `${helpID} ${errID}` });
        control = h('label', { class: 'switch-label' }, input, value ? 'on' : 'off');
        input.addEventListener('change', () => { control.lastChild.textContent = input.checked ? 'on' : 'off'; });
        get = () => input.checked;
        break;
      case 'set': {
        const opts = [...f.options, ...(Array.isArray(value) ? value.filter((v) => !f.options.includes(v)) : [])];
        const boxes = opts.map((o) => h('input', { type: 'checkbox', name: f.name, value: o, id: `${id}-${o}`, checked: Array.isArray(value) && value.includes(o) }));
        input = h('fieldset', { class: 'checks', id, 'aria-describedby': `${helpID} ${errID}` },
          h('legend', { class: 'sr-only' }, f.label),
          boxes.map((b) => h('label', { for: b.id }, b, b.value)));
        control = input;
        get = () => boxes.filter((b) => b.checked).map((b) => b.value);
        break;
      }
      case 'select':
        input = h('select', { id, name: f.name, 'aria-describedby': `${helpID} ${errID}` },
          f.options.map(([v, t]) => h('option', { value: v, selected: v === value }, t)),
          f.options.some(([v]) => v === value) ? null : h('option', { value, selected: true }, String(value)));
        control = input;
        get = () => input.value;
        break;
      case 'int':
      case 'float':
        input = h('input', { type: 'text', inputmode: f.type === 'int' ? 'numeric' : 'decimal', id, name: f.name, value: String(value), autocomplete: 'off', 'aria-describedby': `${helpID} ${errID}` });
        control = input;
        // A number is sent as a number; anything else as typed, so that
        // the server's message says what is wrong with it.
        get = () => {
          const t = input.value.trim();
          return /^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(t) ? Number(t) : t;
        };
        break;
      case 'json':
        input = h('input', { type: 'text', id, name: f.name, value: JSON.stringify(value), autocomplete: 'off', 'aria-describedby': `${helpID} ${errID}` });
        control = input;
        get = () => { try { return JSON.parse(input.value); } catch { return input.value; } };
        break;
      default:
        input = h('input', { type: 'text', id, name: f.name, value: value == null ? '' : String(value), autocomplete: 'off', spellcheck: 'false', 'aria-describedby': `${helpID} ${errID}` });
        control = input;
        get = () => input.value;
    }
    inputs.set(f.name, { get, input, err, initial: JSON.stringify(value) });
    const labelEl = f.type === 'set' ? h('span', { class: 'label', id: `${id}-label` }, f.label) : h('label', { for: id }, f.label);
    if (f.type === 'set') input.setAttribute('aria-labelledby', `${id}-label`);
    return h('div', { class: 'field', dataset: { field: f.name } },
      labelEl,
      h('p', { class: 'help', id: helpID }, f.help),
      h('div', { class: 'control' }, control, err));
  }

  async function submit(save, status) {
    const patch = {};
    for (const [name, x] of inputs) {
      const v = x.get();
      if (JSON.stringify(v) !== x.initial) patch[name] = v;
    }
    for (const x of inputs.values()) { x.err.textContent = ''; x.input.removeAttribute('aria-invalid'); }
    if (Object.keys(patch).length === 0) { status.textContent = 'Nothing changed.'; return; }
    save.disabled = true;
    status.textContent = 'Saving…';
    try {
      const c = await api('POST', '/api/config', patch);
      cfg = c;
      lastCfg = JSON.stringify(c);
      renderForm();
      const st = formBox.querySelector('#settings-status');
      st.textContent = `Saved ${Object.keys(patch).join(', ')} at ${new Date().toLocaleTimeString()}.`;
      st.className = 'saved';
      showOK('Settings saved.');
    } catch (e) {
      save.disabled = false;
      const fields = e.body && e.body.fields && typeof e.body.fields === 'object' ? e.body.fields : null;
      let first = null;
      const unplaced = [];
      if (fields) {
        for (const [name, msg] of Object.entries(fields)) {
          const x = inputs.get(name);
          if (!x) { unplaced.push(`${name}: ${msg}`); continue; }
          x.err.textContent = msg;
          x.input.setAttribute('aria-invalid', 'true');
          first = first || x.input;
        }
      }
      status.replaceChildren(fields
        ? h('span', { class: 'field-error', role: 'alert' }, `Not saved: ${Object.keys(fields).length} field${Object.keys(fields).length === 1 ? '' : 's'} need${Object.keys(fields).length === 1 ? 's' : ''} attention.` + (unplaced.length ? ' ' + unplaced.join('; ') : ''))
        : h('span', { class: 'field-error', role: 'alert' }, `Not saved: ${e.message}${e.status ? ` (HTTP ${e.status})` : ''}`));
      if (first) first.focus();
      if (!fields) showError('Could not save the settings', e);
    }
  }

  return { el, refresh, title: 'Settings' };
}

function lastRuns(c) {
  return [
    h('dt', {}, 'Last pruning run'), h('dd', {}, c.last_run_at ? time(c.last_run_at) : 'none yet'),
    h('dt', {}, 'Last retention run'), h('dd', {}, c.last_retention_run_at ? time(c.last_retention_run_at) : 'none yet'),
  ];
}

// renderJobs shows the scheduler's status (GET /api/scheduler/status) as
// a table people read: one row per job with its schedule (the cron text),
// its next run, its last run and the last result (ok with its counts, or
// the error message). The daemon sends the jobs as members "prune" and
// "retention" (a server may send a "jobs" list instead).
export function renderJobs(st) {
  const jobs = jobList(st);
  if (!jobs) return [h('pre', { class: 'text' }, JSON.stringify(st, null, 2))];
  const out = [];
  const pills = [];
  if (typeof st.enabled === 'boolean') pills.push(h('span', { class: st.enabled ? 'pill ok' : 'pill' }, st.enabled ? 'pruning enabled' : 'pruning disabled'));
  if (st.read_only) pills.push(h('span', { class: 'pill warn' }, 'read-only: nothing is scheduled'));
  if (typeof st.active === 'boolean') pills.push(h('span', { class: st.active ? 'pill ok' : 'pill' }, st.active ? 'active' : 'inactive'));
  if (pills.length) out.push(h('p', { class: 'pills' }, pills));
  if (jobs.length === 0) { out.push(h('p', { class: 'muted' }, 'No scheduled jobs.')); return out; }
  const rows = jobs.map((j) => h('tr', { dataset: { job: j.name || '' } },
    h('th', { scope: 'row' }, JOB_NAMES[j.name] || j.name || 'job'),
    h('td', { class: 'schedule' }, (j.cron || j.expression) ? h('code', {}, j.cron || j.expression) : h('span', { class: 'muted' }, '–')),
    h('td', { class: 'next-run' }, j.running ? h('span', { class: 'pill ok' }, 'running now')
      : j.next_run_at ? time(j.next_run_at) : h('span', { class: 'muted' }, j.scheduled === false ? 'not scheduled' : '–')),
    h('td', { class: 'last-run' }, lastRunOf(j)),
    h('td', { class: 'last-result' }, lastResult(j))));
  out.push(h('div', { class: 'table-wrap' }, h('table', { class: 'jobs-table' },
    h('thead', {}, h('tr', {}, ['Job', 'Schedule', 'Next run', 'Last run', 'Last result'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, rows))));
  return out;
}

// JOB_NAMES are the daemon's job names as people say them.
const JOB_NAMES = { prune: 'Pruning', retention: 'Retention', doctor: 'Doctor report' };

// jobList returns the jobs of a scheduler status, or null when it has
// none the panel can read.
function jobList(st) {
  if (!st || typeof st !== 'object') return null;
  if (Array.isArray(st.jobs)) return st.jobs;
  const jobs = Object.values(st).filter((v) => v && typeof v === 'object' && !Array.isArray(v) && ('cron' in v || 'expression' in v));
  return jobs.length || Object.hasOwn(st, 'enabled') ? jobs : null;
}

// lastRunOf is the time of a job's last run: the last one this process
// finished, else the one the config remembers.
function lastRunOf(j) {
  const t = j.last_finished_at || j.last_run_at || j.last_run;
  return t ? time(t) : h('span', { class: 'muted' }, 'none yet');
}

// lastResult says how a job's last run ended: its error, or "ok" with its
// counts.
function lastResult(j) {
  if (j.last_error) return h('span', { class: 'field-error', title: j.last_error }, `error: ${j.last_error}`);
  const r = j.last_result;
  if (r == null) return h('span', { class: 'muted' }, (j.last_run_at || j.last_run) ? 'not run since the server started' : '–');
  if (typeof r !== 'object') return String(r);
  if (r.disabled) return h('span', { class: 'muted' }, 'skipped: pruning is disabled');
  const parts = [];
  if ('sessions' in r && 'values' in r) { // a pruning run
    parts.push(`${fmtInt(r.sessions)} sessions`);
    if (r.extracted) parts.push(`${fmtInt(r.extracted)} rewritten`);
    parts.push(`${fmtInt(r.values)} values, ${fmtBytes(r.bytes_saved || 0)} saved`);
    if (r.busy) parts.push(`${fmtInt(r.busy)} busy`);
    if (r.write_backs) parts.push(`${fmtInt(r.write_backs)} write-backs`);
  } else if ('broken' in r) { // a doctor report
    parts.push(`${fmtInt(r.sessions)} sessions`, `${fmtInt(r.broken)} broken`, `${fmtInt(r.warn)} to look at`);
    if (r.leftovers_scanned) parts.push(`${fmtInt(r.leftover_files)} leftovers, ${fmtBytes(r.leftover_bytes || 0)} (${fmtInt(r.unique_files)} unique)`);
  } else if ('cleaned' in r) { // a retention run
    parts.push(`${fmtInt(r.cleaned)} values deleted, ${fmtBytes(r.bytes || 0)}`);
  } else {
    return h('code', {}, JSON.stringify(r));
  }
  const failed = (r.failed || 0) + (typeof r.errors === 'number' ? r.errors : 0);
  const errs = Array.isArray(r.errors) ? r.errors : [];
  if (failed || errs.length || r.stopped) {
    return h('span', { class: 'warn', title: errs.join('\n') || null },
      `${r.stopped ? 'stopped' : 'with errors'}: ${parts.join(', ')}` + (failed ? `, ${fmtInt(failed)} failed` : '') + (errs.length ? ` (${errs[0]})` : ''));
  }
  return h('span', {}, h('span', { class: 'pill ok' }, 'ok'), ' ', parts.join(', '));
}
