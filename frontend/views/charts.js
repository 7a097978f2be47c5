// Hand-written SVG charts: the components' colours and legend, share bars,
// the warm-up bar and stacked bars (the stacked step chart is
// step_chart.js's). Each chart is built once per refresh as a few
// <path>/<rect> elements, not one element per point.

import {el, svg} from './dom.js';
import {fmtMsUnit, fmtShare, isNum} from '../format.js';
import {axisTicks, fmtTick} from './axes.js';

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
 * @param {{width?: number, height?: number, handoverShare?: ?number}} [opts]
 *     `handoverShare`: the part of the data wait's share spent handing over
 *     ready batches (the run's `handover_share`), drawn first in its own
 *     shade; the rest of the data wait is waiting.
 * @return {SVGElement|HTMLElement}
 */
export function shareBar(shares, {width = 160, height = 14, handoverShare = null} = {}) {
  const values = COMPONENTS.map((c) => (shares && isNum(shares[c.key]) ? Math.max(0, shares[c.key]) : 0));
  const total = values.reduce((a, b) => a + b, 0);
  if (!shares || total <= 0) {
    return el('span', {class: 'dc-muted', text: 'no steady-state steps'});
  }
  const handover = isNum(handoverShare) ? Math.min(values[0], Math.max(0, handoverShare)) : 0;
  // The shares as the report prints them (not renormalised: the same text).
  const label = COMPONENTS.map((c) => c.label + ' ' + fmtShare(shares[c.key]) +
      (c.key === 'data_wait' && fmtShare(handover) !== fmtShare(0)
        ? ' (handover ' + fmtShare(handover) + ')' : '')).join(' \u00b7 ');
  const children = [svg('title', {}, [label])];
  const segments = [];
  COMPONENTS.forEach((c, i) => {
    if (i === 0 && handover > 0) {
      segments.push({key: HANDOVER.key, color: HANDOVER.color, value: handover});
      segments.push({key: c.key, color: c.color, value: values[i] - handover});
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
// Stacked horizontal bars (compare view): ms per step by component.

/**
 * @param {Array<{label: string, values: Object<string, ?number>, note?: string,
 *     readyFetchMs?: ?number}>} rows `readyFetchMs`: the part of the row's
 *     data wait spent handing over ready batches (the run's
 *     `ready_fetch_ms`), drawn first in its own shade.
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
      const readyFetchMs = c.key === 'data_wait' && isNum(row.readyFetchMs)
        ? Math.min(v, Math.max(0, row.readyFetchMs)) : 0;
      const parts = readyFetchMs > 0
        ? [{value: readyFetchMs, color: HANDOVER.color, key: HANDOVER.key, label: 'handover of ready batches'},
          {value: v - readyFetchMs, color: c.color, key: c.key, label: 'data wait beyond the handover'}]
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
