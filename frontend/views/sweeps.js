// Batch-size sweeps (the report's `sweeps`): samples/s against batch size
// for each device, log-log, with each device's fitted step time, the
// crossover and the user's batch size marked, and the analysis's own
// sentence. Every figure comes from the report as it is; the fitted curves
// are drawn from the report's fixed and per-sample costs.

import {el, isolated, svg} from './dom.js';
import {fmtCount, fmtMs, fmtMsUnit, isNum} from '../format.js';
import {panel} from './common.js';

/** Colours of a sweep's devices, in the report's order (CPUs first). */
const DEVICE_COLORS = ['#1976d2', '#d81b60', '#388e3c', '#f57c00', '#6d4c41', '#00838f'];
const CROSSOVER_COLOR = '#424242';
const YOURS_COLOR = '#7b1fa2';
// A crossover or batch size this many times beyond the points still widens
// the x axis; farther ones are only said in the sentence.
const MAX_WIDEN = 16;

/**
 * @param {Array<Object>|undefined} sweeps the report's `sweeps`.
 * @param {{chartWidth?: number}} app
 * @return {?HTMLElement} null when there is no sweep.
 */
export function buildSweeps(sweeps, app) {
  const list = Array.isArray(sweeps) ? sweeps.filter((s) => s && typeof s === 'object' && s.devices) : [];
  if (list.length === 0) return null;
  const width = Math.max(480, Math.min(900, (app && app.chartWidth) || 900));
  return el('div', {class: 'dc-sweeps'}, list.map((sweep) => sweepPanel(sweep, width)));
}

function sweepPanel(sweep, width) {
  const devices = Object.keys(sweep.devices).filter((d) => sweep.devices[d] && Array.isArray(sweep.devices[d].points));
  const colors = new Map(devices.map((d, i) => [d, DEVICE_COLORS[i % DEVICE_COLORS.length]]));
  const title = ['Batch-size sweep \u201c', isolated(sweep.name), '\u201d: where each device wins'];
  const children = [];
  if (typeof sweep.message === 'string' && sweep.message) {
    children.push(el('p', {class: 'dc-sweep-message', text: sweep.message}));
  }
  children.push(sweepChart(sweep, devices, colors, width));
  children.push(el('div', {class: 'dc-legend dc-sweep-legend'}, devices.map((device) => {
    const fit = sweep.devices[device];
    const text = ': ' + fmtMsUnit(fit.fixed_ms) + ' per step + ' +
        (isNum(fit.per_sample_us) ? fmtMs(fit.per_sample_us) + ' \u00b5s per sample' : '\u2014');
    return el('span', {class: 'dc-legend-item', attrs: {'data-device': device}}, [
      el('span', {class: 'dc-swatch', attrs: {style: 'background:' + colors.get(device)}}),
      el('span', {}, [isolated(device), text]),
    ]);
  })));
  children.push(el('p', {
    class: 'dc-footnote',
    text: 'Dots: each run\u2019s samples/s (batch size over its ' + String(sweep.step_statistic || 'mean') +
      ' steady-state step). Lines: the fit, step time = fixed cost + cost per sample \u00d7 batch size.',
  }));
  for (const problem of Array.isArray(sweep.problems) ? sweep.problems : []) {
    children.push(el('p', {class: 'dc-muted dc-sweep-problem', text: String(problem)}));
  }
  const node = panel(title, children, 'dc-sweep');
  node.setAttribute('data-sweep', String(sweep.name));
  return node;
}

function samplesPerS(fit, batch) {
  const stepMs = fit.fixed_ms + (fit.per_sample_us / 1000) * batch;
  return stepMs > 0 ? batch / (stepMs / 1000) : null;
}

function logTicks(lo, hi) {
  const ticks = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    const v = Math.pow(10, e);
    if (v >= lo * 0.999 && v <= hi * 1.001) ticks.push(v);
  }
  return ticks;
}

function compact(v) {
  if (v >= 1e9) return fmtCount(v / 1e9) + 'G';
  if (v >= 1e6) return fmtCount(v / 1e6) + 'M';
  if (v >= 1e3) return fmtCount(v / 1e3) + 'k';
  return fmtCount(v);
}

function sweepChart(sweep, devices, colors, width) {
  const height = 300;
  const m = {left: 64, right: 20, top: 18, bottom: 44};
  const plotW = width - m.left - m.right;
  const plotH = height - m.top - m.bottom;

  const points = [];
  for (const device of devices) {
    for (const p of sweep.devices[device].points) {
      if (p && isNum(p.batch_size) && p.batch_size > 0 && isNum(p.samples_per_s) && p.samples_per_s > 0) {
        points.push({device, batch: p.batch_size, sps: p.samples_per_s, step: p.step_ms, run: p.run});
      }
    }
  }
  if (points.length === 0) return el('p', {class: 'dc-muted', text: 'No run of this sweep has a steady-state step yet.'});
  let xLo = Math.min(...points.map((p) => p.batch));
  let xHi = Math.max(...points.map((p) => p.batch));
  const widen = (v) => {
    if (!isNum(v) || v <= 0 || v < xLo / MAX_WIDEN || v > xHi * MAX_WIDEN) return false;
    xLo = Math.min(xLo, v);
    xHi = Math.max(xHi, v);
    return true;
  };
  const showCrossover = widen(sweep.crossover_batch);
  const yours = sweep.faster_at && isNum(sweep.faster_at.batch_size) ? sweep.faster_at.batch_size : sweep.your_batch_size;
  const showYours = widen(yours);
  if (xHi === xLo) {
    xLo /= 2;
    xHi *= 2;
  }
  xLo /= 1.25;
  xHi *= 1.25;

  // The fitted curves, sampled evenly in log batch size.
  const curves = [];
  for (const device of devices) {
    const fit = sweep.devices[device];
    if (!isNum(fit.fixed_ms) || !isNum(fit.per_sample_us)) continue;
    const line = [];
    for (let i = 0; i <= 60; i++) {
      const batch = xLo * Math.pow(xHi / xLo, i / 60);
      const sps = samplesPerS(fit, batch);
      if (isNum(sps) && sps > 0) line.push([batch, sps]);
    }
    curves.push({device, line});
  }
  const ys = points.map((p) => p.sps).concat(...curves.map((c) => c.line.map((q) => q[1])));
  let yLo = Math.min(...ys) / 1.3;
  let yHi = Math.max(...ys) * 1.3;

  const lx = (v) => m.left + ((Math.log(v) - Math.log(xLo)) / (Math.log(xHi) - Math.log(xLo))) * plotW;
  const ly = (v) => m.top + plotH - ((Math.log(v) - Math.log(yLo)) / (Math.log(yHi) - Math.log(yLo))) * plotH;

  const children = [];
  for (const t of logTicks(yLo, yHi)) {
    const y = ly(t);
    children.push(svg('line', {class: 'dc-grid', x1: m.left, x2: m.left + plotW, y1: y, y2: y}));
    children.push(svg('text', {class: 'dc-tick', x: m.left - 6, y: y + 4, 'text-anchor': 'end'}, [compact(t)]));
  }
  const batches = Array.from(new Set(points.map((p) => p.batch))).sort((a, b) => a - b);
  let lastLabelX = -Infinity;
  for (const b of batches) {
    const x = lx(b);
    children.push(svg('line', {class: 'dc-axis', x1: x, x2: x, y1: m.top + plotH, y2: m.top + plotH + 4}));
    if (x - lastLabelX >= 34) {
      children.push(svg('text', {class: 'dc-tick', x, y: m.top + plotH + 17, 'text-anchor': 'middle'}, [fmtCount(b)]));
      lastLabelX = x;
    }
  }
  children.push(svg('line', {class: 'dc-axis', x1: m.left, x2: m.left + plotW, y1: m.top + plotH, y2: m.top + plotH}));
  children.push(svg('text', {
    class: 'dc-axis-title', x: m.left + plotW / 2, y: height - 6, 'text-anchor': 'middle',
  }, ['batch size (samples per step, log scale)']));
  children.push(svg('text', {
    class: 'dc-axis-title', x: 14, y: m.top + plotH / 2, 'text-anchor': 'middle',
    transform: `rotate(-90 14 ${m.top + plotH / 2})`,
  }, ['samples/s (log scale)']));

  for (const {device, line} of curves) {
    if (line.length < 2) continue;
    const d = line.map((q, i) => (i ? 'L' : 'M') + lx(q[0]).toFixed(1) + ' ' + ly(q[1]).toFixed(1)).join(' ');
    children.push(svg('path', {
      class: 'dc-sweep-fit', d, fill: 'none', stroke: colors.get(device), 'stroke-width': 1.5,
      'stroke-dasharray': '5 4', 'data-device': device,
    }));
  }
  if (showCrossover) {
    const x = lx(sweep.crossover_batch);
    children.push(svg('line', {
      class: 'dc-sweep-crossover', x1: x, x2: x, y1: m.top, y2: m.top + plotH,
      stroke: CROSSOVER_COLOR, 'stroke-width': 1, 'stroke-dasharray': '2 3',
      'data-batch': sweep.crossover_batch,
    }, [svg('title', {}, ['crossover: about ' + fmtCount(sweep.crossover_batch) + ' samples per step'])]));
    children.push(svg('text', {class: 'dc-tick dc-sweep-label', x: x + 4, y: m.top + 10},
      ['crossover \u2248 ' + fmtCount(sweep.crossover_batch)]));
  }
  if (showYours) {
    const x = lx(yours);
    children.push(svg('line', {
      class: 'dc-sweep-yours', x1: x, x2: x, y1: m.top, y2: m.top + plotH,
      stroke: YOURS_COLOR, 'stroke-width': 1.5, 'data-batch': yours,
    }, [svg('title', {}, ['your batch size: ' + fmtCount(yours)])]));
    children.push(svg('text', {class: 'dc-tick dc-sweep-label', x: x + 4, y: m.top + 24, fill: YOURS_COLOR},
      ['your batch ' + fmtCount(yours)]));
  }
  for (const p of points) {
    children.push(svg('circle', {
      class: 'dc-sweep-point', cx: lx(p.batch).toFixed(1), cy: ly(p.sps).toFixed(1), r: 3.5,
      fill: colors.get(p.device), 'data-device': p.device, 'data-batch': p.batch,
    }, [svg('title', {}, [
      p.device + ' at batch ' + fmtCount(p.batch) + ': ' + fmtCount(p.sps) + ' samples/s (' +
        String(sweep.step_statistic || 'mean') + ' step ' + fmtMsUnit(p.step) + ', run ' + String(p.run) + ')',
    ])]));
  }
  return svg('svg', {
    class: 'dc-chart dc-sweep-chart', viewBox: `0 0 ${width} ${height}`,
    width: '100%', preserveAspectRatio: 'xMinYMin meet', role: 'img',
    'aria-label': 'Samples per second against batch size for ' + devices.join(', '),
    style: `max-width:${width}px`,
  }, children);
}
