// Hand-written SVG charts: share bars, stacked bars and the stacked step
// chart. Each chart is built once per refresh as a few <path>/<rect>
// elements (one path per component, not one element per point), and the
// step chart uses a single pair of pointer listeners for its hover read-out.

import {el, svg} from './dom.js';
import {fmtMs, fmtMsUnit, fmtShare, isNum} from '../format.js';

/**
 * The three steady-state components, in stacking order: `key` is the
 * component's name and `column` the name of its milliseconds everywhere
 * (the recorder's column, the series, the report's key), as in
 * tb_devicecost/format/vocabulary.py.
 */
export const COMPONENTS = [
  {key: 'data_wait', column: 'data_wait_ms', label: 'data wait', color: '#f57c00'},
  {key: 'compute', column: 'compute_ms', label: 'compute', color: '#1976d2'},
  {key: 'host_overhead', column: 'host_overhead_ms', label: 'host overhead', color: '#9e9e9e'},
];
/**
 * The part of the data wait spent handing over batches that were ready (the
 * run's `handover_share`): a lighter shade of the data wait, so a pipeline
 * that keeps up does not look input-bound.
 */
export const HANDOVER = {
  key: 'handover', label: 'handover of ready batches (part of the data wait)', color: '#ffcc80',
};
export const WARMUP_COLOR = '#7b1fa2';
export const SPIKE_COLOR = '#c62828';
/** Profiler-traced step ranges on the step chart (a translucent band). */
export const TRACE_COLOR = '#00897b';

// ---------------------------------------------------------------------------
// Legend (HTML, so it wraps and reads well).

/**
 * @param {Array<{label: string, color: string, kind?: string, key?: string}>} items
 *     kind is 'box' (default), 'line' (dashed vertical line) or 'marker'
 *     (triangle); key, a component's, becomes the item's data-component.
 */
function legend(items) {
  return el(
    'div',
    {class: 'dc-legend'},
    items.map((item) =>
      el('span', {class: 'dc-legend-item', attrs: {'data-component': item.key}}, [
        swatch(item.color, item.kind),
        el('span', {text: item.label}),
      ]),
    ),
  );
}

/**
 * A legend's colour sample: a 'box' (default), 'line', 'marker' or 'band' of
 * `color` (one of this module's constants, never data).
 */
export function swatch(color, kind = 'box') {
  const property = {line: 'border-left-color', marker: 'border-top-color', band: 'border-color'}[kind] ||
    'background';
  return el('span', {class: 'dc-swatch dc-swatch-' + kind, attrs: {style: property + ':' + color}});
}

/**
 * The components' legend, with the handover's shade after the data wait
 * when `handover` is set, then `extra` items.
 * @param {Array<{label: string, color: string, kind?: string}>} [extra]
 * @param {{handover?: boolean}} [opts]
 */
export function componentLegend(extra = [], {handover = false} = {}) {
  const items = [];
  for (const c of COMPONENTS) {
    items.push({label: c.label, color: c.color, key: c.key});
    if (handover && c.key === 'data_wait') items.push(HANDOVER);
  }
  return legend(items.concat(extra));
}

// ---------------------------------------------------------------------------
// Share bar: one horizontal 100% bar of the steady-state shares.

/**
 * @param {{data_wait?: number, compute?: number, host_overhead?: number}|null} shares
 * @param {{width?: number, height?: number, handover?: ?number}} [opts]
 *     `handover`: the part of the data wait's share spent handing over
 *     ready batches (the run's `handover_share`), drawn first in its own
 *     shade; the rest of the data wait is waiting.
 * @return {SVGElement|HTMLElement}
 */
export function shareBar(shares, {width = 160, height = 14, handover = null} = {}) {
  const values = COMPONENTS.map((c) => (shares && isNum(shares[c.key]) ? Math.max(0, shares[c.key]) : 0));
  const total = values.reduce((a, b) => a + b, 0);
  if (!shares || total <= 0) {
    return el('span', {class: 'dc-muted', text: 'no steady-state steps'});
  }
  const ready = isNum(handover) ? Math.min(values[0], Math.max(0, handover)) : 0;
  // The shares as the report prints them (not renormalised: the same text).
  const label = COMPONENTS.map((c) => c.label + ' ' + fmtShare(shares[c.key]) +
      (c.key === 'data_wait' && fmtShare(ready) !== fmtShare(0)
        ? ' (handover ' + fmtShare(ready) + ')' : '')).join(' \u00b7 ');
  const children = [svg('title', {}, [label])];
  const segments = [];
  COMPONENTS.forEach((c, i) => {
    if (i === 0 && ready > 0) {
      segments.push({key: HANDOVER.key, color: HANDOVER.color, value: ready});
      segments.push({key: c.key, color: c.color, value: values[i] - ready});
    } else {
      segments.push({key: c.key, color: c.color, value: values[i]});
    }
  });
  let x = 0;
  for (const segment of segments) {
    const w = (segment.value / total) * width;
    if (w <= 0) continue;
    children.push(
      svg('rect', {
        x: x.toFixed(2), y: 0, width: w.toFixed(2), height,
        fill: segment.color, 'data-component': segment.key,
      }),
    );
    x += w;
  }
  return svg(
    'svg',
    {
      class: 'dc-share-bar', width, height, viewBox: `0 0 ${width} ${height}`,
      role: 'img', 'aria-label': label,
    },
    children,
  );
}

/**
 * A small separate bar for warm-up's share of the fit's wall time.
 * @param {number|null} share
 * @param {number|null} warmupMs
 */
export function warmupBar(share, warmupMs, {width = 48, height = 14} = {}) {
  if (!isNum(share)) {
    return el('span', {class: 'dc-muted', text: '\u2014'});
  }
  const s = Math.min(1, Math.max(0, share));
  const label = 'warm-up: ' + fmtShare(share) + ' of the fit\u2019s wall time' +
      (isNum(warmupMs) ? ' (' + fmtMsUnit(warmupMs) + ')' : '');
  return el('span', {class: 'dc-warmup', title: label}, [
    svg('svg', {
      class: 'dc-warmup-bar', width, height, viewBox: `0 0 ${width} ${height}`,
      role: 'img', 'aria-label': label,
    }, [
      svg('rect', {x: 0, y: 0, width, height, fill: '#ede7f6'}),
      svg('rect', {x: 0, y: 0, width: (s * width).toFixed(2), height, fill: WARMUP_COLOR}),
    ]),
    el('span', {class: 'dc-warmup-pct', text: fmtShare(share)}),
  ]);
}

// ---------------------------------------------------------------------------
// Axis helpers.

/** "Nice" tick values from 0 (or lo) to hi. */
function niceTicks(lo, hi, count = 5) {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / Math.max(1, count);
  const mag = Math.pow(10, Math.floor(Math.log10(raw)));
  const norm = raw / mag;
  const step = (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 2.5 ? 2.5 : norm <= 5 ? 5 : 10) * mag;
  const ticks = [];
  const start = Math.ceil(lo / step) * step;
  for (let v = start; v <= hi + step * 1e-9; v += step) {
    ticks.push(Number(v.toPrecision(12)));
  }
  return ticks;
}

/** Ticks from 0 whose last one is at or above `max` (which becomes the axis end). */
function axisTicks(max) {
  if (!(max > 0)) return [0, 1];
  const ticks = niceTicks(0, max, 5);
  if (ticks.length < 2) return [0, max];
  const step = ticks[1] - ticks[0];
  while (ticks[ticks.length - 1] < max - step * 1e-9) {
    ticks.push(Number((ticks[ticks.length - 1] + step).toPrecision(12)));
  }
  return ticks;
}

function fmtTick(v) {
  if (v === 0) return '0';
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString('en-US');
  return String(Number(v.toPrecision(4)));
}

function quantile(sorted, q) {
  if (!sorted.length) return 0;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}

// ---------------------------------------------------------------------------
// Stacked horizontal bars (compare view): ms per step by component.

/**
 * @param {Array<{label: string, values: Object<string, ?number>, note?: string,
 *     handover?: ?number}>} rows `handover`: the part of the row's data wait
 *     spent handing over ready batches, drawn first in its own shade.
 * @param {{width?: number, unit?: string}} [opts]
 */
export function stackedBars(rows, {width = 860, unit = 'ms per step'} = {}) {
  const labelW = 190;
  const right = 70;
  const barH = 18;
  const gap = 10;
  const top = 8;
  const axisH = 34;
  const plotW = Math.max(120, width - labelW - right);
  const totals = rows.map((r) =>
    COMPONENTS.reduce((a, c) => a + (isNum(r.values[c.key]) ? Math.max(0, r.values[c.key]) : 0), 0));
  const maxTotal = Math.max(0, ...totals);
  const xTicks = axisTicks(maxTotal);
  const xMax = xTicks[xTicks.length - 1];
  const scale = (v) => (v / xMax) * plotW;
  const height = top + rows.length * (barH + gap) + axisH;
  const children = [];

  for (const t of xTicks) {
    const x = labelW + scale(t);
    children.push(svg('line', {
      class: 'dc-grid', x1: x, x2: x, y1: top - 4, y2: height - axisH + 2,
    }));
    children.push(svg('text', {
      class: 'dc-tick', x, y: height - axisH + 16, 'text-anchor': 'middle',
    }, [fmtTick(t)]));
  }
  children.push(svg('text', {
    class: 'dc-axis-title', x: labelW + plotW / 2, y: height - 4, 'text-anchor': 'middle',
  }, [unit]));

  rows.forEach((row, i) => {
    const y = top + i * (barH + gap);
    const name = row.label.length > 28 ? row.label.slice(0, 27) + '\u2026' : row.label;
    children.push(svg('text', {
      class: 'dc-bar-label', x: labelW - 8, y: y + barH / 2 + 4, 'text-anchor': 'end',
    }, [svg('title', {}, [row.label]), name]));
    let x = labelW;
    for (const c of COMPONENTS) {
      const v = row.values[c.key];
      if (!isNum(v) || v <= 0) continue;
      const ready = c.key === 'data_wait' && isNum(row.handover) ? Math.min(v, Math.max(0, row.handover)) : 0;
      const parts = ready > 0
        ? [{value: ready, color: HANDOVER.color, key: HANDOVER.key, label: 'handover of ready batches'},
          {value: v - ready, color: c.color, key: c.key, label: 'data wait beyond the handover'}]
        : [{value: v, color: c.color, key: c.key, label: c.label}];
      for (const part of parts) {
        if (part.value <= 0) continue;
        const w = scale(part.value);
        children.push(svg('rect', {
          x: x.toFixed(2), y, width: Math.max(0.5, w).toFixed(2), height: barH, fill: part.color,
          'data-component': part.key,
        }, [svg('title', {}, [row.label + ' \u2014 ' + part.label + ': ' + fmtMsUnit(part.value)])]));
        x += w;
      }
    }
    children.push(svg('text', {
      class: 'dc-bar-value', x: x + 6, y: y + barH / 2 + 4,
    }, [totals[i] > 0 ? fmtMsUnit(totals[i]) : 'no data']));
  });

  return svg('svg', {
    class: 'dc-chart dc-bars', viewBox: `0 0 ${width} ${height}`,
    width: '100%', preserveAspectRatio: 'xMinYMin meet', role: 'img',
    'aria-label': 'Time per step by component for each run',
    style: `max-width:${width}px`,
  }, children);
}

// ---------------------------------------------------------------------------
// Stacked step chart (run detail): data wait, compute and host overhead of
// every recorded step, stacked, with warm-up steps and spikes marked.

/**
 * @param {{step: number[], data_wait_ms: Array<?number>, compute_ms: Array<?number>,
 *          host_overhead_ms: Array<?number>}} series
 * @param {{warmupSteps?: number[], spikeSteps?: number[], width?: number,
 *          height?: number,
 *          traceWindows?: Array<{start: number, stop: number, label?: string}>}} [opts]
 *     traceWindows: profiler-traced step ranges [start, stop), drawn as
 *     translucent bands behind the bars.
 * @return {HTMLElement} a wrapper holding the <svg class="dc-chart">, its
 *     hover read-out and a note when the y axis is cut.
 */
export function stepChart(series, {
  warmupSteps = [], spikeSteps = [], traceWindows = [], width = 900, height = 300,
} = {}) {
  const steps = (series && Array.isArray(series.step)) ? series.step : [];
  const n = steps.length;
  const wrapper = el('div', {class: 'dc-chart-wrap'});
  if (n === 0) {
    wrapper.appendChild(el('p', {class: 'dc-muted', text: 'No per-step data recorded yet.'}));
    return wrapper;
  }
  const cols = COMPONENTS.map((c) => {
    const arr = series[c.column] || [];
    const out = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      const v = arr[i];
      out[i] = isNum(v) && v > 0 ? v : 0;
    }
    return out;
  });
  const totals = new Float64Array(n);
  for (let i = 0; i < n; i++) totals[i] = cols[0][i] + cols[1][i] + cols[2][i];

  // y scale: ignore warm-up steps, and cut the axis when a few spikes would
  // flatten everything else (the cut is said in words under the chart).
  const warmSet = new Set((warmupSteps || []).filter(isNum));
  const steady = [];
  for (let i = 0; i < n; i++) if (!warmSet.has(steps[i])) steady.push(totals[i]);
  const basis = steady.length ? steady : Array.from(totals);
  const sorted = basis.slice().sort((a, b) => a - b);
  const maxV = sorted[sorted.length - 1] || 0;
  const p99 = quantile(sorted, 0.99);
  let yMax = maxV > p99 * 3 && p99 > 0 ? p99 * 1.5 : maxV;
  if (!(yMax > 0)) yMax = 1;
  const yTicks = axisTicks(yMax);
  yMax = yTicks[yTicks.length - 1];
  let clipped = 0;
  let clippedWarmup = 0;
  for (let i = 0; i < n; i++) {
    if (totals[i] > yMax) {
      clipped++;
      if (warmSet.has(steps[i])) clippedWarmup++;
    }
  }

  const m = {left: 60, right: 16, top: 22, bottom: 42};
  const plotW = width - m.left - m.right;
  const plotH = height - m.top - m.bottom;
  const first = steps[0];
  let gap = 1;
  if (n > 1) {
    const gaps = [];
    for (let i = 1; i < n; i++) gaps.push(steps[i] - steps[i - 1]);
    gaps.sort((a, b) => a - b);
    gap = Math.max(1, gaps[Math.floor(gaps.length / 2)]);
  }
  const last = steps[n - 1] + gap;
  const sx = (s) => m.left + ((s - first) / (last - first || 1)) * plotW;
  const sy = (v) => m.top + plotH - (Math.min(v, yMax) / yMax) * plotH;

  const px = new Float64Array(n + 1);
  for (let i = 0; i < n; i++) px[i] = sx(steps[i]);
  px[n] = sx(last);

  const children = [];
  // Grid and y axis.
  for (const t of yTicks) {
    const y = sy(t);
    children.push(svg('line', {class: 'dc-grid', x1: m.left, x2: m.left + plotW, y1: y, y2: y}));
    children.push(svg('text', {class: 'dc-tick', x: m.left - 6, y: y + 4, 'text-anchor': 'end'}, [fmtTick(t)]));
  }
  children.push(svg('text', {
    class: 'dc-axis-title', x: 14, y: m.top + plotH / 2, 'text-anchor': 'middle',
    transform: `rotate(-90 14 ${m.top + plotH / 2})`,
  }, ['ms per step']));
  // x axis.
  for (const t of niceTicks(first, steps[n - 1], Math.max(2, Math.floor(plotW / 110)))) {
    const x = sx(t);
    children.push(svg('line', {class: 'dc-axis', x1: x, x2: x, y1: m.top + plotH, y2: m.top + plotH + 4}));
    children.push(svg('text', {class: 'dc-tick', x, y: m.top + plotH + 17, 'text-anchor': 'middle'}, [fmtTick(t)]));
  }
  children.push(svg('line', {class: 'dc-axis', x1: m.left, x2: m.left + plotW, y1: m.top + plotH, y2: m.top + plotH}));
  children.push(svg('text', {
    class: 'dc-axis-title', x: m.left + plotW / 2, y: height - 6, 'text-anchor': 'middle',
  }, ['step']));

  // Traced step ranges: a translucent band behind the bars, each step of
  // the window [start, stop) covered whole (step s spans sx(s)..sx(s + 1)).
  const windows = (Array.isArray(traceWindows) ? traceWindows : [])
    .filter((w) => w && isNum(w.start) && isNum(w.stop) && w.stop > w.start);
  for (const w of windows) {
    const a = Math.max(first, w.start);
    const b = Math.min(last, w.stop);
    if (!(b > a)) continue;
    const x0 = sx(a);
    const x1 = sx(b);
    const label = w.label ? String(w.label) : 'traced steps ' + w.start + '\u2013' + (w.stop - 1);
    children.push(svg('g', {class: 'dc-trace-band'}, [
      svg('rect', {
        class: 'dc-trace-window', x: x0.toFixed(1), y: m.top, width: Math.max(1, x1 - x0).toFixed(1),
        height: plotH, fill: TRACE_COLOR, 'fill-opacity': 0.13, 'data-start': w.start, 'data-stop': w.stop,
      }, [svg('title', {}, [label])]),
      svg('rect', {
        class: 'dc-trace-window-edge', x: x0.toFixed(1), y: m.top + plotH, width: Math.max(1, x1 - x0).toFixed(1),
        height: 3, fill: TRACE_COLOR,
      }),
    ]));
  }
  const tracedAt = (s) => windows.some((w) => s >= w.start && s < w.stop);

  // Short runs: one stacked bar per step (each step at least 3 px wide).
  // Long runs: one area path per component.
  const bottom = new Float64Array(n);
  const barMode = n * 3 <= plotW;
  if (barMode) {
    COMPONENTS.forEach((c, k) => {
      const col = cols[k];
      const bars = [];
      for (let i = 0; i < n; i++) {
        const v = col[i];
        if (v > 0 && bottom[i] < yMax) {
          const yt = sy(bottom[i] + v);
          const yb = sy(bottom[i]);
          const w = px[i + 1] - px[i];
          const inset = w >= 6 ? 1 : w >= 4 ? 0.5 : 0;
          bars.push(svg('rect', {
            x: (px[i] + inset).toFixed(1), y: yt.toFixed(1),
            width: Math.max(0.8, w - 2 * inset).toFixed(1), height: Math.max(0.5, yb - yt).toFixed(1),
          }));
        }
        bottom[i] += v;
      }
      children.push(svg('g', {class: 'dc-bars-' + c.key, fill: c.color, 'data-component': c.key}, bars));
    });
  }
  COMPONENTS.forEach((c, k) => {
    if (barMode) return;
    const col = cols[k];
    const parts = [];
    for (let i = 0; i < n; i++) {
      const yt = sy(bottom[i] + col[i]).toFixed(1);
      parts.push((i === 0 ? 'M' : 'L') + px[i].toFixed(1) + ' ' + yt, 'L' + px[i + 1].toFixed(1) + ' ' + yt);
    }
    for (let i = n - 1; i >= 0; i--) {
      const yb = sy(bottom[i]).toFixed(1);
      parts.push('L' + px[i + 1].toFixed(1) + ' ' + yb, 'L' + px[i].toFixed(1) + ' ' + yb);
    }
    parts.push('Z');
    children.push(svg('path', {class: 'dc-area', d: parts.join(''), fill: c.color, 'data-component': c.key}, [
      svg('title', {}, [c.label]),
    ]));
    for (let i = 0; i < n; i++) bottom[i] += col[i];
  });

  // Warm-up steps: dashed purple lines; spikes: red triangles on top.
  const inRange = (s) => isNum(s) && s >= first && s <= last;
  for (const s of (warmupSteps || []).filter(inRange)) {
    const x = sx(s).toFixed(1);
    children.push(svg('line', {
      class: 'dc-marker-warmup', x1: x, x2: x, y1: m.top - 6, y2: m.top + plotH,
      stroke: WARMUP_COLOR, 'stroke-dasharray': '4 3', 'data-step': s,
    }, [svg('title', {}, ['warm-up at step ' + s])]));
  }
  const spikes = (spikeSteps || []).filter(inRange);
  if (spikes.length) {
    const tri = [];
    for (const s of spikes) {
      const x = sx(s);
      tri.push(`M${(x - 4).toFixed(1)} ${m.top - 10}L${(x + 4).toFixed(1)} ${m.top - 10}L${x.toFixed(1)} ${m.top - 3}Z`);
    }
    children.push(svg('path', {class: 'dc-marker-spike', d: tri.join(''), fill: SPIKE_COLOR}, [
      svg('title', {}, [spikes.length + ' spike' + (spikes.length === 1 ? '' : 's') + ' (steps much slower than the median)']),
    ]));
  }

  // Hover read-out: one vertical line, one box, two listeners in total.
  const hoverLine = svg('line', {
    class: 'dc-hover-line', x1: 0, x2: 0, y1: m.top, y2: m.top + plotH, visibility: 'hidden',
  });
  children.push(hoverLine);
  const overlay = svg('rect', {
    class: 'dc-overlay', x: m.left, y: m.top, width: plotW, height: plotH, fill: 'transparent',
  });
  children.push(overlay);

  const chart = svg('svg', {
    class: 'dc-chart dc-step-chart', viewBox: `0 0 ${width} ${height}`, width: '100%',
    preserveAspectRatio: 'xMinYMin meet', role: 'img',
    'aria-label': 'Per-step time, stacked: data wait, compute, host overhead',
  }, children);
  const tip = el('div', {class: 'dc-tooltip', attrs: {hidden: true}});
  wrapper.append(chart, tip);

  const warmupOf = new Set(warmSet);
  const spikeOf = new Set(spikes);
  chart.addEventListener('mousemove', (event) => {
    const rect = chart.getBoundingClientRect();
    if (!rect.width) return;
    const x = ((event.clientX - rect.left) / rect.width) * width;
    if (x < m.left || x > m.left + plotW) {
      hoverLine.setAttribute('visibility', 'hidden');
      tip.hidden = true;
      return;
    }
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (px[mid] <= x) lo = mid; else hi = mid - 1;
    }
    const i = lo;
    const cx = ((px[i] + px[i + 1]) / 2).toFixed(1);
    hoverLine.setAttribute('x1', cx);
    hoverLine.setAttribute('x2', cx);
    hoverLine.setAttribute('visibility', 'visible');
    const lines = [
      el('div', {class: 'dc-tooltip-title', text: 'step ' + steps[i] +
        (warmupOf.has(steps[i]) ? ' \u00b7 warm-up' : '') + (spikeOf.has(steps[i]) ? ' \u00b7 spike' : '') +
        (tracedAt(steps[i]) ? ' \u00b7 traced' : '')}),
    ];
    COMPONENTS.forEach((c, k) => {
      lines.push(el('div', {}, [
        swatch(c.color),
        el('span', {text: c.label + ': ' + fmtMsUnit(cols[k][i])}),
      ]));
    });
    lines.push(el('div', {class: 'dc-tooltip-total', text: 'total: ' + fmtMsUnit(totals[i])}));
    tip.replaceChildren(...lines);
    tip.hidden = false;
    const left = (event.clientX - rect.left);
    const flip = left > rect.width * 0.6;
    tip.style.left = flip ? '' : (left + 14) + 'px';
    tip.style.right = flip ? (rect.width - left + 14) + 'px' : '';
    tip.style.top = Math.max(0, event.clientY - rect.top - 10) + 'px';
  });
  chart.addEventListener('mouseleave', () => {
    hoverLine.setAttribute('visibility', 'hidden');
    tip.hidden = true;
  });

  if (clipped > 0) {
    wrapper.appendChild(el('p', {
      class: 'dc-chart-note',
      text: 'The y axis stops at ' + fmtMs(yMax) + ' ms so that ordinary steps stay readable; ' +
        clipped + ' step' + (clipped === 1 ? ' goes' : 's go') + ' higher' +
        (clippedWarmup === clipped ? ' (warm-up)' : clippedWarmup ? ' (warm-up and spikes)' : ' (spikes)') +
        '. Hover a step for its exact values.',
    }));
  }
  return wrapper;
}
