// Axis helpers of the hand-written SVG charts (charts.js, step_chart.js):
// "nice" ticks, an axis end at or above the largest value, tick labels, and
// a quantile for cutting an axis above a few spikes.

/** "Nice" tick values from 0 (or lo) to hi. */
export function niceTicks(lo, hi, count = 5) {
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
export function axisTicks(max) {
  if (!(max > 0)) return [0, 1];
  const ticks = niceTicks(0, max, 5);
  if (ticks.length < 2) return [0, max];
  const step = ticks[1] - ticks[0];
  while (ticks[ticks.length - 1] < max - step * 1e-9) {
    ticks.push(Number((ticks[ticks.length - 1] + step).toPrecision(12)));
  }
  return ticks;
}

export function fmtTick(v) {
  if (v === 0) return '0';
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString('en-US');
  return String(Number(v.toPrecision(4)));
}

export function quantile(sorted, q) {
  if (!sorted.length) return 0;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
}
