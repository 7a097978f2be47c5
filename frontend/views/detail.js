// Run detail: per-step stacked chart, percentiles, placement, findings,
// profiler captures and run info for one run.

import {el, safeHref, runName} from './dom.js';
import {fmtMs, fmtMsUnit, fmtShare, fmtCount, fmtBytes, isNum, DASH} from '../format.js';
import {
  stepChart, componentLegend, swatch, COMPONENTS, WARMUP_COLOR, SPIKE_COLOR, TRACE_COLOR,
} from './charts.js';
import {
  verdictBadge, severityBadge, panel, runningNote, backLink, SEVERITY_RANK, stepDevices,
  stepDevicesText, findingText, WARMUP_TEXT,
} from './common.js';

/**
 * @param {Object} data the `run` route's JSON (RUN plus series, warmup_steps,
 *     spike_steps, info).
 * @param {{hashFor: function(Object): string, state: Object, chartWidth: number,
 *          profileTab: ?boolean}} app profileTab: whether TensorBoard shows
 *     the Profile tab (null: unknown).
 * @return {HTMLElement}
 */
export function buildDetail(data, app) {
  const run = data || {};
  const name = run.run != null ? String(run.run) : String(app.state.run || '');
  const profileTab = app.profileTab === undefined ? null : app.profileTab;
  const root = el('div', {class: 'dc-detail', attrs: {'data-run': name}});

  root.appendChild(el('nav', {class: 'dc-crumbs'}, [
    backLink(app.hashFor({view: 'overview', baseline: app.state.baseline})),
  ]));
  root.appendChild(el('div', {class: 'dc-detail-head'}, [
    el('h2', {class: 'dc-run-title'}, [runName(name)]),
    verdictBadge(run.verdict),
  ]));
  if (run.status === 'running') root.appendChild(runningNote(null));

  root.appendChild(statStrip(run));
  root.appendChild(findingsPanel(run.findings));

  const windows = Array.isArray(run.trace_windows)
    ? run.trace_windows.filter((w) => w && typeof w === 'object') : [];
  const chartPanel = panel('Where each step\u2019s time went', [
    componentLegend([
      {label: 'warm-up step', color: WARMUP_COLOR, kind: 'line'},
      {label: 'spike', color: SPIKE_COLOR, kind: 'marker'},
      windows.length ? {label: 'traced steps', color: TRACE_COLOR, kind: 'band'} : null,
    ].filter(Boolean)),
    stepChart(run.series || {}, {
      warmupSteps: Array.isArray(run.warmup_steps) ? run.warmup_steps : [],
      spikeSteps: Array.isArray(run.spike_steps) ? run.spike_steps : [],
      traceWindows: windows.map((w) => ({
        start: w.start_step, stop: w.stop_step,
        label: stepRangeText(w.start_step, w.stop_step) + ' traced, ' + sourceText(w.source),
      })),
      width: app.chartWidth || 900,
      height: 300,
    }),
  ], 'dc-chart-panel');
  root.appendChild(chartPanel);
  const wall = wallPanel(run);
  if (wall) root.appendChild(wall);
  if (windows.length) root.appendChild(tracesPanel(windows, profileTab));

  root.appendChild(el('div', {class: 'dc-grid-2'}, [
    panel('Step time percentiles (steady state, ms)', [percentileTable(run)], 'dc-percentiles-panel'),
    panel('Placement', [placementPanel(run)], 'dc-placement'),
  ]));
  root.appendChild(el('div', {class: 'dc-grid-2'}, [
    panel('Profiler captures', [profileLinks(run.profile, profileTab)], 'dc-profile'),
    panel('Run info', [infoList(run)], 'dc-info'),
  ]));
  return root;
}

function stat(label, value, sub, key) {
  return el('div', {class: 'dc-stat', attrs: {'data-stat': key || null}}, [
    el('div', {class: 'dc-stat-label', text: label}),
    el('div', {class: 'dc-stat-value', text: value}),
    sub ? el('div', {class: 'dc-stat-sub', text: sub}) : null,
  ]);
}

function statStrip(run) {
  const step = run.step_ms || {};
  const shares = run.shares || {};
  const shareText = COMPONENTS.filter((c) => isNum(shares[c.key]))
    .map((c) => c.label + ' ' + fmtShare(shares[c.key])).join(', ');
  const {others} = stepDevices(run);
  return el('div', {class: 'dc-stats'}, [
    stat('p50 step', fmtMsUnit(step.p50), shareText ? 'steady state: ' + shareText : null, 'p50'),
    stat('Mean step', fmtMsUnit(step.mean), 'the speedups compare means', 'mean'),
    stat('Samples/s', fmtCount(run.samples_per_s),
      isNum(run.batch_size) ? 'batch size ' + fmtCount(run.batch_size) : null, 'samples_per_s'),
    stat('Steps', fmtCount(run.steps), run.status === 'running' ? 'still running' : null, 'steps'),
    stat('Warm-up', fmtMsUnit(run.warmup_ms),
      isNum(run.warmup_share_of_wall) ? fmtShare(run.warmup_share_of_wall) + ' of the fit\u2019s wall time' : null,
      'warmup'),
    stat('Spikes', fmtCount(run.spikes), 'steps far above the median', 'spikes'),
    stat('Fetch floor', fmtMsUnit(run.fetch_floor_ms),
      'cost of handing over a batch that is already ready', 'fetch_floor'),
    stat('Device', stepDevicesText(run),
      [others.length ? 'the step used ' + (others.length + 1) + ' devices' : 'where the step ran',
        run.backend != null ? String(run.backend) : null].filter(Boolean).join(' \u00b7 '),
      'device'),
  ]);
}

/**
 * The fit's whole wall time and its parts (`wall_ms`, which adds up to its
 * total), or null when the run did not record it.
 */
const WALL_PARTS = [
  {key: 'steps', label: 'Steps after warm-up', note: 'data wait, compute and host overhead of every step after warm-up'},
  {key: 'warmup', label: 'Warm-up', note: WARMUP_TEXT.replace(/^warm-up is /, '') + ': tracing, graph optimisation, compilation'},
  {key: 'between_steps', label: 'Between steps', note: 'epoch starts (iterator creation), validation, callbacks at epoch end'},
  {key: 'measurement', label: 'This tool\u2019s own measurement', note: 'timing and writing the records'},
];

function wallPanel(run) {
  const wall = run.wall_ms && typeof run.wall_ms === 'object' ? run.wall_ms : null;
  if (!wall || !isNum(wall.total) || !(wall.total > 0)) return null;
  const shares = run.wall_shares && typeof run.wall_shares === 'object' ? run.wall_shares : {};
  const shareOf = (key) => (isNum(shares[key]) ? shares[key]
    : isNum(wall[key]) ? wall[key] / wall.total : null);
  const table = el('table', {class: 'dc-table dc-wall-table'}, [
    el('thead', {}, [el('tr', {}, [
      el('th', {text: 'Part of the fit'}),
      el('th', {class: 'dc-num', text: 'ms'}),
      el('th', {class: 'dc-num', text: 'share'}),
      el('th', {class: 'dc-wall-note-col', text: 'what it holds'}),
    ])]),
    el('tbody', {}, [
      ...WALL_PARTS.map((part) => el('tr', {attrs: {'data-part': part.key}}, [
        el('th', {class: 'dc-row-head', text: part.label}),
        el('td', {class: 'dc-num', text: fmtMs(wall[part.key])}),
        el('td', {class: 'dc-num', text: fmtShare(shareOf(part.key))}),
        el('td', {class: 'dc-muted dc-wall-note', text: part.note}),
      ])),
      el('tr', {class: 'dc-wall-total', attrs: {'data-part': 'total'}}, [
        el('th', {class: 'dc-row-head', text: 'The fit\u2019s wall time'}),
        el('td', {class: 'dc-num', text: fmtMs(wall.total)}),
        el('td', {class: 'dc-num', text: fmtShare(1)}),
        el('td', {class: 'dc-muted dc-wall-note', text: 'the four parts above add up to it'}),
      ]),
    ]),
  ]);
  const sentence = 'The fit took ' + fmtMsUnit(wall.total) + ': ' +
    fmtMsUnit(wall.steps) + ' in steady-state steps, ' + fmtMsUnit(wall.warmup) + ' in warm-up, ' +
    fmtMsUnit(wall.between_steps) + ' between steps and ' + fmtMsUnit(wall.measurement) +
    ' in this tool\u2019s own measurement. The step times above cover only the steady-state ' +
    'steps; Keras\u2019s progress bar divides an epoch\u2019s whole time by its steps, so its ' +
    'ms/step also counts warm-up and the time between steps.';
  return panel('Where the fit\u2019s wall time went', [
    el('p', {class: 'dc-wall-sentence', text: sentence}),
    el('div', {class: 'dc-table-wrap'}, [table]),
  ], 'dc-wall');
}

function findingsPanel(findings) {
  const list = Array.isArray(findings) ? findings.filter(Boolean).slice() : [];
  list.sort((a, b) => (SEVERITY_RANK[b.severity] || 0) - (SEVERITY_RANK[a.severity] || 0));
  const ul = el('ul', {class: 'dc-findings'});
  if (list.length === 0) {
    ul.appendChild(el('li', {class: 'dc-finding dc-muted', text: 'No findings: nothing stands out in this run.'}));
  }
  for (const f of list) {
    const [headline, details] = findingText(f);
    ul.appendChild(el('li', {
      class: 'dc-finding', attrs: {'data-finding': f.id != null ? String(f.id) : '', 'data-severity': String(f.severity || 'info')},
    }, [
      el('div', {class: 'dc-finding-head'}, [
        severityBadge(f.severity),
        el('span', {class: 'dc-finding-id', text: f.id != null ? String(f.id).replace(/_/g, ' ') : ''}),
      ]),
      headline,
      f.fix ? el('p', {class: 'dc-finding-fix'}, [el('strong', {text: 'Fix: '}), el('span', {text: String(f.fix)})]) : null,
      f.fix ? expectedLine(f.expected) : null,
      details,
    ]));
  }
  return panel('Findings', [ul], 'dc-findings-panel');
}

/**
 * What a finding's fix would buy, beside the fix: the analysis's own words
 * (`expected.text`, `expected.basis`), so the tab and the report agree.
 * @param {?Object} expected a finding's `expected`.
 * @return {?HTMLElement}
 */
function expectedLine(expected) {
  if (!expected || typeof expected !== 'object') return null;
  const estimated = isNum(expected.speedup);
  const basis = expected.basis != null ? String(expected.basis) : '';
  return el('p', {
    class: 'dc-finding-expected' + (estimated ? '' : ' dc-muted'),
    attrs: {'data-estimated': estimated ? 'true' : 'false'},
  }, [
    el('strong', {text: 'Expected: '}),
    el('span', {class: 'dc-expected-text', text: estimated ? String(expected.text) : 'no estimate'}),
    basis ? el('span', {class: 'dc-expected-basis', text: (estimated ? '. How: ' : ': ') + basis + '.'}) : null,
  ]);
}

function percentileTable(run) {
  const shares = run.shares || {};
  const rows = [
    {label: 'step', stats: run.step_ms, share: null},
    {label: 'data wait', stats: run.data_wait_ms, share: shares.data_wait, color: COMPONENTS[0].color},
    {label: 'compute', stats: run.compute_ms, share: shares.compute, color: COMPONENTS[1].color},
    {label: 'host overhead', stats: run.host_overhead_ms, share: shares.host_overhead, color: COMPONENTS[2].color},
  ];
  const keys = ['p50', 'p90', 'p99', 'mean'];
  return el('table', {class: 'dc-table dc-percentiles'}, [
    el('thead', {}, [el('tr', {}, [
      el('th', {text: ''}),
      ...keys.map((k) => el('th', {class: 'dc-num', text: k})),
      el('th', {class: 'dc-num', text: 'share'}),
    ])]),
    el('tbody', {}, rows.map((row) => el('tr', {attrs: {'data-component': row.label}}, [
      el('th', {class: 'dc-row-head'}, [
        row.color ? swatch(row.color) : null,
        row.label,
      ]),
      ...keys.map((k) => el('td', {class: 'dc-num', text: fmtMs(row.stats ? row.stats[k] : null)})),
      el('td', {class: 'dc-num', text: row.share === null ? '' : fmtShare(row.share)}),
    ]))),
  ]);
}

function countList(counts) {
  if (!counts || typeof counts !== 'object' || Object.keys(counts).length === 0) {
    return el('span', {class: 'dc-muted', text: DASH});
  }
  return el('span', {class: 'dc-count-list'}, Object.entries(counts).map(([device, n]) =>
    el('span', {class: 'dc-chip'}, [
      el('span', {class: 'dc-chip-key', text: device}),
      el('span', {class: 'dc-chip-value', text: fmtCount(n)}),
    ])));
}

function placementPanel(run) {
  const placement = run.placement;
  if (!placement || typeof placement !== 'object') {
    return el('p', {
      class: 'dc-muted',
      text: 'Placement was not recorded for this run (it is read on the first step of a ' +
        'TensorFlow-backend fit).',
    });
  }
  const {device, others} = stepDevices(run);
  const models = placement.device_models && typeof placement.device_models === 'object' ? placement.device_models : {};
  const named = (d) => (models[d] ? d + ' (' + String(models[d]) + ')' : d);
  const visible = Array.isArray(placement.devices) ? placement.devices.map(String) : [];
  const cpuOps = Array.isArray(placement.cpu_ops_on_accelerator_run) ? placement.cpu_ops_on_accelerator_run : null;
  const rows = [
    ['Step ran on', el('span', {class: 'dc-step-device', text: device ? named(device) : DASH})],
    others.length
      ? ['Also used', el('span', {class: 'dc-count-list'}, others.map((d) => el('span', {class: 'dc-chip', text: named(d)})))]
      : null,
    ['Variables per device', countList(placement.variables)],
    ['Ops per device', countList(placement.ops)],
    ['CPU ops in an accelerator run', cpuOps === null
      ? el('span', {class: 'dc-muted', text: DASH})
      : cpuOps.length === 0
        ? el('span', {text: 'none'})
        : el('span', {class: 'dc-count-list dc-cpu-ops'}, cpuOps.map((op) => el('code', {class: 'dc-op', text: String(op)})))],
    ['Cross-device copies', el('span', {text: fmtCount(placement.cross_device_copies)})],
    ['Input bytes per step', el('span', {text: fmtBytes(placement.input_bytes_per_step)})],
    visible.length
      ? ['Visible devices', el('span', {class: 'dc-muted dc-visible-devices', text: visible.join(', '),
        title: 'Devices TensorFlow could use; the step ran on the ones above'})]
      : null,
  ].filter(Boolean);
  return el('dl', {class: 'dc-kv'}, rows.flatMap(([k, v]) => [el('dt', {text: k}), el('dd', {}, [v])]));
}

/** The sentence shown instead of a Profile-tab link when the tab is absent. */
function noProfileTab(what) {
  return el('p', {class: 'dc-no-profile-tab'}, [
    what + ' TensorBoard has no Profile tab: install it with ',
    el('code', {text: 'pip install ".[profile]"'}),
    ' in the tb-devicecost clone (it installs xprof), then restart TensorBoard.',
  ]);
}

function profileLinks(profile, profileTab) {
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
      const label = [c.capture, c.host].filter((x) => x != null && x !== '').map(String).join(' \u00b7 ') || 'capture';
      const href = linked ? safeHref(c.url) : null;
      return el('li', {}, [
        href
          ? el('a', {class: 'dc-profile-link', text: label, attrs: {href, target: '_top'}})
          : el('span', {class: 'dc-profile-capture', text: label}),
        href ? el('span', {class: 'dc-muted', text: ' \u2014 opens in the Profile tab'}) : null,
      ]);
    })),
    linked ? null : noProfileTab('These captures open in the Profile tab, but this'),
  ]);
}

// Run info: what helps a user read and reproduce the run, in their words.
// Internals (the record schema, steps per record, the fetch floor of the run
// info, which the Fetch floor card shows as analysed) stay out.

const LIBRARIES = [
  ['keras', 'Keras'], ['tensorflow', 'TensorFlow'], ['jax', 'JAX'], ['torch', 'PyTorch'],
  ['numpy', 'NumPy'], ['tensorboard', 'TensorBoard'], ['tb_devicecost', 'tb-devicecost'],
];

function text(v) {
  return v === null || v === undefined || v === '' ? null : String(v);
}

function yesNo(v) {
  return typeof v === 'boolean' ? (v ? 'yes' : 'no') : null;
}

/** The distribution strategy's name, or null for Keras's default (none). */
function strategyText(info) {
  const name = text(info.distribution_strategy);
  if (!name || /^_?Default/.test(name)) return null;
  const replicas = isNum(info.replicas) && info.replicas > 1 ? ', ' + fmtCount(info.replicas) + ' replicas' : '';
  return name.replace(/^_+/, '') + replicas;
}

/** A process of a multi-process job: its index, and the devices it holds. */
function processRow(info) {
  if (!isNum(info.process_count) || info.process_count < 2 || !isNum(info.process_index)) return null;
  const devices = Array.isArray(info.local_devices) ? info.local_devices.map(String).join(', ') : '';
  return ['Process', fmtCount(info.process_index) + ' of ' + fmtCount(info.process_count) +
    (devices ? ', holding ' + devices : '')];
}

/** How the batch is split (the run object's `distribution`). */
function batchSplitRow(distribution) {
  if (!distribution || typeof distribution !== 'object') return null;
  const parts = [
    isNum(distribution.global_batch) ? fmtCount(distribution.global_batch) + ' in all' : null,
    isNum(distribution.per_process_batch) && distribution.process_count > 1
      ? fmtCount(distribution.per_process_batch) + ' per process' : null,
    isNum(distribution.per_replica_batch) ? fmtCount(distribution.per_replica_batch) + ' per replica' : null,
  ].filter(Boolean);
  return parts.length ? ['Batch split', parts.join(', ')] : null;
}

/** [label, value] rows of the run info a user needs; values are strings. */
function infoRows(run) {
  const info = run.info && typeof run.info === 'object' ? run.info : {};
  const versions = info.versions && typeof info.versions === 'object' ? info.versions : {};
  const versionText = LIBRARIES.filter(([key]) => text(versions[key]))
    .map(([key, label]) => label + ' ' + String(versions[key])).join(', ');
  const spe = isNum(info.steps_per_execution) ? info.steps_per_execution : null;
  const model = text(info.model);
  const host = [text(info.cpu_model), isNum(info.cpu_count) ? fmtCount(info.cpu_count) + ' CPUs' : null]
    .filter(Boolean).join(', ');
  const rows = [
    ['Backend', text(info.backend) || text(run.backend)],
    ['Versions', versionText || null],
    ['Device', run.device != null ? stepDevicesText(run) : null],
    ['Batch size', isNum(run.batch_size) ? fmtCount(run.batch_size)
      : isNum(info.batch_size) ? fmtCount(info.batch_size) : null],
    ['XLA compilation (jit_compile)', yesNo(info.jit_compile !== undefined ? info.jit_compile : run.jit_compile)],
    spe !== null && spe > 1 ? ['Steps per call (steps_per_execution)', fmtCount(spe)] : null,
    ['Distribution strategy', strategyText(info)],
    processRow(info),
    batchSplitRow(run.distribution),
    ['Precision (dtype policy)', text(info.dtype_policy)],
    info.run_eagerly === true ? ['Runs eagerly (run_eagerly)', 'yes: every step runs op by op in Python'] : null,
    ['Model', model ? model + (isNum(info.parameters) ? ', ' + fmtCount(info.parameters) + ' parameters' : '') : null],
    ['Host', text(info.hostname) ? String(info.hostname) + (host ? ' (' + host + ')' : '') : host || null],
    ['Started', text(info.start_time)],
  ];
  return rows.filter((row) => row && row[1] !== null);
}

function infoList(run) {
  const rows = infoRows(run);
  if (rows.length === 0) {
    return el('p', {class: 'dc-muted', text: 'No run info recorded.'});
  }
  return el('dl', {class: 'dc-kv'}, rows.flatMap(([k, v]) => [
    el('dt', {text: k}),
    el('dd', {text: v}),
  ]));
}

// ---------------------------------------------------------------------------
// Profiler trace windows: the trace's own breakdown of the traced steps set
// beside ours for the same steps.

const SOURCES = {
  'tb_devicecost': 'captured by tb-devicecost (profile_steps)',
  'keras.callbacks.TensorBoard': 'captured by keras.callbacks.TensorBoard(profile_batch=...)',
};

function sourceText(source) {
  if (source === null || source === undefined || source === '') return 'captured by an unknown profiler';
  const key = String(source);
  return Object.prototype.hasOwnProperty.call(SOURCES, key) ? SOURCES[key] : 'captured by ' + key;
}

/** "Steps 2–4" for the window [2, 5); "Step 7" for [7, 8). */
function stepRangeText(start, stop) {
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

function tracesPanel(windows, profileTab) {
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
    capture ? 'capture ' + capture : null,
    host ? 'host ' + host : null,
    isNum(w.trace_bytes) ? fmtBytes(w.trace_bytes) + ' trace' : null,
  ].filter(Boolean).join(' \u00b7 ');

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
    meta ? el('div', {class: 'dc-trace-meta dc-muted', text: meta}) : null,
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
