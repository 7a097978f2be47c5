// Pieces shared by the views: verdict badges, panels, empty and error states.

import {el, hashLink, isolated, runName} from './dom.js';
import {DASH, fmtSpeedup, isNum} from '../format.js';

/** Verdict ids (from the analysis module) and how they read in the UI. */
export const VERDICTS = {
  waiting_for_others: {label: 'waiting for others', rank: 1},
  input_bound: {label: 'input-bound', rank: 5},
  host_overhead_bound: {label: 'host-overhead-bound', rank: 4},
  warmup_dominated: {label: 'warm-up dominated', rank: 3},
  latency_bound: {label: 'latency-bound', rank: 2},
  compute_bound: {label: 'compute-bound', rank: 0},
  no_data: {label: 'no data', rank: -1},
};

export const SEVERITY_RANK = {high: 3, moderate: 2, info: 1};

// What warm-up is, in the words of every output (renderers/common.py's
// WARMUP_TEXT, kept equal by tests/serving/test_frontend.py).
export const WARMUP_TEXT = "warm-up is the first step of each fit, and the second too in a fit " +
  "where TensorFlow builds its step function (the JSON's warmup_steps)";

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
    Array.isArray(title) ? el('h3', {class: 'dc-panel-title'}, title)
      : title ? el('h3', {class: 'dc-panel-title', text: title}) : null,
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

/** The note of a run whose status is "running": not closed, which is a
 * fit still being written or one whose process ended without closing it. */
export function runningNote(name) {
  return el('p', {class: 'dc-running-note'}, [
    el('span', {class: 'dc-running', text: 'running'}),
    ' ',
    el('span', {
      text: (name ? name + ' is' : 'This run is') +
        ' not closed: still being written (its numbers will change), or its process ' +
        'ended without closing it (its incomplete_run finding says how far it got).',
    }),
  ]);
}

/** The lines a user needs to record a first run. */
const RECORD_SNIPPET =
  'import tb_devicecost\n' +
  'model.fit(ds, epochs=3, callbacks=[tb_devicecost.DeviceCostCallback("logs/run1")])';
const TENSORBOARD_COMMAND = 'tensorboard --logdir logs';

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
        s && s.run != null ? runName(String(s.run)) : el('span', {class: 'dc-run-name', text: '(unnamed run)'}),
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
      el('li', {attrs: {'data-run': String(name)}}, [runName(String(name))]))),
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

/**
 * Where a run's step ran: `device` (the device holding most of the first
 * step's ops) and the other devices that step used. Devices that were only
 * visible are never listed.
 * @return {{device: ?string, others: string[]}}
 */
export function stepDevices(run) {
  const device = run && run.device != null ? String(run.device) : null;
  const used = run && Array.isArray(run.devices_used) ? run.devices_used.map(String) : [];
  return {device, others: used.length > 1 ? used.filter((d) => d !== device) : []};
}

/**
 * Strings from the recorded data (device names, ...) joined by `separator`,
 * each in its own <bdi>: a bidirectional control in one (U+202E) reorders
 * that name alone, never the words or names beside it.
 * @param {Array<*>} items
 * @param {string} separator
 * @return {Array<Node|string>} children for `el`.
 */
export function isolatedList(items, separator) {
  return items.flatMap((item, i) => (i ? [separator, isolated(item)] : [isolated(item)]));
}

/**
 * "GPU:0", or "GPU:0 + CPU:0" when the step used more than one device, as
 * children for `el`: each device isolated.
 */
export function stepDevicesNodes(run) {
  const {device, others} = stepDevices(run);
  return [device ? isolated(device) : DASH, ...others.flatMap((d) => [' + ', isolated(d)])];
}

/** A table cell's content for where the step ran; `sub` below it, muted. */
export function deviceCell(run, sub = null) {
  const {device, others} = stepDevices(run);
  return [
    el('span', {class: 'dc-device', title: 'Where the step ran'}, [device ? isolated(device) : DASH]),
    others.length
      ? el('span', {
        class: 'dc-device-more',
        title: 'The first step also ran ops on ' + others.join(', '),
      }, [' + ', ...isolatedList(others, ' + ')])
      : null,
    sub ? el('div', {class: 'dc-muted dc-small', text: sub}) : null,
  ];
}

/**
 * Whether run `name` is a baseline: the comparison's, or the one its role's
 * runs are compared with (its row is compared with itself).
 */
export function isBaselineRun(name, row, baseline) {
  return (baseline !== null && name === baseline) ||
    Boolean(row && row.against != null && String(row.against) === name);
}

/**
 * The speedup cell of a run against its baseline.
 * @param {string} name the run.
 * @param {?Object} row its comparison row (`speedup`, `basis`, `against`,
 *     `explanation`), if any.
 * @param {?string} baseline the comparison's baseline (null when each model
 *     has its own, or there is none).
 */
export function speedupCell(name, row, baseline) {
  const cell = el('td', {class: 'dc-num dc-speedup', attrs: {'data-stat': 'speedup'}});
  const against = row && row.against != null ? String(row.against) : baseline;
  if (isBaselineRun(name, row, baseline)) {
    cell.append(fmtSpeedup(1), el('div', {class: 'dc-muted dc-small', text: 'baseline'}));
    cell.classList.add('dc-speedup-baseline');
  } else if (row && isNum(row.speedup)) {
    cell.appendChild(el('span', {
      class: row.speedup >= 1 ? 'dc-faster' : 'dc-slower', text: fmtSpeedup(row.speedup),
    }));
    const notes = [];
    if (row.basis === 'samples_per_s') notes.push('per sample');
    if (against !== null && against !== baseline) notes.push('vs ' + against);
    if (notes.length) cell.appendChild(el('div', {class: 'dc-muted dc-small', text: notes.join(', ')}));
    if (row.same_model === false) {
      // Another model (or set-up): the ratio is not a device comparison.
      cell.appendChild(el('div', {
        class: 'dc-small dc-different-model', text: 'different model: not a device comparison',
      }));
    }
    if (row.explanation) cell.title = String(row.explanation);
  } else {
    cell.textContent = DASH;
  }
  return cell;
}

/**
 * The "Baseline" picker: a labelled select of `names`, plus, while no
 * baseline is chosen, an option `automatic` that names the analysis's own
 * choice. `onChange` gets the chosen run, or null for that option.
 */
export function baselineField(names, baseline, automatic, onChange) {
  const select = el('select', {class: 'dc-baseline', attrs: {'aria-label': 'Baseline run'}});
  if (baseline === null) {
    select.appendChild(el('option', {text: automatic, attrs: {value: '', selected: true}}));
  }
  for (const name of names) {
    const option = el('option', {text: name, attrs: {value: name}});
    if (name === baseline) option.selected = true;
    select.appendChild(option);
  }
  select.addEventListener('change', () => onChange(select.value || null));
  return el('label', {class: 'dc-field'}, [el('span', {text: 'Baseline'}), select]);
}

/** Which baseline the speedups are against, and why; or why there is none. */
export function baselineNote(comparison) {
  const rows = comparison && Array.isArray(comparison.rows) ? comparison.rows : null;
  if (!comparison || (comparison.baseline == null && rows !== null && rows.length === 0)) {
    return el('p', {
      class: 'dc-baseline-note dc-muted',
      text: 'No speedups: none of these runs is a like-for-like baseline for another (the same ' +
        'model trained on the CPU, in a run named like it but for the device). Choose a baseline ' +
        'to compare against it.',
    });
  }
  const reason = comparison.baseline_reason ? String(comparison.baseline_reason).trim() : '';
  return el('p', {class: 'dc-baseline-note dc-muted'}, [
    comparison.baseline != null ? 'Speedups are against ' : null,
    comparison.baseline != null ? runName(String(comparison.baseline)) : null,
    comparison.baseline != null ? '. ' : null,
    reason ? reason.replace(/([^.])$/, '$1.') + ' ' : null,
    'A speedup is the baseline\u2019s mean step time divided by the run\u2019s (samples/s when ' +
      'batch sizes differ).',
  ]);
}

/**
 * A finding's headline (one plain sentence) and, behind a "details"
 * disclosure, the arithmetic it rests on (`message`). Findings of an older
 * report have no headline: their message is shown instead, with no details.
 * @param {!Object} finding a finding of the report.
 * @return {!Array<?HTMLElement>} the headline paragraph, then the
 *     disclosure (`null` when the message adds nothing).
 */
export function findingText(finding) {
  const message = finding.message != null ? String(finding.message) : '';
  const headline = finding.headline != null ? String(finding.headline) : message;
  const details = message && message !== headline
    ? el('details', {class: 'dc-finding-details'}, [
      el('summary', {text: 'details'}),
      el('p', {class: 'dc-finding-message', text: message}),
    ])
    : null;
  return [el('p', {class: 'dc-finding-headline', text: headline}), details];
}
