// The session view's context panel: a token gauge (the next turn's
// context against the model's window, colored by the layers' thresholds),
// the compaction timeline (newest first) and a Compact action that first
// previews the compaction (dry run: tokens before → after, the summary),
// then writes it once confirmed.
import { api } from './api.js';
import { h, fmtInt, time } from './dom.js';
import { errorBox, showError, showOK, writeButton, state } from './ui.js';

// The layers' default thresholds in percent of the window; the status
// gives the prune threshold of the config (trigger_percent).
const SUMMARIZE = 88;
const FULL = 95;

// WINDOW_SOURCES say where the status's window comes from.
const WINDOW_SOURCES = {
  host_config: 'from the host config',
  model_table: 'from the model table',
  config: 'from the config',
};

// LAYER_TEXT says what each layer does.
const LAYER_TEXT = {
  prune: 'prune (extract old tool output)',
  summarize: 'summarize (keep the recent part)',
  full: 'full (keep the last turn)',
};

// level names the gauge's color for a share of the window.
export function level(percent, prune = 80) {
  if (percent >= FULL) return 'full';
  if (percent >= SUMMARIZE) return 'summarize';
  if (percent >= prune) return 'prune';
  return 'ok';
}

// compactionPanel returns the panel and its refresh. base is the
// session's API path; withB adds the ?backend= of the view.
export function compactionPanel(base, withB) {
  const gauge = h('div', { class: 'gauge-wrap' }, h('p', { class: 'muted' }, 'Counting tokens…'));
  const timeline = h('div', { class: 'timeline-wrap' });
  const preview = h('div', { class: 'compact-preview', id: 'compact-preview', 'aria-live': 'polite' });
  const focus = h('input', { type: 'text', id: 'compact-focus', maxlength: '4096', placeholder: 'e.g. the database migration', autocomplete: 'off' });
  const layer = h('select', { id: 'compact-layer' });
  setLayers(['prune', 'summarize', 'full']);
  const previewBtn = writeButton('Preview compaction', 'compact-preview-button', previewCompact,
    { title: 'Compute the compaction without writing anything' });
  const refusal = h('p', { class: 'note warn', id: 'compact-refusal', hidden: true });
  // Where the tokens are: read (GET …/context/inspect) when opened.
  const inspectBody = h('div', { class: 'inspect-body' });
  const inspect = h('details', { class: 'inspect', id: 'context-inspect' }, h('summary', {}, 'Where the tokens are'), inspectBody);
  inspect.addEventListener('toggle', () => { if (inspect.open) loadInspect(); });
  const form = h('div', { class: 'compact-form' },
    h('label', { for: 'compact-focus' }, 'Focus'), focus,
    h('label', { for: 'compact-layer' }, 'Layer'), layer, previewBtn);
  const el = h('section', { class: 'panel compaction', id: 'context-panel', 'aria-labelledby': 'context-title' },
    h('div', { class: 'panel-head' }, h('h2', { id: 'context-title' }, 'Context and compactions')),
    h('div', { class: 'panel-body' }, gauge, inspect, refusal, form, preview, timeline));
  let last = '';

  async function refresh(force) {
    let st, hist;
    try {
      [st, hist] = await Promise.all([
        api('GET', withB(`${base}/context/status`)),
        api('GET', withB(`${base}/context/history`, 'depth=50')),
      ]);
    } catch (e) {
      last = '';
      gauge.replaceChildren(errorBox('Could not read the session\'s context', e));
      timeline.replaceChildren();
      return;
    }
    const sig = JSON.stringify([st, hist]);
    if (sig === last && !force) return;
    last = sig;
    renderGauge(st);
    renderTimeline(hist, st);
    if (inspect.open) loadInspect();
    const layers = st.layers || (st.can_compact ? ['prune', 'summarize', 'full'] : ['prune']);
    setLayers(layers);
    const hint = st.compact_hint || (st.can_compact ? '' : `only the prune layer runs here: ${st.refusal || 'the store cannot append a compaction entry'}`);
    refusal.hidden = !hint;
    refusal.className = st.engine_serves ? 'note' : 'note warn';
    refusal.textContent = hint ? hint.charAt(0).toUpperCase() + hint.slice(1) + (st.engine_serves ? '. Here, only the prune layer runs: it moves old tool output out of the stored transcript.' : '.') : '';
  }

  // setLayers offers the layers that can run here (the status's
  // "layers"); the thresholds choose only when every layer can run.
  function setLayers(layers) {
    const sig = layers.join(',');
    if (layer.dataset.layers === sig) return;
    layer.dataset.layers = sig;
    const all = layers.length === 3;
    layer.replaceChildren(...[all ? h('option', { value: '' }, 'as the thresholds choose') : null,
      ...layers.map((l) => h('option', { value: l }, LAYER_TEXT[l] || l))].filter(Boolean));
  }

  function renderGauge(st) {
    // With the context engine serving the session (engine_serves: a view
    // within 24 hours), the gauge shows what the model is sent (the last
    // view), the stored transcript beside it; an older view is not what
    // the model is sent any more, so the gauge shows the transcript.
    const view = st.engine_serves && st.engine && st.engine.view && st.view_tokens ? st.engine.view : null;
    const shown = view ? st.view_tokens : st.tokens;
    const pct = st.window > 0 ? (100 * shown) / st.window : 0;
    const lv = level(pct, st.trigger_percent || 80);
    const fill = h('div', { class: 'gauge-fill' });
    fill.style.width = `${Math.min(100, pct).toFixed(2)}%`;
    const marks = [st.trigger_percent || 80, SUMMARIZE, FULL].map((p) => {
      const m = h('span', { class: 'gauge-mark', title: `${p}%` });
      m.style.left = `${p}%`;
      return m;
    });
    const bar = h('div', {
      class: 'gauge', id: 'token-gauge', role: 'meter', 'aria-label': 'Context tokens',
      'aria-valuemin': '0', 'aria-valuemax': String(st.window), 'aria-valuenow': String(shown),
      'aria-valuetext': `${fmtInt(shown)} of ${fmtInt(st.window)} tokens${view ? ' sent to the model (last view)' : ''}`,
      dataset: { level: lv, tokens: String(shown), window: String(st.window), source: view ? 'view' : 'transcript' },
    }, fill, marks);
    const facts = [
      view ? h('span', { class: 'gauge-label' }, 'Sent to the model (last view): ') : h('span', { class: 'gauge-label' }, 'Next turn\'s context (estimated): '),
      h('b', { class: 'gauge-tokens' }, `${fmtInt(shown)} / ${fmtInt(st.window)} tokens`),
      ` (${pct.toFixed(1)}%)`,
      view && view.measured_turn ? h('span', { class: 'muted', id: 'view-measured' },
        `measured ${fmtInt(view.measured_tokens)} tokens (view ${fmtInt(view.measured_turn)})`) : null,
      view ? h('span', { class: 'stored-transcript', id: 'stored-transcript-tokens' }, `stored transcript: ${fmtInt(st.tokens)} tokens (${Number(st.percent).toFixed(1)}%)`) : null,
      h('span', { class: 'muted window-source', title: st.window_from || '' },
        `window ${fmtInt(st.window)} (${WINDOW_SOURCES[st.window_source] || `from ${st.window_source}`})`),
      st.last_usage_tokens ? h('span', { class: 'muted', title: 'The usage the latest assistant message recorded (input, output and cache), as the provider billed it' },
        `last turn's recorded usage ${fmtInt(st.last_usage_tokens)}`) : null,
      h('span', { class: `pill level-${lv}` }, lv === 'ok' ? 'below the thresholds' : `${lv} threshold crossed`),
      h('span', { class: 'muted' }, `counted ${st.tokenizer}`),
      h('span', { class: `pill risk-${st.risk}` }, `risk ${st.risk}`),
      h('span', { class: 'muted', id: 'compaction-count' }, `${fmtInt(st.compactions)} compaction${st.compactions === 1 ? '' : 's'}` +
        (st.engine_compactions ? ` (${fmtInt(st.engine_compactions)} by the context engine, ${fmtInt(st.transcript_compactions || 0)} in the transcript)` : '')),
      h('span', { class: 'muted' }, st.auto_enabled ? 'auto-compaction on' : 'auto-compaction off'),
    ];
    const warns = (st.warnings || []).map((w) => h('p', { class: 'note warn' }, w));
    gauge.replaceChildren(bar, h('p', { class: 'gauge-text' }, facts), ...warns);
  }

  async function loadInspect() {
    inspectBody.replaceChildren(h('p', { class: 'muted' }, 'Reading the context…'));
    let r;
    try {
      r = await api('GET', withB(`${base}/context/inspect`));
    } catch (e) {
      inspectBody.replaceChildren(errorBox('Could not inspect the context', e));
      return;
    }
    const row = (label, key, tokens, count) => h('tr', { dataset: { key } },
      h('th', { scope: 'row' }, label), h('td', { class: 'num' }, fmtInt(tokens)), h('td', { class: 'num' }, count));
    const msgs = (n) => `${fmtInt(n)} message${n === 1 ? '' : 's'}`;
    inspectBody.replaceChildren(...[h('table', { class: 'inspect-table', id: 'inspect-table' },
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Part'), h('th', { scope: 'col', class: 'num' }, 'Tokens'), h('th', { scope: 'col', class: 'num' }, ''))),
      h('tbody', {},
        row('Conversation', 'conversation', r.conversation.tokens, msgs(r.conversation.messages)),
        row('\u2003of which tool outputs', 'tool_outputs', r.conversation.tool_outputs.tokens, `${fmtInt(r.conversation.tool_outputs.count)} result${r.conversation.tool_outputs.count === 1 ? '' : 's'}`),
        row('System prompt and tools (not in the transcript)', 'system_prompt', r.system_prompt.tokens, ''),
        row('Kept by a summary (recent)', 'protected', r.protected.tokens, msgs(r.protected.messages)),
        row('Compactable', 'compactable', r.compactable.tokens, msgs(r.compactable.messages)),
        row('Saved by prune', 'savings_prune', r.savings.prune, ''),
        row('Saved by summarize', 'savings_summarize', r.savings.summarize, ''),
        row('Saved by full', 'savings_full', r.savings.full, ''))),
    (r.pinned || []).length ? h('p', { class: 'muted small' }, `${r.pinned.length} pinned entr${r.pinned.length === 1 ? 'y' : 'ies'} (_extractable: false) never compacted.`) : null].filter(Boolean));
  }

  function renderTimeline(hist, st) {
    const events = hist.events || [];
    const n = st.engine_compactions || 0;
    const engine = n ? h('p', { class: 'note', id: 'engine-compactions' },
      `The context engine compacted the model's view ${fmtInt(n)} time${n === 1 ? '' : 's'}: its summaries are kept by BrainSurgeon and sent in place of the messages they cover; the stored transcript is not written.`) : null;
    if (events.length === 0) {
      timeline.replaceChildren(...[h('h3', {}, 'Compaction timeline'), engine,
        h('p', { class: 'empty muted', id: 'compaction-empty' }, n ? 'No compaction entry in the stored transcript.' : 'No compaction on the active path.')].filter(Boolean));
      return;
    }
    const more = hist.compactions > events.length ? h('p', { class: 'muted small' }, `The newest ${events.length} of ${fmtInt(hist.compactions)} compactions.`) : null;
    timeline.replaceChildren(...[h('h3', {}, 'Compaction timeline'), engine, more,
      h('ol', { class: 'timeline', id: 'compaction-timeline', 'aria-label': 'Compactions, newest first' }, events.map(eventItem))].filter(Boolean));
  }

  function eventItem(ev) {
    // The host's compactions record the tokens before only.
    const tokens = ev.tokens_after ? `${fmtInt(ev.tokens_before)} → ${fmtInt(ev.tokens_after)} tokens`
      : `${fmtInt(ev.tokens_before)} tokens before (the size after is not recorded)`;
    return h('li', { class: 'compaction-event', dataset: { id: ev.id, layer: ev.layer || '', trigger: ev.trigger || '' } },
      time(ev.at),
      h('span', { class: 'pill' }, ev.trigger || (ev.brainsurgeon ? 'trigger not recorded' : 'host')),
      ev.layer ? h('span', { class: `pill layer-${ev.layer}` }, ev.layer) : null,
      h('span', { class: 'tokens' }, tokens),
      ev.degraded ? h('span', { class: 'pill err degraded', title: 'Summary written without a model' }, 'degraded') : null,
      ev.focus ? h('span', { class: 'focus' }, `focus: ${ev.focus}`) : null,
      h('code', { class: 'muted', title: 'Compaction entry id' }, ev.id));
  }

  function body(dry) {
    const b = { dry_run: dry };
    if (focus.value.trim()) b.focus = focus.value.trim();
    if (layer.value) b.layer = layer.value;
    return b;
  }

  async function previewCompact() {
    preview.replaceChildren(h('p', { class: 'muted' }, 'Computing the compaction…'));
    let res;
    try {
      res = await api('POST', withB(`${base}/context/compact`), body(true));
    } catch (e) {
      preview.replaceChildren(errorBox('Could not preview the compaction', e));
      return;
    }
    const req = body(false);
    if (!res.layer || res.tokens_after >= res.tokens_before) {
      preview.replaceChildren(h('p', { class: 'note warn', id: 'compact-nothing' }, res.warning || 'Nothing to compact.'));
      return;
    }
    const confirm = writeButton('Compact now', 'primary', async () => {
      try {
        const done = await api('POST', withB(`${base}/context/compact`), req);
        preview.replaceChildren(h('p', { class: 'note', id: 'compact-done' },
          `Compacted (${done.layer}): ${fmtInt(done.tokens_before)} → ${fmtInt(done.tokens_after)} tokens` +
          (done.entry_id ? `, entry ${done.entry_id}` : '') + '.'));
        showOK(`Compacted: ${fmtInt(done.tokens_before)} → ${fmtInt(done.tokens_after)} tokens.`);
        await refresh(true);
      } catch (e) {
        showError('Could not compact', e);
      }
    }, { id: 'compact-confirm' });
    const cancel = h('button', { type: 'button', class: 'ghost', onclick: () => preview.replaceChildren() }, 'Cancel');
    preview.replaceChildren(h('div', { class: 'note warn dry-run', id: 'compact-dry-run' },
      h('p', {}, h('b', {}, `Preview (${res.layer}): `),
        h('span', { class: 'before', dataset: { tokens: String(res.tokens_before) } }, fmtInt(res.tokens_before)), ' → ',
        h('span', { class: 'after', dataset: { tokens: String(res.tokens_after) } }, fmtInt(res.tokens_after)),
        ` tokens, ${fmtInt(res.messages_compacted)} messages compacted. Nothing is written until you confirm.`),
      (res.warnings || []).map((w) => h('p', {}, w)),
      res.summary ? h('details', {}, h('summary', {}, 'The summary'), h('pre', { class: 'text' }, res.summary)) : null,
      h('div', { class: 'dialog-actions' }, cancel, confirm)));
    if (state.readonly) confirm.disabled = true;
  }

  return { el, refresh };
}
