// The stacked step chart (run detail): data wait, compute and host overhead
// of every recorded step, stacked, with warm-up steps and spikes marked and
// traced steps banded. One <path> per component (one bar per step in short
// runs), and a single pair of pointer listeners for its hover read-out.

import {el, svg} from './dom.js';
import {fmtMs, fmtMsUnit, isNum} from '../format.js';
import {swatch, COMPONENTS, WARMUP_COLOR, SPIKE_COLOR, TRACE_COLOR} from './charts.js';
import {niceTicks, axisTicks, fmtTick, quantile} from './axes.js';

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
