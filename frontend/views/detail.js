// Run detail: the stat strip, findings, the per-step stacked chart, the
// fit's wall time and the percentiles of one run, with the panels of
// run_info.js (placement, run info) and traces.js (profiler captures and
// trace windows).

import {el, runName} from './dom.js';
import {fmtMs, fmtMsUnit, fmtShare, fmtCount, fmtRate, isNum} from '../format.js';
import {
  componentLegend, swatch, COMPONENTS, WARMUP_COLOR, SPIKE_COLOR, TRACE_COLOR,
} from './charts.js';
import {stepChart} from './step_chart.js';
import {
  verdictBadge, severityBadge, panel, runningNote, backLink, SEVERITY_RANK, stepDevices,
  stepDevicesNodes, findingText, WARMUP_TEXT,
} from './common.js';
import {placementPanel, infoList} from './run_info.js';
import {profileLinks, tracesPanel, sourceText, stepRangeText} from './traces.js';

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
    // Measuring took so much of a step that the split is uncertain
    // (the `measuring_cost` finding says by how much).
    run.verdict_uncertain === true
      ? el('span', {class: 'dc-uncertain', attrs: {'data-uncertain': 'measuring_cost'},
        text: 'uncertain: measuring took ' + fmtShare(run.self_share) + ' of the step'})
      : null,
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
    Array.isArray(value)
      ? el('div', {class: 'dc-stat-value'}, value)
      : el('div', {class: 'dc-stat-value', text: value}),
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
    stat('Samples/s', fmtRate(run.samples_per_s),
      isNum(run.batch_size) ? 'batch size ' + fmtCount(run.batch_size) : null, 'samples_per_s'),
    stat('Steps', fmtCount(run.steps), run.status === 'running' ? 'still running' : null, 'steps'),
    stat('Warm-up', fmtMsUnit(run.warmup_ms),
      isNum(run.warmup_share_of_wall) ? fmtShare(run.warmup_share_of_wall) + ' of the fit\u2019s wall time' : null,
      'warmup'),
    stat('Spikes', fmtCount(run.spikes), 'steps far above the median', 'spikes'),
    stat('Fetch floor', fmtMsUnit(run.fetch_floor_ms),
      'cost of handing over a batch that is already ready', 'fetch_floor'),
    selfCostStat(run),
    stat('Device', stepDevicesNodes(run),
      [others.length ? 'the step used ' + (others.length + 1) + ' devices' : 'where the step ran',
        run.backend != null ? String(run.backend) : null].filter(Boolean).join(' \u00b7 '),
      'device'),
  ]);
}

/**
 * What this tool's own measuring took of a step (`self_us_per_step`), with
 * the analysis's sentence; "not recorded" for data written before it was.
 */
function selfCostStat(run) {
  const recorded = isNum(run.self_us_per_step);
  return stat('Measuring', recorded ? fmtMs(run.self_us_per_step) + ' \u00b5s a step' : 'not recorded',
    run.self_cost_text != null ? String(run.self_cost_text) : null, 'self_cost');
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
      f.fix ? expectedLine(f.expected, f.tried) : null,
      details,
    ]));
  }
  return panel('Findings', [ul], 'dc-findings-panel');
}

/**
 * What a finding's fix would buy, beside the fix: the analysis's own words
 * (`expected.text`, `expected.basis`), so the tab and the report agree.
 * Where `try_fixes` tried the fix, what it measured follows ("tried: 1.3x
 * (noise ±4%)").
 * @param {?Object} expected a finding's `expected`.
 * @param {?Object} tried a finding's `tried`, or undefined.
 * @return {?HTMLElement}
 */
function expectedLine(expected, tried) {
  if (!expected || typeof expected !== 'object') return null;
  const estimated = isNum(expected.speedup);
  const basis = expected.basis != null ? String(expected.basis) : '';
  return el('p', {
    class: 'dc-finding-expected' + (estimated ? '' : ' dc-muted'),
    attrs: {'data-estimated': estimated ? 'true' : 'false'},
  }, [
    el('strong', {text: 'Expected: '}),
    el('span', {class: 'dc-expected-text', text: estimated ? String(expected.text) : 'no estimate'}),
    tried && typeof tried === 'object' && tried.text != null
      ? el('span', {class: 'dc-finding-tried' + (tried.slower ? ' dc-tried-slower' : ''),
        text: ' (' + String(tried.text) + ')'})
      : null,
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
