// Run detail's profiler panels: the captures that open in the Profile tab,
// and each trace window's own breakdown of the traced steps beside ours.

import {el, isolated, safeHref} from './dom.js';
import {fmtMs, fmtMsUnit, fmtShare, fmtCount, fmtBytes, isNum, DASH} from '../format.js';
import {swatch, COMPONENTS, TRACE_COLOR} from './charts.js';
import {panel} from './common.js';

/** The sentence shown instead of a Profile-tab link when the tab is absent. */
function noProfileTab(what) {
  return el('p', {class: 'dc-no-profile-tab'}, [
    what + ' TensorBoard has no Profile tab: install it with ',
    el('code', {text: 'pip install ".[profile]"'}),
    ' in the tb-devicecost clone (it installs xprof), then restart TensorBoard.',
  ]);
}

export function profileLinks(profile, profileTab) {
  const captures = Array.isArray(profile) ? profile.filter(Boolean) : [];
  if (captures.length === 0) {
    return el('p', {
      class: 'dc-muted',
      text: 'No profiler captures for this run. A trace from the Profile tab shows individual ' +
        'kernels; this tab measures every step without one.',
    });
  }
  const linked = profileTab !== false;
  return el('div', {}, [
    el('ul', {class: 'dc-profile-list'}, captures.map((c) => {
      // The capture's and host's names are the recorded data's: isolated.
      const parts = [c.capture, c.host].filter((x) => x != null && x !== '');
      const label = parts.length ? parts.flatMap((x, i) => (i ? [' \u00b7 ', isolated(x)] : [isolated(x)])) : ['capture'];
      const href = linked ? safeHref(c.url) : null;
      return el('li', {}, [
        href
          ? el('a', {class: 'dc-profile-link', attrs: {href, target: '_top'}}, label)
          : el('span', {class: 'dc-profile-capture'}, label),
        href ? el('span', {class: 'dc-muted', text: ' \u2014 opens in the Profile tab'}) : null,
      ]);
    })),
    linked ? null : noProfileTab('These captures open in the Profile tab, but this'),
  ]);
}

// ---------------------------------------------------------------------------
// Profiler trace windows: the trace's own breakdown of the traced steps set
// beside ours for the same steps.

const SOURCES = {
  'tb_devicecost': 'captured by tb-devicecost (profile_steps)',
  'keras.callbacks.TensorBoard': 'captured by keras.callbacks.TensorBoard(profile_batch=...)',
};

export function sourceText(source) {
  if (source === null || source === undefined || source === '') return 'captured by an unknown profiler';
  const key = String(source);
  return Object.prototype.hasOwnProperty.call(SOURCES, key) ? SOURCES[key] : 'captured by ' + key;
}

/** "Steps 2–4" for the window [2, 5); "Step 7" for [7, 8). */
export function stepRangeText(start, stop) {
  if (!isNum(start) || !isNum(stop) || !(stop > start)) {
    return isNum(start) ? 'Steps from ' + fmtCount(start) : 'Steps unknown';
  }
  const lastStep = stop - 1;
  return lastStep === start ? 'Step ' + fmtCount(start) : 'Steps ' + fmtCount(start) + '\u2013' + fmtCount(lastStep);
}

function num(obj, key) {
  return obj && typeof obj === 'object' && isNum(obj[key]) ? obj[key] : null;
}

function fmtUs(us) {
  return isNum(us) ? fmtMs(us) + ' \u00b5s' : DASH;
}

function fmtKernels(x) {
  if (!isNum(x)) return DASH;
  return Math.abs(x) >= 100 ? fmtCount(x) : String(Number(x.toPrecision(3)));
}

/** "0.120 ms · 1.20 MiB" for a copy's time and bytes per step. */
function fmtCopy(ms, bytes) {
  if (!isNum(ms) && !isNum(bytes)) return DASH;
  return [isNum(ms) ? fmtMsUnit(ms) : null, isNum(bytes) ? fmtBytes(bytes) : null].filter(Boolean).join(' \u00b7 ');
}

function sumOrNull(values) {
  return values.every(isNum) ? values.reduce((a, b) => a + b, 0) : null;
}

export function tracesPanel(windows, profileTab) {
  return panel('Profiler traces', [
    el('p', {
      class: 'dc-muted dc-traces-intro',
      text: 'The Profile tab\u2019s Overview page cannot split the steps of a CPU-only run into ' +
        'input, compute and other time (it says \u201cNo step time measured\u201d), so the ' +
        'trace\u2019s own breakdown of the traced steps is given here, beside what this tab ' +
        'measured for the same steps.',
    }),
    ...windows.map((w) => traceBlock(w, profileTab)),
  ], 'dc-traces');
}

function traceBlock(w, profileTab) {
  const capture = w.capture != null ? String(w.capture) : '';
  const host = w.host != null ? String(w.host) : '';
  const href = safeHref(w.url);
  const range = stepRangeText(w.start_step, w.stop_step);
  const count = isNum(w.start_step) && isNum(w.stop_step) && w.stop_step > w.start_step
    ? w.stop_step - w.start_step : null;
  const meta = [
    capture ? ['capture ', isolated(capture)] : null,
    host ? ['host ', isolated(host)] : null,
    isNum(w.trace_bytes) ? [fmtBytes(w.trace_bytes) + ' trace'] : null,
  ].filter(Boolean).flatMap((part, i) => (i ? [' \u00b7 ', ...part] : part));

  const info = el('div', {class: 'dc-trace-info'}, [
    el('div', {class: 'dc-trace-head'}, [
      el('span', {class: 'dc-trace-swatch', attrs: {style: 'background:' + TRACE_COLOR}}),
      el('span', {
        class: 'dc-trace-steps-label', text: range,
        title: isNum(w.start_step) && isNum(w.stop_step)
          ? 'global steps [' + w.start_step + ', ' + w.stop_step + ')' : '',
      }),
      count !== null ? el('span', {class: 'dc-muted', text: '(' + count + ' step' + (count === 1 ? '' : 's') + ')'}) : null,
    ]),
    el('div', {class: 'dc-trace-source', text: sourceText(w.source)}),
    meta.length ? el('div', {class: 'dc-trace-meta dc-muted'}, meta) : null,
    href && profileTab === false
      ? noProfileTab('This trace opens in the Profile tab, but this')
      : href
      ? el('a', {class: 'dc-trace-link', text: 'Open in the Profile tab (Overview)', attrs: {href, target: '_top'}})
      : el('span', {
        class: 'dc-muted dc-trace-nolink',
        text: 'The Profile tab cannot open this trace: it is not under this TensorBoard\u2019s log directory.',
      }),
  ]);

  const body = el('div', {class: 'dc-trace-body'});
  if (w.error !== null && w.error !== undefined && w.error !== '') {
    body.appendChild(el('p', {class: 'dc-trace-error', attrs: {role: 'note'}}, [
      el('strong', {text: 'This trace could not be read: '}),
      el('span', {text: String(w.error)}),
    ]));
  } else {
    body.appendChild(digestTable(w));
    const agreement = w.data_wait_agreement && typeof w.data_wait_agreement === 'object' ? w.data_wait_agreement : null;
    if (agreement && agreement.message != null) {
      body.appendChild(agreement.disagree === true
        ? el('p', {class: 'dc-trace-disagree', attrs: {role: 'note'}, text: String(agreement.message)})
        : el('p', {class: 'dc-trace-agreement dc-muted', text: String(agreement.message)}));
    }
    const perStep = stepsTable(w.steps);
    if (perStep) body.appendChild(perStep);
  }

  return el('div', {
    class: 'dc-trace',
    attrs: {
      'data-capture': capture, 'data-start': isNum(w.start_step) ? w.start_step : null,
      'data-stop': isNum(w.stop_step) ? w.stop_step : null,
      'data-source': w.source != null ? String(w.source) : null,
    },
  }, [info, body]);
}

function digestTable(w) {
  const t = w.summary && typeof w.summary === 'object' ? w.summary : {};
  const o = w.ours && typeof w.ours === 'object' ? w.ours : {};
  const oursStep = sumOrNull([num(o, 'data_wait_ms'), num(o, 'compute_ms'), num(o, 'host_overhead_ms')]);
  const rows = [
    {key: 'input_wait', label: 'Input wait (trace) \u00b7 data wait (ours)', color: COMPONENTS[0].color,
      trace: fmtMsUnit(num(t, 'mean_input_wait_ms')), ours: fmtMsUnit(num(o, 'data_wait_ms'))},
    {key: 'compute', label: 'Compute', color: COMPONENTS[1].color,
      trace: fmtMsUnit(num(t, 'mean_compute_ms')), ours: fmtMsUnit(num(o, 'compute_ms'))},
    {key: 'other', label: 'Other (trace) \u00b7 host overhead (ours)', color: COMPONENTS[2].color,
      trace: fmtMsUnit(num(t, 'mean_other_ms')), ours: fmtMsUnit(num(o, 'host_overhead_ms'))},
    {key: 'step', label: 'Step', strong: true,
      trace: fmtMsUnit(num(t, 'mean_step_ms')), ours: fmtMsUnit(oursStep)},
    {key: 'pipeline_busy', label: 'Input pipeline busy',
      title: 'Time the tf.data pipeline spent producing batches; it overlaps the step.',
      trace: fmtMsUnit(num(t, 'mean_pipeline_busy_ms')), ours: null},
  ];
  if (w.has_device_plane === true) {
    const busy = num(t, 'mean_device_busy_ms');
    const fraction = num(t, 'device_busy_fraction');
    rows.push(
      {key: 'device_busy', label: 'Device busy (compute)', device: true,
        trace: isNum(fraction)
          ? fmtShare(fraction) + (isNum(busy) ? ' (' + fmtMsUnit(busy) + ')' : '')
          : fmtMsUnit(busy), ours: null},
    );
    // Windows digested since the split: collectives and copies apart.
    if (isNum(num(t, 'device_communication_fraction'))) {
      rows.push(
        {key: 'device_communication', label: 'Device in collectives', device: true,
          title: 'NCCL / gloo collectives: they spin while a peer is late, so they are not counted as busy.',
          trace: fmtShare(num(t, 'device_communication_fraction')) +
            ' (' + fmtMsUnit(num(t, 'mean_device_communication_ms')) + ')', ours: null},
        {key: 'device_memory', label: 'Device in copies', device: true,
          trace: fmtShare(num(t, 'device_memory_fraction')) +
            ' (' + fmtMsUnit(num(t, 'mean_device_memory_ms')) + ')', ours: null},
      );
    }
    rows.push(
      {key: 'device_idle', label: 'Device idle', device: true,
        trace: fmtMsUnit(num(t, 'mean_device_idle_ms')), ours: null},
      {key: 'kernels', label: 'Kernels per step', device: true,
        trace: fmtKernels(num(t, 'mean_kernels')), ours: null},
      {key: 'kernel_us', label: 'Mean kernel time', device: true,
        trace: fmtUs(num(t, 'mean_kernel_mean_us')), ours: null},
      {key: 'h2d', label: 'Host \u2192 device copies', device: true,
        trace: fmtCopy(num(t, 'mean_h2d_ms'), num(t, 'mean_h2d_bytes')), ours: null},
      {key: 'd2h', label: 'Device \u2192 host copies', device: true,
        trace: fmtCopy(num(t, 'mean_d2h_ms'), num(t, 'mean_d2h_bytes')), ours: null},
    );
  }
  return el('table', {class: 'dc-table dc-trace-digest'}, [
    el('thead', {}, [el('tr', {}, [
      el('th', {text: 'Mean per traced step'}),
      el('th', {class: 'dc-num', text: 'Trace'}),
      el('th', {class: 'dc-num', text: 'Ours'}),
    ])]),
    el('tbody', {}, rows.map((row) => el('tr', {
      class: (row.device ? 'dc-trace-device-row' : '') + (row.strong ? ' dc-trace-total' : ''),
      attrs: {'data-row': row.key},
    }, [
      el('th', {class: 'dc-row-head', title: row.title || ''}, [
        row.color ? swatch(row.color) : null,
        row.label,
      ]),
      el('td', {class: 'dc-num dc-trace-value', text: row.trace}),
      el('td', {class: 'dc-num dc-ours-value' + (row.ours === null ? ' dc-muted' : ''), text: row.ours === null ? DASH : row.ours}),
    ]))),
  ]);
}

function stepsTable(steps) {
  const list = Array.isArray(steps) ? steps.filter((s) => s && typeof s === 'object') : [];
  if (list.length === 0) return null;
  const cols = [
    ['Input wait', 'trace', 'input_wait_ms'], ['Data wait', 'ours', 'data_wait_ms'],
    ['Compute', 'trace', 'compute_ms'], ['Compute', 'ours', 'compute_ms'],
    ['Other', 'trace', 'other_ms'], ['Host overhead', 'ours', 'host_overhead_ms'],
    ['Step', 'trace', 'step_ms'],
  ];
  return el('details', {class: 'dc-trace-steps'}, [
    el('summary', {text: 'Each traced step (ms)'}),
    el('div', {class: 'dc-table-scroll'}, [
      el('table', {class: 'dc-table dc-trace-step-table'}, [
        el('thead', {}, [el('tr', {}, [
          el('th', {class: 'dc-num', text: 'Step'}),
          ...cols.map(([label, side]) => el('th', {class: 'dc-num dc-sub'}, [
            label, el('span', {class: 'dc-side', text: ' ' + side}),
          ])),
        ])]),
        el('tbody', {}, list.map((s) => el('tr', {attrs: {'data-step': isNum(s.step) ? s.step : null}}, [
          el('td', {class: 'dc-num', text: fmtCount(s.step)}),
          ...cols.map(([, side, key]) => el('td', {class: 'dc-num', text: fmtMs(num(s[side], key))})),
        ]))),
      ]),
    ]),
  ]);
}
