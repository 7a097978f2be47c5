// Compare: chosen runs side by side, per component, with each difference
// explained in words.

import {el, isolated, runName} from './dom.js';
import {fmtMs, fmtSignedMs, fmtCount, isNum} from '../format.js';
import {stackedBars, componentLegend, swatch, COMPONENTS} from './charts.js';
import {
  verdictBadge, panel, backLink, runningNote, deviceCell, baselineField, baselineNote, speedupCell,
  isBaselineRun,
} from './common.js';

/**
 * @param {Object} data the `compare` route's JSON.
 * @param {{hashFor: function(Object): string, navigate: function(Object),
 *          state: Object, chartWidth: number}} app
 * @return {HTMLElement}
 */
export function buildCompare(data, app) {
  const runs = Array.isArray(data && data.runs) ? data.runs.filter((r) => r && r.run != null) : [];
  const rows = Array.isArray(data && data.rows) ? data.rows.filter((r) => r && r.run != null) : [];
  const baseline = data && data.baseline != null ? String(data.baseline) : null;
  const rowByName = new Map(rows.map((r) => [String(r.run), r]));
  const root = el('div', {class: 'dc-compare'});

  root.appendChild(el('nav', {class: 'dc-crumbs'}, [
    backLink(app.hashFor({view: 'overview', baseline: app.state.baseline})),
  ]));

  const head = el('div', {class: 'dc-detail-head'}, [
    el('h2', {class: 'dc-run-title', text: 'Comparing ' + runs.length + ' runs'}),
  ]);
  if (runs.length >= 2) {
    const names = runs.map((r) => String(r.run));
    head.appendChild(el('span', {class: 'dc-spacer'}));
    head.appendChild(baselineField(names, baseline, rows.length ? 'each model\u2019s CPU run' : 'none',
      (chosen) => app.navigate({view: 'compare', runs: names, baseline: chosen})));
  }
  root.appendChild(head);

  for (const r of runs) if (r.status === 'running') root.appendChild(runningNote(String(r.run)));

  if (runs.length === 0) {
    root.appendChild(el('p', {class: 'dc-empty', text: 'None of these runs has Device Cost data.'}));
    return root;
  }
  root.appendChild(baselineNote({baseline, baseline_reason: data.baseline_reason, rows}));

  // What the differences mean, first: that is the answer the user came for.
  if (rows.length) {
    const explanations = el('ul', {class: 'dc-explanations'});
    for (const row of rows) {
      const name = String(row.run);
      const isBase = isBaselineRun(name, row, baseline);
      const text = row.explanation && row.explanation !== 'baseline'
        ? String(row.explanation)
        : isBase ? 'The baseline: the other runs are measured against it.' : 'No explanation available.';
      explanations.appendChild(el('li', {class: 'dc-explanation', attrs: {'data-run': name}}, [
        runName(name),
        isBase ? el('span', {class: 'dc-tag', text: 'baseline'}) : null,
        el('span', {class: 'dc-explanation-text', text: text}),
      ]));
    }
    root.appendChild(panel('What the differences mean', [explanations]));
  }

  const why = whyPanel(rows);
  if (why) root.appendChild(why);

  root.appendChild(panel('Mean time per step', [
    componentLegend([], {handover: true}),
    stackedBars(runs.map((run) => ({
      label: String(run.run),
      values: meanComponents(run),
      readyFetchMs: run.ready_fetch_ms,
    })), {width: app.chartWidth || 860, unit: 'ms per step (mean)'}),
  ], 'dc-chart-panel'));

  root.appendChild(panel('Side by side', [el('div', {class: 'dc-table-wrap'}, [summaryTable(runs, rowByName, baseline)])]));
  root.appendChild(panel('Per component', [el('div', {class: 'dc-table-wrap'}, [componentTable(runs, rowByName, baseline)])]));
  root.appendChild(el('p', {
    class: 'dc-footnote',
    text: 'Per step: each component\u2019s mean time in a steady-state step (warm-up excluded). ' +
      'Per 1000 samples: the same time scaled by the batch size, so runs with different batch ' +
      'sizes compare fairly. The speedup is from mean step times, like samples/s: a median ' +
      'would hide rare long stalls.',
  }));
  return root;
}

/**
 * The numbers the explanations quote (each row's `scaling` and `parts`):
 * each device's fixed cost and cost per sample where the same model ran at
 * several batch sizes, and per compared run its fixed cost, device time,
 * batch bytes, warm-up and wait above a ready batch beside its baseline's.
 * @param {!Array<Object>} rows the comparison's rows.
 * @return {?HTMLElement}
 */
function whyPanel(rows) {
  const compared = rows.filter((row) => row.parts && typeof row.parts === 'object');
  if (!compared.length) return null;
  const children = [];
  const seen = new Set();
  for (const row of compared) {
    const scaling = row.scaling;
    if (!scaling || !scaling.devices || typeof scaling.devices !== 'object') continue;
    const key = JSON.stringify(scaling);
    if (seen.has(key)) continue;
    seen.add(key);
    children.push(scalingTable(scaling));
    // Whose fits: the model's sweep (the crossover its own panel gives) or
    // the compared model's runs at other batch sizes.
    // Device and sweep names are the recorded data's: each isolated.
    const source = scaling.sweep != null
      ? [' From the sweep \u201c', isolated(scaling.sweep), '\u201d of this model.'] : [];
    const crossover = isNum(scaling.crossover_batch)
      ? [isolated(scaling.faster_above), ' overtakes ', isolated(scaling.faster_below), ' above about ' +
        fmtCount(scaling.crossover_batch) + ' samples per step' +
        (scaling.crossover_extrapolated ? ' (beyond the batch sizes measured).' : '.'), ...source]
      : scaling.faster_above != null && Object.keys(scaling.devices).length > 1
        ? [isolated(scaling.faster_above), ' is faster at every batch size, by the fit.', ...source] : null;
    if (crossover) children.push(el('p', {class: 'dc-crossover'}, crossover));
  }
  children.push(el('div', {class: 'dc-table-wrap'}, [partsTable(compared)]));
  return panel('Why, in numbers', children, 'dc-why-panel');
}

/** Each device's step as a fixed cost plus a cost per sample. */
function scalingTable(scaling) {
  const table = el('table', {class: 'dc-table dc-scaling-table'});
  table.appendChild(el('thead', {}, [el('tr', {}, [
    el('th', {text: 'Device'}),
    el('th', {class: 'dc-num', text: 'Fixed cost (ms per step)', title: 'Fitted over the mean steps of the same model at several batch sizes'}),
    // Words, not \u00b5s: the header's capitals would turn µ into a Greek capital M.
    el('th', {class: 'dc-num', text: 'Per sample (microseconds)'}),
    el('th', {text: 'Batch sizes measured'}),
  ])]));
  const tbody = el('tbody');
  for (const [device, fit] of Object.entries(scaling.devices)) {
    const points = Array.isArray(fit && fit.points) ? fit.points : [];
    tbody.appendChild(el('tr', {attrs: {'data-device': device}}, [
      el('td', {}, [isolated(device)]),
      el('td', {class: 'dc-num', text: fmtMs(fit && fit.fixed_ms)}),
      el('td', {class: 'dc-num', text: fmtMs(fit && fit.per_sample_us)}),
      el('td', {text: points.map((p) => fmtCount(p && p.batch_size)).join(', ')}),
    ]));
  }
  table.appendChild(tbody);
  return table;
}

/** Per compared run: each part beside its baseline's (run / baseline). */
function partsTable(rows) {
  const columns = [
    ['fixed_ms', 'Fixed cost (ms per step)', fmtMs],
    ['device_busy_ms', 'Device busy (ms per step)', fmtMs],
    // Bytes as the explanation writes them (12,928), not in KiB.
    ['input_bytes_per_step', 'Batch bytes', fmtCount],
    ['warmup_ms', 'Warm-up (ms)', fmtMs],
    ['starved_data_wait_ms', 'Wait above a ready batch (ms)', fmtMs],
  ];
  const table = el('table', {class: 'dc-table dc-parts-table'});
  table.appendChild(el('thead', {}, [el('tr', {}, [
    el('th', {class: 'dc-col-run', text: 'Run (against)'}),
    ...columns.map(([, label]) => el('th', {class: 'dc-num', text: label, title: 'This run / the run it is compared with'})),
  ])]));
  const tbody = el('tbody');
  for (const row of rows) {
    tbody.appendChild(el('tr', {attrs: {'data-run': String(row.run)}}, [
      el('td', {class: 'dc-col-run'}, [runName(String(row.run)),
        el('div', {class: 'dc-muted', text: 'against ' + String(row.against != null ? row.against : '')})]),
      ...columns.map(([key, , format]) => {
        const part = row.parts[key] || {};
        return el('td', {class: 'dc-num', attrs: {'data-part': key}, text: format(part.run) + ' / ' + format(part.baseline)});
      }),
    ]));
  }
  table.appendChild(tbody);
  return table;
}

function meanComponents(run) {
  const out = {};
  for (const c of COMPONENTS) {
    const stats = run[c.column];
    out[c.key] = stats && isNum(stats.mean) ? stats.mean : null;
  }
  return out;
}

/** Mean ms per 1000 samples of each component (the analysis's rule). */
function perThousandSamples(run) {
  const out = {};
  const means = meanComponents(run);
  for (const c of COMPONENTS) {
    out[c.key] = isNum(means[c.key]) && isNum(run.samples_per_step) && run.samples_per_step > 0
      ? means[c.key] / run.samples_per_step * 1000 : null;
  }
  return out;
}

function runCell(name) {
  return el('td', {class: 'dc-col-run'}, [runName(name)]);
}

/** Run, device, batch, verdict, p50 and mean step, speedup. */
function summaryTable(runs, rowByName, baseline) {
  const table = el('table', {class: 'dc-table dc-compare-table'});
  table.appendChild(el('thead', {}, [el('tr', {}, [
    el('th', {class: 'dc-col-run', text: 'Run'}),
    el('th', {text: 'Device', title: 'Where the step ran (the device holding most of the first step\u2019s ops)'}),
    el('th', {class: 'dc-num', text: 'Batch'}),
    el('th', {text: 'Verdict'}),
    el('th', {class: 'dc-num', text: 'p50 step (ms)', title: 'Median steady-state step time'}),
    el('th', {class: 'dc-num', text: 'Mean step (ms)', title: 'Mean steady-state step time: the speedup is from it'}),
    el('th', {
      class: 'dc-num', text: 'Speedup (mean step)',
      title: 'The baseline\u2019s mean step time over this run\u2019s (samples/s when batch sizes differ)' +
        (baseline ? '. Baseline: ' + baseline : ''),
    }),
  ])]));
  const tbody = el('tbody');
  for (const run of runs) {
    const name = String(run.run);
    const row = rowByName.get(name) || null;
    const step = run.step_ms || {};
    tbody.appendChild(el('tr', {
      class: 'dc-compare-row' + (isBaselineRun(name, row, baseline) ? ' dc-baseline-row' : ''),
      attrs: {'data-run': name},
    }, [
      runCell(name),
      el('td', {class: 'dc-col-device'}, deviceCell(run)),
      el('td', {class: 'dc-num', text: fmtCount(run.batch_size)}),
      el('td', {class: 'dc-col-verdict'}, [verdictBadge(run.verdict)]),
      el('td', {class: 'dc-num dc-step-ms', attrs: {'data-stat': 'p50'}, text: fmtMs(step.p50)}),
      el('td', {class: 'dc-num', attrs: {'data-stat': 'mean'}, text: fmtMs(step.mean)}),
      speedupCell(name, row, baseline),
    ]));
  }
  table.appendChild(tbody);
  return table;
}

/** Each component's mean per step (with the difference) and per 1000 samples. */
function componentTable(runs, rowByName, baseline) {
  const table = el('table', {class: 'dc-table dc-component-table'});
  table.appendChild(el('thead', {}, [
    el('tr', {}, [
      el('th', {attrs: {rowspan: 2}, class: 'dc-col-run', text: 'Run'}),
      el('th', {attrs: {colspan: 3}, class: 'dc-group', text: 'Mean ms per step (\u0394 vs baseline)'}),
      el('th', {
        attrs: {colspan: 3}, class: 'dc-group',
        text: 'Mean ms per 1000 samples (\u0394 when batch sizes differ)',
      }),
    ]),
    el('tr', {}, [...COMPONENTS, ...COMPONENTS].map((c) =>
      el('th', {class: 'dc-num dc-sub'}, [
        swatch(c.color),
        c.label,
      ]))),
  ]));
  const tbody = el('tbody');
  for (const run of runs) {
    const name = String(run.run);
    const row = rowByName.get(name) || null;
    const isBase = isBaselineRun(name, row, baseline);
    const perStep = meanComponents(run);
    // Differences where the speedup was judged: per step, or per 1000
    // samples when the batch sizes differ (as the report prints them).
    const perSample = Boolean(row && row.basis === 'samples_per_s');
    const deltaStep = (!perSample && row && row.delta_ms) || {};
    const deltaSample = (perSample && row && row.delta_per_1000_samples_ms) || {};
    const per1000 = (row && row.per_1000_samples_ms) || perThousandSamples(run);
    const cell = (value, delta, key) => el('td', {class: 'dc-num', attrs: {'data-component': key}}, [
      el('span', {text: fmtMs(value)}),
      !isBase && isNum(delta)
        ? el('div', {class: 'dc-delta ' + (delta > 0 ? 'dc-slower' : 'dc-faster'), text: fmtSignedMs(delta)})
        : null,
    ]);
    tbody.appendChild(el('tr', {
      class: 'dc-compare-row' + (isBase ? ' dc-baseline-row' : ''), attrs: {'data-run': name},
    }, [
      runCell(name),
      ...COMPONENTS.map((c) => cell(perStep[c.key], deltaStep[c.key], c.key)),
      ...COMPONENTS.map((c) => cell(per1000[c.key], deltaSample[c.key], c.key)),
    ]));
  }
  table.appendChild(tbody);
  return table;
}
