// Tiny DOM helpers. Text always goes through `textContent` and attributes
// through `setAttribute`, so run, op and device names (user data) can never
// become markup.

const SVG_NS = 'http://www.w3.org/2000/svg';

/**
 * Creates an HTML element.
 *
 * @param {string} tag
 * @param {{class?: string, text?: *, attrs?: Object<string, *>,
 *          title?: string}} [options]
 * @param {Array<Node|string|null|undefined|false>} [children] strings become
 *     text nodes; null, undefined and false are skipped.
 * @return {HTMLElement}
 */
export function el(tag, options = {}, children = []) {
  const node = document.createElement(tag);
  decorate(node, options);
  append(node, children);
  return node;
}

/**
 * Creates an SVG element; `attrs` values are set with setAttribute.
 *
 * @param {string} tag
 * @param {Object<string, *>} [attrs]
 * @param {Array<Node|string|null|undefined|false>} [children]
 * @return {SVGElement}
 */
export function svg(tag, attrs = {}, children = []) {
  const node = document.createElementNS(SVG_NS, tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value !== null && value !== undefined && value !== false) {
      node.setAttribute(key, String(value));
    }
  }
  append(node, children);
  return node;
}

/** Appends children (nodes or strings) to `node`. */
export function append(node, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    node.appendChild(
      typeof child === 'string' || typeof child === 'number'
        ? document.createTextNode(String(child))
        : child,
    );
  }
  return node;
}

function decorate(node, {class: className, text, attrs, title} = {}) {
  if (className) node.className = className;
  if (text !== undefined && text !== null) node.textContent = String(text);
  if (title) node.setAttribute('title', title);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === null || value === undefined || value === false) continue;
      node.setAttribute(key, value === true ? '' : String(value));
    }
  }
}

/**
 * A link that changes only the iframe's URL hash. The document has a
 * `<base href>` (the plugin's route prefix), so a bare `#...` href would
 * resolve against it and leave the page: resolve against the document URL.
 */
export function hashLink(hash, options = {}, children = []) {
  const href = new URL('#' + hash, window.location.href).href;
  const attrs = Object.assign({}, options.attrs || {}, {href});
  return el('a', Object.assign({}, options, {attrs}), children);
}

/**
 * Returns `url` when it is an http(s) URL, else null: data must never become
 * a `javascript:` link. Relative URLs resolve, as a link's href does, against
 * the document's base URL (the plugin's route prefix).
 */
export function safeHref(url) {
  if (typeof url !== 'string' || url === '') return null;
  try {
    const resolved = new URL(url, document.baseURI);
    return resolved.protocol === 'http:' || resolved.protocol === 'https:'
      ? url
      : null;
  } catch (e) {
    return null;
  }
}

// ---------------------------------------------------------------------------
// Number formatting. Every numeric field may be null (unknown): show a dash.

export const DASH = '\u2014';

function isNum(x) {
  return typeof x === 'number' && Number.isFinite(x);
}

/** Milliseconds with precision that suits their size: 0.123, 1.23, 12.3, 1,234. */
export function fmtMs(ms) {
  if (!isNum(ms)) return DASH;
  const abs = Math.abs(ms);
  if (abs === 0) return '0';
  if (abs < 1) return ms.toFixed(3);
  if (abs < 10) return ms.toFixed(2);
  if (abs < 100) return ms.toFixed(1);
  return Math.round(ms).toLocaleString('en-US');
}

/** Like fmtMs, with the unit. */
export function fmtMsUnit(ms) {
  if (!isNum(ms)) return DASH;
  if (Math.abs(ms) >= 10000) return (ms / 1000).toFixed(1) + ' s';
  return fmtMs(ms) + ' ms';
}

/** A signed difference in ms: +1.20 ms, -0.300 ms. */
export function fmtDeltaMs(ms) {
  if (!isNum(ms)) return DASH;
  const sign = ms > 0 ? '+' : ms < 0 ? '\u2212' : '\u00b1';
  return sign + fmtMs(Math.abs(ms)) + ' ms';
}

/** A share in [0, 1] as a percentage. */
export function fmtPct(share) {
  if (!isNum(share)) return DASH;
  const pct = share * 100;
  if (pct > 0 && pct < 1) return '<1%';
  return Math.round(pct) + '%';
}

export function fmtRate(x) {
  if (!isNum(x)) return DASH;
  if (Math.abs(x) < 10) return x.toFixed(2);
  if (Math.abs(x) < 100) return x.toFixed(1);
  return Math.round(x).toLocaleString('en-US');
}

export function fmtInt(x) {
  if (!isNum(x)) return DASH;
  return Math.round(x).toLocaleString('en-US');
}

export function fmtSpeedup(x) {
  if (!isNum(x)) return DASH;
  return x.toFixed(2) + '\u00d7';
}

export function fmtBytes(n) {
  if (!isNum(n)) return DASH;
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let i = 0;
  while (Math.abs(value) >= 1024 && i < units.length - 1) {
    value /= 1024;
    i++;
  }
  const text = i === 0 ? String(Math.round(value)) : value.toFixed(value < 10 ? 2 : 1);
  return text + ' ' + units[i];
}

export {isNum};
