// Compare: chosen runs side by side, per component, with each difference
// explained in words.

import {el, fmtMs, fmtDeltaMs, fmtSpeedup, fmtInt, isNum, DASH} from './dom.js';
import {stackedBars, componentLegend, COMPONENTS} from './charts.js';
import {verdictBadge, panel, backLink, runningNote} from './common.js';

/**
 * @param {Object} data the `compare` route's JSON.
 * @param {{hashFor: function(Object): string, navigate: function(Object),
 *          state: Object, chartWidth: number}} app
 * @return {HTMLElement}
 */
export function buildCompare(data, app) {
  const runs = Array.isArray(data && data.runs) ? data.runs.filter(Boolean) : [];
  const rows = Array.isArray(data && data.rows) ? data.rows.filter(Boolean) : [];
  const baseline = data && data.baseline != null ? String(data.baseline) : null;
  const byName = new Map(runs.map((r) => [String(r.run), r]));
  const root = el('div', {class: 'dc-compare'});

  root.appendChild(el('nav', {class: 'dc-crumbs'}, [
    backLink(app.hashFor({view: 'overview', baseline: baseline || app.state.baseline})),
  ]));

  const head = el('div', {class: 'dc-detail-head'}, [
    el('h2', {class: 'dc-run-title', text: 'Comparing ' + rows.length + ' runs'}),
  ]);
  if (rows.length >= 2) {
    const select = el('select', {class: 'dc-baseline', attrs: {'aria-label': 'Baseline run'}});
    for (const row of rows) {
      const name = String(row.run);
      const option = el('option', {text: name, attrs: {value: name}});
      if (name === baseline) option.selected = true;
      select.appendChild(option);
    }
    select.addEventListener('change', () => {
      app.navigate({view: 'compare', runs: rows.map((r) => String(r.run)), baseline: select.value});
    });
    head.appendChild(el('span', {class: 'dc-spacer'}));
    head.appendChild(el('label', {class: 'dc-field'}, [el('span', {text: 'Baseline'}), select]));
  }
  root.appendChild(head);

  const running = rows.map((r) => byName.get(String(r.run))).filter((r) => r && r.status === 'running');
  for (const r of running) root.appendChild(runningNote(String(r.run)));

  if (rows.length === 0) {
    root.appendChild(el('p', {class: 'dc-empty', text: 'None of these runs has Device Cost data.'}));
    return root;
  }

  // What the differences mean, first: that is the answer the user came for.
  const explanations = el('ul', {class: 'dc-explanations'});
  for (const row of rows) {
    const name = String(row.run);
    const isBase = name === baseline;
    const text = row.explanation
      ? String(row.explanation)
      : isBase ? 'The baseline: the other runs are measured against it.' : 'No explanation available.';
    explanations.appendChild(el('li', {class: 'dc-explanation', attrs: {'data-run': name}}, [
      el('span', {class: 'dc-run-name', text: name}),
      isBase ? el('span', {class: 'dc-tag', text: 'baseline'}) : null,
      el('span', {class: 'dc-explanation-text', text: text}),
    ]));
  }
  root.appendChild(panel('What the differences mean', [explanations]));

  root.appendChild(panel('Time per step', [
    componentLegend(),
    stackedBars(rows.map((row) => ({
      label: String(row.run),
      values: pick(row.per_step_ms),
    })), {width: app.chartWidth || 860, unit: 'ms per step'}),
  ], 'dc-chart-panel'));

  // The side-by-side table.
  const table = el('table', {class: 'dc-table dc-compare-table'});
  table.appendChild(el('thead', {}, [
    el('tr', {}, [
      el('th', {attrs: {rowspan: 2}, text: 'Run'}),
      el('th', {attrs: {rowspan: 2}, text: 'Device'}),
      el('th', {attrs: {rowspan: 2}, class: 'dc-num', text: 'Batch'}),
      el('th', {attrs: {rowspan: 2}, text: 'Verdict'}),
      el('th', {attrs: {rowspan: 2}, class: 'dc-num', text: 'Median step (ms)'}),
      el('th', {attrs: {rowspan: 2}, class: 'dc-num', text: 'Speedup vs baseline', title: baseline ? 'Baseline: ' + baseline : ''}),
      el('th', {attrs: {colspan: 3}, class: 'dc-group', text: 'ms per step (\u0394 vs baseline)'}),
      el('th', {attrs: {colspan: 3}, class: 'dc-group', text: 'ms per 1000 samples'}),
    ]),
    el('tr', {}, [...COMPONENTS, ...COMPONENTS].map((c) =>
      el('th', {class: 'dc-num dc-sub'}, [
        el('span', {class: 'dc-swatch dc-swatch-box', attrs: {style: 'background:' + c.color}}),
        c.label,
      ]))),
  ]));
  const tbody = el('tbody');
  for (const row of rows) {
    const name = String(row.run);
    const run = byName.get(name) || {};
    const isBase = name === baseline;
    const perStep = row.per_step_ms || {};
    const delta = row.delta_ms || {};
    const per1000 = row.per_1000_samples_ms || {};
    const speed = el('td', {class: 'dc-num dc-speedup'});
    if (isBase) {
      speed.textContent = fmtSpeedup(1) + ' (baseline)';
      speed.classList.add('dc-speedup-baseline');
    } else if (isNum(row.speedup)) {
      speed.appendChild(el('span', {class: row.speedup >= 1 ? 'dc-faster' : 'dc-slower', text: fmtSpeedup(row.speedup)}));
      if (row.same_batch_size === false && isNum(row.speedup_samples_per_s)) {
        speed.appendChild(el('div', {class: 'dc-muted dc-small', text: fmtSpeedup(row.speedup_samples_per_s) + ' in samples/s'}));
      }
    } else {
      speed.textContent = DASH;
    }
    const stepMs = isNum(row.step_ms) ? row.step_ms : (run.step_ms && run.step_ms.p50);
    tbody.appendChild(el('tr', {class: 'dc-compare-row' + (isBase ? ' dc-baseline-row' : ''), attrs: {'data-run': name}}, [
      el('td', {class: 'dc-col-run'}, [el('span', {class: 'dc-run-name', text: name})]),
      el('td', {text: run.device != null ? String(run.device) : DASH}),
      el('td', {class: 'dc-num', text: fmtInt(run.batch_size)}),
      el('td', {}, [verdictBadge(run.verdict)]),
      el('td', {class: 'dc-num', text: fmtMs(stepMs)}),
      speed,
      ...COMPONENTS.map((c) => el('td', {class: 'dc-num', attrs: {'data-component': c.key}}, [
        el('span', {text: fmtMs(perStep[c.key])}),
        !isBase && isNum(delta[c.key])
          ? el('div', {class: 'dc-delta ' + (delta[c.key] > 0 ? 'dc-slower' : 'dc-faster'), text: fmtDeltaMs(delta[c.key])})
          : null,
      ])),
      ...COMPONENTS.map((c) => el('td', {class: 'dc-num', text: fmtMs(per1000[c.key])})),
    ]));
  }
  table.appendChild(tbody);
  root.appendChild(panel('Side by side', [el('div', {class: 'dc-table-wrap'}, [table])]));
  root.appendChild(el('p', {
    class: 'dc-footnote',
    text: 'Per step: each component\u2019s time in a steady-state step (warm-up excluded). ' +
      'Per 1000 samples: the same time scaled by the batch size, so runs with different batch ' +
      'sizes compare fairly.',
  }));
  return root;
}

function pick(obj) {
  const out = {};
  for (const c of COMPONENTS) out[c.key] = obj && isNum(obj[c.key]) ? obj[c.key] : null;
  return out;
}
