// @ts-check
// The health of a session as the doctor diagnoses it (GET /api/sessions'
// "health" and "problem_kinds", the session detail's "doctor"): a pill
// in the sessions list, the list of problems in the session view.
import { h, fmtInt } from './dom.js';

/** @type {Record<string, [string, string]>} the name of each kind, one and many */
const KIND_NAMES = {
  missing_tool_result: ['tool call without result', 'tool calls without result'],
  orphan_tool_result: ['tool result without call', 'tool results without call'],
  displaced_tool_result: ['tool result away from its call', 'tool results away from their calls'],
  placeholder_without_value: ['placeholder without value', 'placeholders without value'],
  pending_writeback: ['pending write-back', 'pending write-backs'],
  malformed_line: ['malformed line', 'malformed lines'],
};

/** the kinds that make a session broken */
const BROKEN_KINDS = new Set(['missing_tool_result', 'orphan_tool_result', 'displaced_tool_result']);

/** @type {Record<string, string>} */
const PILL_CLASS = { ok: 'ok', warn: 'warn', broken: 'err' };

/**
 * kindName names a problem kind for people, for n problems.
 * @param {string} kind
 * @param {number} [n]
 * @returns {string}
 */
export function kindName(kind, n = 1) {
  const names = KIND_NAMES[kind];
  return names ? names[n === 1 ? 0 : 1] : kind.replaceAll('_', ' ');
}

/**
 * problemCounts renders counts per kind as "2 tool calls without result,
 * 1 malformed line"; "" when there are none.
 * @param {Record<string, number> | undefined} kinds
 * @returns {string}
 */
export function problemCounts(kinds) {
  return Object.entries(kinds || {}).filter(([, n]) => n > 0)
    .map(([k, n]) => `${fmtInt(n)} ${kindName(k, n)}`)
    .join(', ');
}

/**
 * healthPill is a session's health as a pill (ok / warn / broken) whose
 * title lists the problem counts; a muted dash when the session was not
 * diagnosed.
 * @param {{health?: string, problems?: number, problem_kinds?: Record<string, number>}} s
 * @returns {HTMLElement}
 */
export function healthPill(s) {
  if (!s.health) return h('span', { class: 'muted', title: 'Not diagnosed' }, '–');
  const counts = problemCounts(s.problem_kinds);
  const title = s.health === 'ok' ? 'No problems found' :
    `${fmtInt(s.problems || 0)} problem${s.problems === 1 ? '' : 's'}` + (counts ? `: ${counts}` : '');
  return h('span', { class: `pill health ${PILL_CLASS[s.health] || ''}`, dataset: { health: s.health }, title }, s.health);
}

/**
 * @typedef {{kind: string, line?: number, entry_id?: string, tool_call_id?: string, tool_name?: string,
 *   other_branch?: boolean, detail: string, fixable: boolean, fix?: string}} Problem
 * @typedef {{health: string, problems: Problem[], fixable?: boolean, fix_refused?: string}} Report
 */

/**
 * problemsPanel lists the problems of a session's diagnosis, with the
 * command that repairs the fixable ones; null when there are none (or no
 * diagnosis).
 * @param {Report | null | undefined} rep
 * @param {string} name the session as the CLI names it ("agent/id")
 * @param {string} [err] why there is no diagnosis
 * @returns {HTMLElement | null}
 */
export function problemsPanel(rep, name, err) {
  if (!rep) {
    return err ? h('section', { class: 'panel', id: 'doctor-panel' }, h('div', { class: 'panel-body' },
      h('p', { class: 'note warn' }, `The session could not be diagnosed: ${err}`))) : null;
  }
  if (!rep.problems || rep.problems.length === 0) return null;
  const fixHint = rep.fix_refused ? h('p', { class: 'note' }, rep.fix_refused)
    : rep.fixable ? h('p', { class: 'note' }, 'Repair the fixable ones with ', h('code', {}, `brainsurgeon doctor --fix --session ${name}`),
      ' (reversible: ', h('code', {}, `brainsurgeon restore ${name} --all --pristine`), ' takes it back).') : null;
  return h('section', { class: 'panel', id: 'doctor-panel', 'aria-labelledby': 'doctor-title' },
    h('div', { class: 'panel-head' },
      h('h2', { id: 'doctor-title' }, 'Health ', healthPill({ health: rep.health, problems: rep.problems.length })),
      h('span', { class: 'muted small' }, `${fmtInt(rep.problems.length)} problem${rep.problems.length === 1 ? '' : 's'}`)),
    h('div', { class: 'panel-body' },
      h('ul', { class: 'problems' }, rep.problems.map((p) => h('li', { class: 'problem', dataset: { kind: p.kind } },
        h('span', { class: `pill ${BROKEN_KINDS.has(p.kind) ? 'err' : 'warn'}` }, kindName(p.kind)),
        ' ',
        p.line ? h('span', { class: 'muted' }, `line ${fmtInt(p.line)}${p.entry_id ? ` (${p.entry_id})` : ''}: `) : null,
        p.detail,
        p.tool_call_id ? h('span', { class: 'id' }, `${p.tool_name ? p.tool_name + ' ' : ''}${p.tool_call_id}`) : null,
        p.fix ? h('div', { class: 'muted small' }, (p.fixable ? 'Fix: ' : 'Not fixable: ') + p.fix) : null))),
      fixHint));
}
