// How every figure of the tab is written: the one rule of
// `tb_devicecost/analysis/formatting.py` (the report and the findings), mirrored
// exactly, so a number reads the same in the tab, in the findings and in
// `tb-devicecost report`. Nothing here touches the DOM.
//
// Rounding: half away from zero on the exact binary value, which is what
// Number.prototype.toFixed does (0.0625 -> "0.063"; 1.005 is stored as
// 1.00499999... -> "1.00").
//
// Milliseconds: decimals by the magnitude of the unrounded value: below 1: 3
// (0.188); from 1: 2 (3.74); from 10: 1 (41.2); from 100: none, with a comma
// every three digits (1,823). Zero is 0.000; a negative value is "-" and its
// magnitude so written (never "-0.000").
// Shares: a share of 1 as a percentage, floored, never rounded (14.96% is
// "14%"): p = 100 * value + 1e-9; below 10 with one decimal, left out when it
// is 0 (4.2%, 4%); from 10 a whole percent (73%).
// Counts and rates: whole, with commas (36,931). Speedups: two decimals and
// "x" (0.46x).
// Missing values (null, undefined, NaN, infinities, non-numbers): "—".

export const DASH = '\u2014';

const SHARE_EPSILON = 1e-9;

/** Whether `x` is a finite number (the only values written as numbers). */
export function isNum(x) {
  return typeof x === 'number' && Number.isFinite(x);
}

function group(digits) {
  return digits.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

/** A non-negative `value` rounded half away from zero, with commas. */
function fixed(value, decimals) {
  const text = value.toFixed(decimals);
  const dot = text.indexOf('.');
  return dot < 0 ? group(text) : group(text.slice(0, dot)) + text.slice(dot);
}

function nonzero(text) {
  return /[1-9]/.test(text);
}

function msDecimals(magnitude) {
  if (magnitude >= 100) return 0;
  if (magnitude >= 10) return 1;
  if (magnitude >= 1) return 2;
  return 3;
}

/** Milliseconds without the unit: 0.188, 3.74, 41.2, 1,823. */
export function fmtMs(value) {
  if (!isNum(value)) return DASH;
  const magnitude = Math.abs(value);
  const text = fixed(magnitude, msDecimals(magnitude));
  return value < 0 && nonzero(text) ? '-' + text : text;
}

/** fmtMs with " ms"; a missing value alone. */
export function fmtMsUnit(value) {
  const text = fmtMs(value);
  return text === DASH ? text : text + ' ms';
}

/** A difference in milliseconds: +1.20, -0.300, +0.000. */
export function fmtSignedMs(value) {
  if (!isNum(value)) return DASH;
  const text = fmtMs(Math.abs(value));
  return (value < 0 && nonzero(text) ? '-' : '+') + text;
}

/** A share of 1 as a percentage, floored: 73%, 4.2%, 4%. */
export function fmtShare(value) {
  if (!isNum(value)) return DASH;
  const percent = 100 * value + SHARE_EPSILON;
  if (percent < 10) {
    const tenths = Math.floor(percent * 10);
    if (tenths % 10) return (tenths / 10).toFixed(1) + '%';
  }
  return Math.floor(percent).toFixed(0) + '%';
}

/** A count or a rate, rounded to a whole number, with commas: 36,931. */
export function fmtCount(value) {
  if (!isNum(value)) return DASH;
  const text = fixed(Math.abs(value), 0);
  return value < 0 && nonzero(text) ? '-' + text : text;
}

// Decimals of a rate below 1, by magnitude (formatting.py's _RATE_DECIMALS).
const RATE_DECIMALS = [[0.1, 3], [0.01, 4], [0.001, 5], [1e-4, 6], [1e-5, 7], [1e-6, 8]];

/**
 * A rate (samples/s): whole, with commas, from 100 on; else three
 * significant digits (0.333, 12.3), so a small rate never reads 0.
 */
export function fmtRate(value) {
  if (!isNum(value)) return DASH;
  const magnitude = Math.abs(value);
  if (magnitude >= 100 || value === 0) return fmtCount(value);
  let decimals = magnitude >= 10 ? 1 : magnitude >= 1 ? 2 : 9;
  if (magnitude < 1) {
    const found = RATE_DECIMALS.find(([bound]) => magnitude >= bound);
    if (found) decimals = found[1];
  }
  const text = fixed(magnitude, decimals);
  return value < 0 ? '-' + text : text;
}

/** How many times as fast: 0.46x. */
export function fmtSpeedup(value) {
  if (!isNum(value)) return DASH;
  // Python writes a negative zero with its sign.
  if (value < 0 || Object.is(value, -0)) return '-' + fixed(-value, 2) + 'x';
  return fixed(value, 2) + 'x';
}

/** Bytes in binary units: 512 B, 12.8 KiB, 3.00 MiB. */
export function fmtBytes(value) {
  if (!isNum(value)) return DASH;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let scaled = value;
  let i = 0;
  while (Math.abs(scaled) >= 1024 && i < units.length - 1) {
    scaled /= 1024;
    i++;
  }
  const text = i === 0 ? fmtCount(scaled) : fixed(Math.abs(scaled), Math.abs(scaled) < 10 ? 2 : 1);
  return (i > 0 && scaled < 0 ? '-' : '') + text + ' ' + units[i];
}
