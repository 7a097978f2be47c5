// Overview: one row per run, the baseline picker, run selection for Compare,
// and a plain-words summary of the run that needs attention most.

import {el, hashLink, appendRunName, isolated} from './dom.js';
import {fmtMs, fmtCount, fmtRate, fmtShare, fmtSpeedup, isNum} from '../format.js';
import {shareBar, warmupBar, componentLegend, WARMUP_COLOR} from './charts.js';
import {
  VERDICTS, SEVERITY_RANK, verdictBadge, verdictLabel, topFinding, emptyState,
  skippedList, profileOnlyList, deviceCell, baselineField, baselineNote, speedupCell,
  WARMUP_TEXT,
} from './common.js';
import {buildSweeps} from './sweeps.js';
import {buildFixesTried} from './fixes_tried.js';
import {buildPredictions} from './predictions.js';

/**
 * @param {Object} data the `runs` route's JSON.
 * @param {{hashFor: function(Object): string, navigate: function(Object),
 *          picks: Set<string>, state: Object}} app
 * @return {HTMLElement}
 */
export function buildOverview(data, app) {
  const runs = Array.isArray(data && data.runs) ? data.runs.filter((r) => r && r.run != null) : [];
  const root = el('div', {class: 'dc-overview'});
  if (runs.length === 0) {
    root.appendChild(emptyState(data || {}));
    return root;
  }
  const comparison = data.comparison && typeof data.comparison === 'object' ? data.comparison : null;
  const baseline = comparison && comparison.baseline != null ? String(comparison.baseline) : null;
  const rowsByRun = new Map();
  if (comparison && Array.isArray(comparison.rows)) {
    for (const row of comparison.rows) if (row && row.run != null) rowsByRun.set(String(row.run), row);
  }

  // Forget picks of runs that went away.
  const names = new Set(runs.map((r) => String(r.run)));
  for (const p of Array.from(app.picks)) if (!names.has(p)) app.picks.delete(p);

  root.appendChild(summary(runs, app));

  const running = runs.filter((r) => r.status === 'running');
  if (running.length) {
    root.appendChild(el('p', {class: 'dc-running-note'}, [
      el('span', {class: 'dc-running', text: 'running'}),
      ' ',
      el('span', {
        text: (running.length === 1 ? running[0].run + ' is' : running.length + ' runs are') +
          ' not closed: still being written (the numbers will change), or the process ' +
          'ended without closing ' + (running.length === 1 ? 'it' : 'them') + '.',
      }),
    ]));
  }

  // Toolbar: baseline, compare, legend.
  const toolbar = el('div', {class: 'dc-toolbar'});
  if (runs.length >= 2) {
    toolbar.appendChild(baselineField(runs.map((r) => String(r.run)), baseline,
      comparison ? 'each model\u2019s CPU run' : 'none',
      (chosen) => app.navigate({view: 'overview', baseline: chosen})));
  }
  const compareButton = el('button', {
    class: 'dc-button dc-button-primary dc-compare-button', attrs: {type: 'button'},
  });
  const updateCompareButton = () => {
    const n = app.picks.size;
    compareButton.textContent = n ? 'Compare selected (' + n + ')' : 'Compare selected';
    compareButton.disabled = n < 2;
    compareButton.title = n < 2 ? 'Tick at least two runs to compare them' : '';
  };
  compareButton.addEventListener('click', () => {
    const picked = runs.map((r) => String(r.run)).filter((name) => app.picks.has(name));
    if (picked.length < 2) return;
    // The baseline the user chose, if picked; else the analysis chooses (or
    // finds none that makes sense).
    const chosen = app.state.baseline;
    app.navigate({view: 'compare', runs: picked, baseline: chosen && picked.includes(chosen) ? chosen : null});
  });
  toolbar.appendChild(compareButton);
  toolbar.appendChild(el('span', {class: 'dc-spacer'}));
  toolbar.appendChild(componentLegend([{label: 'warm-up (share of wall time)', color: WARMUP_COLOR}],
    {handover: true}));
  root.appendChild(toolbar);
  if (runs.length >= 2) root.appendChild(baselineNote(comparison));

  // The table.
  const table = el('table', {class: 'dc-table dc-runs'});
  const pickAll = el('input', {attrs: {type: 'checkbox', 'aria-label': 'Select all runs'}, class: 'dc-pick-all'});
  table.appendChild(el('thead', {}, [el('tr', {}, [
    el('th', {class: 'dc-col-pick'}, [pickAll]),
    el('th', {class: 'dc-col-run', text: 'Run'}),
    el('th', {text: 'Device', title: 'Where the step ran (the device holding most of the first step\u2019s ops), and the backend'}),
    el('th', {class: 'dc-num', text: 'Batch'}),
    el('th', {class: 'dc-num', text: 'p50 step (ms)', title: 'Median steady-state step time'}),
    el('th', {class: 'dc-num', text: 'Samples/s (mean step)', title: 'Samples per second over the mean step, not the p50'}),
    el('th', {text: 'Where step time went (shares)', title: 'Shares of the total time of the steps after warm-up'}),
    el('th', {text: 'Warm-up (share of wall time)', title: WARMUP_TEXT}),
    el('th', {text: 'Verdict'}),
    el('th', {
      class: 'dc-num', text: 'Speedup (mean step)',
      title: 'The baseline\u2019s mean step time over this run\u2019s (samples/s when batch sizes differ)' +
        (baseline ? '. Baseline: ' + baseline : ''),
    }),
  ])]));
  const tbody = el('tbody');
  for (const run of runs) tbody.appendChild(runRow(run, rowsByRun.get(String(run.run)), baseline, app));
  table.appendChild(tbody);

  const syncPickAll = () => {
    pickAll.checked = app.picks.size === runs.length;
    pickAll.indeterminate = app.picks.size > 0 && app.picks.size < runs.length;
  };
  // One delegated listener for all row checkboxes.
  tbody.addEventListener('change', (event) => {
    const box = event.target;
    if (!(box instanceof HTMLInputElement) || !box.classList.contains('dc-pick')) return;
    const name = box.closest('tr').getAttribute('data-run');
    if (box.checked) app.picks.add(name); else app.picks.delete(name);
    updateCompareButton();
    syncPickAll();
  });
  pickAll.addEventListener('change', () => {
    for (const box of tbody.querySelectorAll('input.dc-pick')) {
      box.checked = pickAll.checked;
      const name = box.closest('tr').getAttribute('data-run');
      if (pickAll.checked) app.picks.add(name); else app.picks.delete(name);
    }
    updateCompareButton();
    syncPickAll();
  });
  updateCompareButton();
  syncPickAll();

  root.appendChild(el('div', {class: 'dc-table-wrap'}, [table]));
  root.appendChild(el('p', {
    class: 'dc-footnote',
    text: 'Shares are of the total time of the steps after warm-up; ' + WARMUP_TEXT +
      ', kept apart and shown as its share of the whole fit\u2019s wall time. ' +
      'The lighter part of the data wait is handing over batches that were ready, not waiting for them. ' +
      'Click a run for its per-step chart, placement and findings.',
  }));
  // Batch-size sweeps: where each device wins (views/sweeps.js).
  const sweeps = buildSweeps(data.sweeps, app);
  if (sweeps) root.appendChild(sweeps);
  // What `try_fixes` measured of each change (views/fixes_tried.js).
  const fixes = buildFixesTried(data.fixes_tried);
  if (fixes) root.appendChild(fixes);
  // Runs with a fixed counterpart: each prediction beside what it bought.
  const checked = buildPredictions(data.predictions);
  if (checked) root.appendChild(checked);

  const skipped = skippedList(data.skipped);
  const profileOnly = profileOnlyList(data.profile_only);
  if (skipped || profileOnly) {
    root.appendChild(el('div', {class: 'dc-side-lists'}, [skipped, profileOnly]));
  }
  return root;
}

function runRow(run, cmp, baseline, app) {
  const name = String(run.run);
  const tr = el('tr', {class: 'dc-run-row', attrs: {'data-run': name, 'data-verdict': run.verdict || 'no_data'}});
  if (run.status === 'running') tr.classList.add('dc-row-running');

  const box = el('input', {class: 'dc-pick', attrs: {type: 'checkbox', 'aria-label': 'Select ' + name}});
  box.checked = app.picks.has(name);
  tr.appendChild(el('td', {class: 'dc-col-pick'}, [box]));

  const link = hashLink(app.hashFor({view: 'detail', run: name, baseline: app.state.baseline}), {
    class: 'dc-run-link dc-run-name', title: 'Open ' + name,
  });
  appendRunName(link, name);
  tr.appendChild(el('td', {class: 'dc-col-run'}, [
    link,
    run.status === 'running' ? el('span', {class: 'dc-running', text: 'running', title: 'still being written'}) : null,
    tracedMarker(run.trace_windows),
  ]));

  tr.appendChild(el('td', {class: 'dc-col-device'}, deviceCell(run, run.backend != null ? String(run.backend) : null)));
  tr.appendChild(el('td', {class: 'dc-num', text: fmtCount(run.batch_size)}));
  tr.appendChild(el('td', {class: 'dc-num dc-step-ms', attrs: {'data-stat': 'p50'}, text: fmtMs(run.step_ms && run.step_ms.p50)}));
  tr.appendChild(el('td', {class: 'dc-num', text: fmtRate(run.samples_per_s)}));
  tr.appendChild(el('td', {class: 'dc-col-shares'}, [shareBar(run.shares, {handoverShare: run.handover_share})]));
  tr.appendChild(el('td', {class: 'dc-col-warmup'}, [warmupBar(run.warmup_share_of_wall, run.warmup_ms)]));
  tr.appendChild(el('td', {class: 'dc-col-verdict'}, [verdictBadge(run.verdict)]));
  tr.appendChild(speedupCell(name, cmp, baseline));
  return tr;
}

/** A small "traced" tag for a run with profiler trace windows. */
function tracedMarker(windows) {
  const list = Array.isArray(windows) ? windows.filter((w) => w && typeof w === 'object') : [];
  if (list.length === 0) return null;
  const ranges = list.map((w) => (isNum(w.start_step) && isNum(w.stop_step) && w.stop_step > w.start_step
    ? (w.stop_step - 1 === w.start_step ? 'step ' + w.start_step : 'steps ' + w.start_step + '\u2013' + (w.stop_step - 1))
    : 'steps unknown'));
  return el('span', {
    class: 'dc-traced', text: 'traced',
    title: 'Profiler trace' + (list.length === 1 ? ' of ' : 's of ') + ranges.join(', ') +
      ': open the run for the trace\u2019s breakdown of those steps',
  });
}

/**
 * The fix in one sentence, with its gain: the change `try_fixes` measured
 * best where it ran ("Tried: steps_per_execution, 1.60x (noise ±14%)."),
 * else the finding's change and its expected gain.
 * @return {?string}
 */
function fixSentence(run, finding) {
  const advised = run.advised && typeof run.advised === 'object' ? run.advised : null;
  if (advised && isNum(advised.measured)) {
    return 'Tried: ' + String(advised.change) + ', ' + fmtSpeedup(advised.measured) + ' the samples/s' +
      (isNum(advised.noise) ? ' (noise \u00b1' + fmtShare(advised.noise) + ').' : '.');
  }
  const expected = finding.expected && typeof finding.expected === 'object' ? finding.expected : null;
  if (expected && isNum(expected.speedup)) {
    const change = finding.change && finding.change !== 'none' ? ' (' + String(finding.change) + ')' : '';
    return 'Fix' + change + ': expected ' + String(expected.text) + '.';
  }
  return null;
}

/**
 * The "what this means" paragraph: the worst run, its top finding in plain
 * words and the fix; or a word that all runs are healthy.
 */
function summary(runs, app) {
  const scored = runs.map((run) => {
    const f = topFinding(run);
    const verdict = VERDICTS[run.verdict] ? VERDICTS[run.verdict].rank : 1;
    const sev = f ? (SEVERITY_RANK[f.severity] || 0) : 0;
    // A short validation run is judged by its typical step, and never the
    // run to look at first (its few steps say little).
    const bad = !run.few_steps && ((run.verdict && run.verdict !== 'compute_bound' &&
        run.verdict !== 'no_data') || (f && sev >= 2));
    return {run, finding: f, bad, key: [bad ? 1 : 0, sev, verdict, isNum(run.step_ms && run.step_ms.p50) ? run.step_ms.p50 : 0]};
  });
  const cmpKeys = (a, b) => {
    for (let i = 0; i < a.key.length; i++) if (a.key[i] !== b.key[i]) return b.key[i] - a.key[i];
    return 0;
  };
  scored.sort(cmpKeys);
  const worst = scored[0];
  const box = el('div', {class: 'dc-summary', attrs: {role: 'note'}});
  box.appendChild(el('div', {class: 'dc-summary-label', text: 'What this means'}));
  const p = el('p', {class: 'dc-summary-text'});
  box.appendChild(p);

  if (!worst.bad) {
    const healthy = runs.every((r) => r.verdict === 'compute_bound');
    p.append(
      healthy
        ? (runs.length === 1 ? 'This run is ' : 'Every run is ')
        : 'No run has a bottleneck to fix. ',
    );
    if (healthy) {
      p.append(
        verdictBadge('compute_bound'),
        ': steps are spent in the model\u2019s own work, not waiting for data or in host overhead. ' +
        'To go faster, give each step more work (a larger batch) or use a faster device.',
      );
    }
    return box;
  }

  const run = worst.run;
  const name = String(run.run);
  p.append(
    appendRunName(hashLink(app.hashFor({view: 'detail', run: name, baseline: app.state.baseline}), {
      class: 'dc-run-link dc-run-name dc-summary-run',
    }), name),
    ' is ',
    verdictBadge(run.verdict),
    '. ',
  );
  if (worst.finding) {
    // Headlines only: the evidence and the fix are one click away.
    const headline = worst.finding.headline || worst.finding.message;
    if (headline) p.append(el('span', {class: 'dc-summary-headline', text: String(headline) + ' '}));
    const fix = fixSentence(run, worst.finding);
    if (fix) p.append(el('span', {class: 'dc-summary-fix', text: fix + ' '}));
  } else {
    p.append('Open the run for its per-step chart and findings. ');
  }
  const others = scored.slice(1).filter((s) => s.bad).map((s) => s.run);
  if (others.length) {
    // Each name in its own <bdi>: one name's U+202E cannot reverse the rest.
    const shown = [];
    others.slice(0, 3).forEach((r, i) => {
      shown.push(i ? ', ' : '', isolated(r.run, {class: 'dc-run-name'}), ' (' + verdictLabel(r.verdict) + ')');
    });
    p.append(el('span', {class: 'dc-muted'}, [
      'Also worth a look: ', ...shown, (others.length > 3 ? ' and ' + (others.length - 3) + ' more' : '') + '.',
    ]));
  }
  return box;
}
