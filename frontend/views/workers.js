// The processes of a distributed fit side by side (the report's `workers`):
// each process's shares, how long it waited for the others, the skew over
// the aligned steps, and the straggler with its cause and fix. Mounted under
// the overview by index.js when the report has process groups.

import {el, hashLink, isolated, svg} from './dom.js';
import {findingText, panel, severityBadge, verdictBadge} from './common.js';
import {shareBar, componentLegend} from './charts.js';
import {DASH, fmtCount, fmtMs, fmtMsUnit, fmtShare, isNum} from '../format.js';

const SKEW_COLOR = '#c62828';
const SKEW_HEIGHT = 120;

/**
 * The workers section: one panel per distributed job.
 * @param {Array<Object>} groups the report's `workers`.
 * @param {{hashFor: function(Object): string, chartWidth: number}} app
 * @return {?HTMLElement} null when there is no group.
 */
export function buildWorkers(groups, app) {
  const list = Array.isArray(groups) ? groups.filter((g) => g && typeof g === 'object') : [];
  if (!list.length) return null;
  // Jobs with a straggler first, then by name (the report's order).
  const ordered = list.filter((g) => g.straggler != null).concat(list.filter((g) => g.straggler == null));
  return el('div', {class: 'dc-workers'}, ordered.map((group) => groupPanel(group, app)));
}

function groupPanel(group, app) {
  const skew = group.skew_ms || {};
  const count = isNum(group.process_count) ? group.process_count : DASH;
  const head = el('p', {class: 'dc-workers-head'}, [
    el('span', {text: count + ' processes, ' + (isNum(group.aligned_steps) ? group.aligned_steps : 0) +
      ' steps aligned by global step. Skew (how far apart the processes reach each step\u2019s all-reduce): p50 '}),
    el('span', {class: 'dc-skew-p50', text: fmtMsUnit(skew.p50)}),
    el('span', {text: ', p90 '}),
    el('span', {class: 'dc-skew-p90', text: fmtMsUnit(skew.p90)}),
    el('span', {text: '.'}),
  ]);
  const problems = (Array.isArray(group.problems) ? group.problems : []).map((problem) =>
    el('p', {class: 'dc-workers-problem dc-isolated', text: String(problem)}));
  return panel('', [
    el('h3', {class: 'dc-panel-title'}, ['Processes of ', isolated(group.group)]),
    head,
    missingNote(group),
    ...problems,
    stragglerBox(group),
    processTable(group, app),
    componentLegend(),
    skewChart(group, app.chartWidth),
  ], 'dc-workers-group');
}

/**
 * "Not recorded: processes 2–999,999." from the group's ranges
 * (`[[first, last]]`, bounded whatever the process count), or null.
 */
function missingNote(group) {
  const ranges = (Array.isArray(group.missing_processes) ? group.missing_processes : [])
    .filter((range) => Array.isArray(range) && range.length === 2);
  if (!ranges.length) return null;
  const parts = ranges.slice(0, 20).map(([first, last]) =>
    first === last ? fmtCount(first) : fmtCount(first) + '\u2013' + fmtCount(last));
  if (ranges.length > 20) parts.push('and ' + (ranges.length - 20) + ' more ranges');
  const word = group.missing_count === 1 ? 'process ' : 'processes ';
  return el('p', {class: 'dc-muted dc-workers-missing', text: 'Not recorded: ' + word + parts.join(', ') + '.'});
}

/** The straggler, its cause and fix; or the note that the processes keep pace. */
function stragglerBox(group) {
  const finding = group.finding && typeof group.finding === 'object' ? group.finding : null;
  if (!group.aligned_steps) {
    // Nothing lined up: no claim of balance (the notes above say why).
    return el('p', {class: 'dc-workers-unaligned', attrs: {'data-straggler': 'unknown'},
      text: 'No straggler can be named: no steps were lined up.'});
  }
  if (group.straggler == null || !finding) {
    return el('p', {class: 'dc-workers-balanced', attrs: {'data-straggler': 'none'},
      text: 'No straggler: no process costs the others ' +
        'as much as 5% of their step time.'});
  }
  const [headline, details] = findingText(finding);
  return el('div', {
    class: 'dc-straggler-box',
    attrs: {'data-straggler': String(group.straggler_index), 'data-severity': String(finding.severity || '')},
  }, [
    el('div', {class: 'dc-finding-head'}, [
      severityBadge(finding.severity),
      el('strong', {class: 'dc-straggler-title',
        text: 'Straggler: process ' + String(group.straggler_index)}),
      el('span', {class: 'dc-straggler-share',
        text: fmtShare(group.straggler_share) + ' of all the processes\u2019 step time lost to it'}),
      el('span', {text: 'cause:'}),
      verdictBadge(group.cause),
    ]),
    headline,
    finding.fix ? el('p', {class: 'dc-finding-fix'}, [
      el('strong', {text: 'Fix: '}), el('span', {text: String(finding.fix)}),
    ]) : null,
    finding.expected && isNum(finding.expected.speedup)
      ? el('p', {class: 'dc-finding-expected'}, [
        el('strong', {text: 'Expected: '}), el('span', {text: String(finding.expected.text)}),
        el('span', {text: '. How: ' + String(finding.expected.basis || '') + '.'}),
      ])
      : null,
    details,
  ]);
}

function processTable(group, app) {
  const head = el('tr', {}, [
    el('th', {text: 'Process'}),
    el('th', {text: 'Run'}),
    el('th', {text: 'Steady-state shares'}),
    el('th', {class: 'dc-num', text: 'Step p50'}),
    el('th', {class: 'dc-num', text: 'Waits for others p50', title: 'time inside its compute spent waiting for the last process, per step'}),
    el('th', {class: 'dc-num', text: 'Wait share', title: 'its waits over its own step time'}),
    el('th', {class: 'dc-num', text: 'Lost to it', title: 'everyone\u2019s waits for this process over all the processes\u2019 step time'}),
    el('th', {text: 'Its steady-state verdict', title: 'its own verdict, warm-up set aside'}),
    el('th', {text: 'Devices it holds'}),
    el('th', {class: 'dc-num', text: 'Device busy', title: 'share of the traced steps’ time its device computed (from a trace window): collectives and copies are not counted'}),
    el('th', {text: 'Device time', title: 'compute, collectives (communication) and copies (memory) as shares of the traced steps, per device it holds'}),
  ]);
  const body = el('tbody');
  for (const entry of Array.isArray(group.runs) ? group.runs : []) {
    if (!entry || typeof entry !== 'object') continue;
    const isStraggler = group.straggler != null && entry.run === group.straggler;
    const wait = entry.wait_ms || {};
    body.appendChild(el('tr', {
      class: isStraggler ? 'dc-straggler-row' : '',
      attrs: {'data-process': String(entry.process_index), 'data-run': String(entry.run)},
    }, [
      el('td', {class: 'dc-num', text: String(entry.process_index) + (isStraggler ? ' \u25c0 straggler' : '')}),
      el('td', {}, [hashLink(app.hashFor({view: 'detail', run: String(entry.run)}),
        {class: 'dc-run-link', text: String(entry.run)})]),
      el('td', {}, [shareBar(entry.shares)]),
      el('td', {class: 'dc-num', text: fmtMsUnit(entry.step_ms && entry.step_ms.p50)}),
      el('td', {class: 'dc-num dc-wait-p50', text: fmtMsUnit(wait.p50)}),
      el('td', {class: 'dc-num', text: fmtShare(entry.wait_share)}),
      el('td', {class: 'dc-num dc-lost-share', text: fmtShare(entry.lost_share)}),
      el('td', {}, [verdictBadge(entry.steady_verdict || entry.verdict)]),
      el('td', {class: 'dc-devices', text: devicesText(entry.distribution)}),
      el('td', {class: 'dc-num', text: isNum(entry.device_busy_fraction) ? fmtShare(entry.device_busy_fraction) : DASH}),
      el('td', {class: 'dc-device-split'}, deviceSplit(entry)),
    ]));
  }
  return el('div', {class: 'dc-table-wrap'}, [
    el('table', {class: 'dc-table dc-workers-table'}, [el('thead', {}, [head]), body]),
  ]);
}

/** Compute, collectives and copies per device (one line each), or a dash. */
function deviceSplit(entry) {
  const split = entry.device_split && typeof entry.device_split === 'object' ? entry.device_split : null;
  if (!split) return [el('span', {text: DASH})];
  const words = (f) => 'compute ' + fmtShare(f.compute) + ', collectives ' +
    fmtShare(f.communication) + ', copies ' + fmtShare(f.memory);
  const devices = Array.isArray(entry.device_figures)
    ? entry.device_figures.filter((d) => d && typeof d === 'object') : [];
  if (devices.length > 1) {
    return devices.map((d) => el('div', {attrs: {'data-device': String(d.device)},
      text: String(d.device) + ': ' + words(d)}));
  }
  return [el('span', {attrs: {'data-communication': String(split.communication)}, text: words(split)})];
}

function devicesText(distribution) {
  const devices = distribution && Array.isArray(distribution.local_devices) ? distribution.local_devices : [];
  return devices.length ? devices.map(String).join(', ') : DASH;
}

/** The skew per aligned step, one path, with its p50 as a dashed line. */
function skewChart(group, width) {
  const series = group.series || {};
  const steps = Array.isArray(series.step) ? series.step : [];
  const skew = Array.isArray(series.skew_ms) ? series.skew_ms : [];
  const n = Math.min(steps.length, skew.length);
  if (n === 0) return el('p', {class: 'dc-muted', text: 'No aligned steps to draw.'});
  const w = Math.max(320, Math.min(1200, width || 800));
  const left = 56;
  const right = 12;
  const top = 8;
  const bottom = 24;
  const values = skew.slice(0, n).map((v) => (isNum(v) && v > 0 ? v : 0));
  const max = Math.max(...values, 1e-6);
  const first = steps[0];
  const last = steps[n - 1];
  const x = (s) => left + (last > first ? (s - first) / (last - first) : 0.5) * (w - left - right);
  const y = (v) => top + (1 - v / max) * (SKEW_HEIGHT - top - bottom);
  let d = '';
  for (let i = 0; i < n; i++) d += (i ? 'L' : 'M') + x(steps[i]).toFixed(1) + ',' + y(values[i]).toFixed(1);
  const children = [
    svg('title', {}, ['skew per aligned step, ms (max ' + fmtMs(max) + ' ms)']),
    svg('line', {x1: left, x2: w - right, y1: y(0), y2: y(0), stroke: '#bdbdbd'}),
    svg('path', {d, fill: 'none', stroke: SKEW_COLOR, 'stroke-width': 1.5, class: 'dc-skew-line'}),
    svg('text', {x: left - 6, y: y(max) + 4, 'text-anchor': 'end', 'font-size': 11}, [fmtMsUnit(max)]),
    svg('text', {x: left - 6, y: y(0) + 4, 'text-anchor': 'end', 'font-size': 11}, ['0']),
    svg('text', {x: left, y: SKEW_HEIGHT - 6, 'font-size': 11}, ['step ' + first]),
    svg('text', {x: w - right, y: SKEW_HEIGHT - 6, 'text-anchor': 'end', 'font-size': 11}, ['step ' + last]),
  ];
  const p50 = group.skew_ms && group.skew_ms.p50;
  if (isNum(p50)) {
    children.push(svg('line', {
      x1: left, x2: w - right, y1: y(p50), y2: y(p50), stroke: SKEW_COLOR,
      'stroke-dasharray': '4 3', 'stroke-opacity': 0.6,
    }));
  }
  return el('figure', {class: 'dc-skew-figure'}, [
    svg('svg', {
      class: 'dc-skew-chart', width: w, height: SKEW_HEIGHT, viewBox: `0 0 ${w} ${SKEW_HEIGHT}`,
      role: 'img', 'aria-label': 'skew per aligned step',
    }, children),
    el('figcaption', {class: 'dc-muted',
      text: 'Skew over the aligned steps (ms, y axis from 0 to the largest): how much longer the ' +
        'first process to arrive waited than the last. Dashed: p50.'}),
  ]);
}
