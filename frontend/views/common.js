// Pieces shared by the views: verdict badges, panels, empty and error states.

import {el, hashLink} from './dom.js';

/** Verdict ids (from the analysis module) and how they read in the UI. */
export const VERDICTS = {
  input_bound: {label: 'input-bound', rank: 5},
  host_overhead_bound: {label: 'host-overhead-bound', rank: 4},
  warmup_dominated: {label: 'warm-up dominated', rank: 3},
  latency_bound: {label: 'latency-bound', rank: 2},
  compute_bound: {label: 'compute-bound', rank: 0},
  no_data: {label: 'no data', rank: -1},
};

export const SEVERITY_RANK = {high: 3, moderate: 2, info: 1};

export function verdictLabel(verdict) {
  if (VERDICTS[verdict]) return VERDICTS[verdict].label;
  return verdict ? String(verdict).replace(/_/g, ' ') : 'no data';
}

/**
 * A coloured verdict badge: `<span class="dc-verdict dc-verdict-input_bound"
 * data-verdict="input_bound">input-bound</span>`.
 */
export function verdictBadge(verdict) {
  const id = verdict ? String(verdict) : 'no_data';
  const known = Object.prototype.hasOwnProperty.call(VERDICTS, id);
  return el('span', {
    class: 'dc-verdict dc-verdict-' + (known ? id : 'unknown'),
    text: verdictLabel(id),
    attrs: {'data-verdict': id},
  });
}

export function severityBadge(severity) {
  const s = SEVERITY_RANK[severity] ? severity : 'info';
  return el('span', {class: 'dc-severity dc-severity-' + s, text: String(severity || 'info')});
}

/** A titled card. */
export function panel(title, children, className = '') {
  return el('section', {class: ('dc-panel ' + className).trim()}, [
    title ? el('h3', {class: 'dc-panel-title', text: title}) : null,
    ...children,
  ]);
}

/** The highest-severity finding of a run, preferring the one named by its verdict. */
export function topFinding(run) {
  const findings = Array.isArray(run && run.findings) ? run.findings : [];
  let best = null;
  for (const f of findings) {
    if (!f) continue;
    const rank = SEVERITY_RANK[f.severity] || 0;
    const bestRank = best ? (SEVERITY_RANK[best.severity] || 0) : -1;
    if (rank > bestRank || (rank === bestRank && f.id === run.verdict && best.id !== run.verdict)) {
      best = f;
    }
  }
  return best;
}

/** "still being written" note for a run whose status is "running". */
export function runningNote(runName) {
  return el('p', {class: 'dc-running-note'}, [
    el('span', {class: 'dc-running', text: 'running'}),
    ' ',
    el('span', {
      text: (runName ? runName + ' is' : 'This run is') +
        ' still being written: its numbers will change as training goes on.',
    }),
  ]);
}

/** The lines a user needs to record a first run. */
export const RECORD_SNIPPET =
  'import tb_devicecost\n' +
  'model.fit(ds, epochs=3, callbacks=[tb_devicecost.DeviceCostCallback("logs/run1")])';
export const TENSORBOARD_COMMAND = 'tensorboard --logdir logs';

/**
 * Shown when no run holds Device Cost data.
 * @param {{skipped?: Array, profile_only?: Array<string>}} data
 */
export function emptyState(data = {}) {
  return el('div', {class: 'dc-empty'}, [
    el('h2', {text: 'No Device Cost data yet'}),
    el('p', {
      text: 'This tab shows, for every training run, where each step\u2019s time went ' +
        '(waiting for data, computing, host overhead, warm-up), where the ops ran, and ' +
        'how runs on different devices compare. To record a run, add the callback to fit:',
    }),
    el('pre', {class: 'dc-code', text: RECORD_SNIPPET}),
    el('p', {text: 'then point TensorBoard at the same log directory:'}),
    el('pre', {class: 'dc-code', text: TENSORBOARD_COMMAND}),
    el('p', {
      class: 'dc-muted',
      text: 'Runs appear here once their first records are written; press Refresh to look again.',
    }),
    skippedList(data.skipped),
    profileOnlyList(data.profile_only),
  ]);
}

/** Runs the server could not use, with the reason for each. */
export function skippedList(skipped) {
  if (!Array.isArray(skipped) || skipped.length === 0) return null;
  return el('div', {class: 'dc-skipped'}, [
    el('h3', {class: 'dc-panel-title', text: 'Runs not shown'}),
    el('ul', {}, skipped.map((s) =>
      el('li', {attrs: {'data-run': s && s.run != null ? String(s.run) : ''}}, [
        el('span', {class: 'dc-run-name', text: s && s.run != null ? String(s.run) : '(unnamed run)'}),
        ': ',
        el('span', {text: s && s.reason ? String(s.reason) : 'no usable data'}),
      ]))),
  ]);
}

/** Runs with profiler traces but no Device Cost data. */
export function profileOnlyList(names) {
  if (!Array.isArray(names) || names.length === 0) return null;
  return el('div', {class: 'dc-profile-only'}, [
    el('h3', {class: 'dc-panel-title', text: 'Runs with profiler traces only'}),
    el('p', {
      class: 'dc-muted',
      text: 'These runs hold traces for the Profile tab but no Device Cost records. ' +
        'Add DeviceCostCallback to their fit call to measure every step:',
    }),
    el('ul', {}, names.map((name) =>
      el('li', {attrs: {'data-run': String(name)}}, [el('span', {class: 'dc-run-name', text: String(name)})]))),
  ]);
}

/**
 * A failed request: the server's own message and a Retry button.
 * @param {{what: string, status?: number, message: string, onRetry: function(),
 *          backHash?: (string|null)}} options
 */
export function errorState({what, status, message, onRetry, backHash = null}) {
  const retry = el('button', {class: 'dc-button dc-retry', text: 'Retry', attrs: {type: 'button'}});
  retry.addEventListener('click', () => onRetry());
  return el('div', {class: 'dc-error', attrs: {role: 'alert'}}, [
    el('div', {class: 'dc-error-title', text: 'Could not load ' + what +
      (status ? ' (HTTP ' + status + ')' : '')}),
    el('pre', {class: 'dc-error-message', text: message || 'Unknown error.'}),
    el('div', {class: 'dc-error-actions'}, [
      retry,
      backHash !== null ? hashLink(backHash, {class: 'dc-back', text: 'Back to all runs'}) : null,
    ]),
  ]);
}

/** "← All runs" link. */
export function backLink(hash) {
  return hashLink(hash, {class: 'dc-back', text: '\u2190 All runs'});
}
