// Run detail: per-step stacked chart, percentiles, placement, findings,
// profiler captures and run info for one run.

import {
  el, safeHref, fmtMs, fmtMsUnit, fmtPct, fmtRate, fmtInt, fmtBytes, isNum, DASH,
} from './dom.js';
import {stepChart, componentLegend, COMPONENTS, WARMUP_COLOR, SPIKE_COLOR} from './charts.js';
import {verdictBadge, severityBadge, panel, runningNote, backLink, SEVERITY_RANK} from './common.js';

/**
 * @param {Object} data the `run` route's JSON (RUN plus series, warmup_steps,
 *     spike_steps, info).
 * @param {{hashFor: function(Object): string, state: Object, chartWidth: number}} app
 * @return {HTMLElement}
 */
export function buildDetail(data, app) {
  const run = data || {};
  const name = run.run != null ? String(run.run) : String(app.state.run || '');
  const root = el('div', {class: 'dc-detail', attrs: {'data-run': name}});

  root.appendChild(el('nav', {class: 'dc-crumbs'}, [
    backLink(app.hashFor({view: 'overview', baseline: app.state.baseline})),
  ]));
  root.appendChild(el('div', {class: 'dc-detail-head'}, [
    el('h2', {class: 'dc-run-title', text: name}),
    verdictBadge(run.verdict),
  ]));
  if (run.status === 'running') root.appendChild(runningNote(null));

  root.appendChild(statStrip(run));
  root.appendChild(findingsPanel(run.findings));

  const chartPanel = panel('Where each step\u2019s time went', [
    componentLegend([
      {label: 'warm-up step', color: WARMUP_COLOR, kind: 'line'},
      {label: 'spike', color: SPIKE_COLOR, kind: 'marker'},
    ]),
    stepChart(run.series || {}, {
      warmupSteps: Array.isArray(run.warmup_steps) ? run.warmup_steps : [],
      spikeSteps: Array.isArray(run.spike_steps) ? run.spike_steps : [],
      width: app.chartWidth || 900,
      height: 300,
    }),
  ], 'dc-chart-panel');
  root.appendChild(chartPanel);

  root.appendChild(el('div', {class: 'dc-grid-2'}, [
    panel('Step time percentiles (steady state, ms)', [percentileTable(run)]),
    panel('Placement', [placementPanel(run.placement, run.device)], 'dc-placement'),
  ]));
  root.appendChild(el('div', {class: 'dc-grid-2'}, [
    panel('Profiler captures', [profileLinks(run.profile)], 'dc-profile'),
    panel('Run info', [infoList(run)], 'dc-info'),
  ]));
  return root;
}

function stat(label, value, sub) {
  return el('div', {class: 'dc-stat'}, [
    el('div', {class: 'dc-stat-label', text: label}),
    el('div', {class: 'dc-stat-value', text: value}),
    sub ? el('div', {class: 'dc-stat-sub', text: sub}) : null,
  ]);
}

function statStrip(run) {
  const step = run.step_ms || {};
  const shares = run.shares || {};
  const shareText = COMPONENTS.filter((c) => isNum(shares[c.key]))
    .map((c) => c.label + ' ' + fmtPct(shares[c.key])).join(', ');
  return el('div', {class: 'dc-stats'}, [
    stat('Median step', fmtMsUnit(step.p50), shareText || null),
    stat('Samples/s', fmtRate(run.samples_per_s),
      isNum(run.batch_size) ? 'batch size ' + fmtInt(run.batch_size) : null),
    stat('Steps', fmtInt(run.steps), run.status === 'running' ? 'still running' : null),
    stat('Warm-up', fmtMsUnit(run.warmup_ms),
      isNum(run.warmup_share_of_wall) ? fmtPct(run.warmup_share_of_wall) + ' of wall time' : null),
    stat('Spikes', fmtInt(run.spikes), 'steps far above the median'),
    stat('Fetch floor', fmtMsUnit(run.fetch_floor_ms), 'cost of handing over a ready batch'),
    stat('Device', run.device != null ? String(run.device) : DASH,
      run.backend != null ? String(run.backend) : null),
  ]);
}

function findingsPanel(findings) {
  const list = Array.isArray(findings) ? findings.filter(Boolean).slice() : [];
  list.sort((a, b) => (SEVERITY_RANK[b.severity] || 0) - (SEVERITY_RANK[a.severity] || 0));
  const ul = el('ul', {class: 'dc-findings'});
  if (list.length === 0) {
    ul.appendChild(el('li', {class: 'dc-finding dc-muted', text: 'No findings: nothing stands out in this run.'}));
  }
  for (const f of list) {
    ul.appendChild(el('li', {
      class: 'dc-finding', attrs: {'data-finding': f.id != null ? String(f.id) : '', 'data-severity': String(f.severity || 'info')},
    }, [
      el('div', {class: 'dc-finding-head'}, [
        severityBadge(f.severity),
        el('span', {class: 'dc-finding-id', text: f.id != null ? String(f.id).replace(/_/g, ' ') : ''}),
      ]),
      el('p', {class: 'dc-finding-message', text: f.message != null ? String(f.message) : ''}),
      f.fix ? el('p', {class: 'dc-finding-fix'}, [el('strong', {text: 'Fix: '}), el('span', {text: String(f.fix)})]) : null,
    ]));
  }
  return panel('Findings', [ul], 'dc-findings-panel');
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
        row.color ? el('span', {class: 'dc-swatch dc-swatch-box', attrs: {style: 'background:' + row.color}}) : null,
        row.label,
      ]),
      ...keys.map((k) => el('td', {class: 'dc-num', text: fmtMs(row.stats ? row.stats[k] : null)})),
      el('td', {class: 'dc-num', text: row.share === null ? '' : fmtPct(row.share)}),
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
      el('span', {class: 'dc-chip-value', text: fmtInt(n)}),
    ])));
}

function placementPanel(placement, device) {
  if (!placement || typeof placement !== 'object') {
    return el('p', {
      class: 'dc-muted',
      text: 'Placement was not recorded for this run (it is read on the first step of a ' +
        'TensorFlow-backend fit).',
    });
  }
  const cpuOps = Array.isArray(placement.cpu_ops_on_accelerator_run) ? placement.cpu_ops_on_accelerator_run : null;
  const rows = [
    ['Devices', Array.isArray(placement.devices) && placement.devices.length
      ? el('span', {class: 'dc-count-list'}, placement.devices.map((d) => el('span', {class: 'dc-chip', text: String(d)})))
      : el('span', {text: device != null ? String(device) : DASH})],
    ['Variables per device', countList(placement.variables)],
    ['Ops per device', countList(placement.ops)],
    ['CPU ops in an accelerator run', cpuOps === null
      ? el('span', {class: 'dc-muted', text: DASH})
      : cpuOps.length === 0
        ? el('span', {text: 'none'})
        : el('span', {class: 'dc-count-list dc-cpu-ops'}, cpuOps.map((op) => el('code', {class: 'dc-op', text: String(op)})))],
    ['Cross-device copies', el('span', {text: fmtInt(placement.cross_device_copies)})],
    ['Input bytes per step', el('span', {text: fmtBytes(placement.input_bytes_per_step)})],
  ];
  return el('dl', {class: 'dc-kv'}, rows.flatMap(([k, v]) => [el('dt', {text: k}), el('dd', {}, [v])]));
}

function profileLinks(profile) {
  const captures = Array.isArray(profile) ? profile.filter(Boolean) : [];
  if (captures.length === 0) {
    return el('p', {
      class: 'dc-muted',
      text: 'No profiler captures for this run. A trace from the Profile tab shows individual ' +
        'kernels; this tab measures every step without one.',
    });
  }
  return el('ul', {class: 'dc-profile-list'}, captures.map((c) => {
    const label = [c.capture, c.host].filter((x) => x != null && x !== '').map(String).join(' \u00b7 ') || 'capture';
    const href = safeHref(c.url);
    return el('li', {}, [
      href
        ? el('a', {class: 'dc-profile-link', text: label, attrs: {href, target: '_top'}})
        : el('span', {text: label}),
      href ? el('span', {class: 'dc-muted', text: ' \u2014 opens in the Profile tab'}) : null,
    ]);
  }));
}

function infoList(run) {
  const info = run.info && typeof run.info === 'object' ? run.info : {};
  const entries = Object.entries(info);
  if (entries.length === 0) {
    return el('p', {class: 'dc-muted', text: 'No run info recorded.'});
  }
  return el('dl', {class: 'dc-kv'}, entries.flatMap(([k, v]) => [
    el('dt', {text: k.replace(/_/g, ' ')}),
    el('dd', {text: formatInfoValue(v)}),
  ]));
}

function formatInfoValue(v) {
  if (v === null || v === undefined) return DASH;
  if (typeof v === 'boolean') return v ? 'yes' : 'no';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(4)));
  if (typeof v === 'string') return v;
  try {
    if (!Array.isArray(v)) {
      // e.g. versions: {"keras": "3.15.1", "jax": null} -> "keras 3.15.1"
      return Object.entries(v).filter(([, x]) => x !== null && x !== undefined)
        .map(([k, x]) => k + ' ' + (typeof x === 'object' ? JSON.stringify(x) : formatInfoValue(x))).join(', ') || DASH;
    }
    return v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(', ');
  } catch (e) {
    return String(v);
  }
}
