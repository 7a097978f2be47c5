// Where the Device Cost tab keeps its view: the iframe's URL hash, and
// TensorBoard's own URL (its plugin deep-link parameters).
//
// The iframe's hash:
//   (empty) or #baseline=cpu%2Ftrain          overview
//   #view=detail&run=gpu%2Ftrain              one run
//   #view=compare&runs=a,b&baseline=a         chosen runs side by side
// Each value is encodeURIComponent-encoded; in `runs` the names are encoded
// one by one and joined with commas.
//
// The iframe's hash is not in the address bar, so the view is also kept in
// TensorBoard's own URL, as its plugin deep-link parameters
// (#devicecost&p.devicecost.view=detail&p.devicecost.run=gpu%2Ftrain, read
// back by TensorBoard's experimental.GetURLPluginData): a reload or a shared
// link opens the same view.

export const PLUGIN_NAME = 'devicecost';
const VIEWS = new Set(['overview', 'detail', 'compare']);

// ---------------------------------------------------------------------------
// Hash state.

function decode(raw) {
  try {
    return decodeURIComponent(raw);
  } catch (e) {
    return raw;
  }
}

/**
 * @param {string} hash location.hash, with or without '#'.
 * @return {{view: string, run: ?string, runs: string[], baseline: ?string}}
 */
export function parseHash(hash) {
  const raw = {};
  for (const part of String(hash || '').replace(/^#/, '').split('&')) {
    if (!part) continue;
    const i = part.indexOf('=');
    const key = decode(i < 0 ? part : part.slice(0, i));
    raw[key] = i < 0 ? '' : part.slice(i + 1);
  }
  const run = raw.run ? decode(raw.run) : null;
  const runs = raw.runs ? raw.runs.split(',').map(decode).filter((s) => s !== '') : [];
  let view = raw.view ? decode(raw.view) : '';
  if (!VIEWS.has(view)) view = run ? 'detail' : runs.length ? 'compare' : 'overview';
  return {view, run, runs, baseline: raw.baseline ? decode(raw.baseline) : null};
}

/**
 * Our state as TensorBoard plugin URL data: {view, run, runs, baseline}
 * with plain values, except `runs`, which keeps the iframe hash's form
 * (names encoded one by one, joined with commas).
 */
function pluginDataFor(state) {
  const data = {};
  if (state.view === 'detail' && state.run) {
    data.view = 'detail';
    data.run = state.run;
  } else if (state.view === 'compare' && state.runs && state.runs.length) {
    data.view = 'compare';
    data.runs = state.runs.map(encodeURIComponent).join(',');
  }
  if (state.baseline) data.baseline = state.baseline;
  return data;
}

/** The state held by TensorBoard plugin URL data; the inverse of pluginDataFor. */
export function stateFromPluginData(data) {
  if (!data || typeof data !== 'object') return parseHash('');
  return parseHash(Object.entries(data)
    .filter(([k, v]) => ['view', 'run', 'runs', 'baseline'].includes(k) && v !== null && v !== undefined)
    .map(([k, v]) => k + '=' + (k === 'runs' ? String(v) : encodeURIComponent(String(v))))
    .join('&'));
}

const PARAM_PREFIX = 'p.' + PLUGIN_NAME + '.';

/**
 * TensorBoard's hash with our plugin data replaced by `data`, or null when
 * the hash is not on our tab. The hash is '#<tab>&key=value&...' with keys
 * and values encodeURIComponent-encoded (TensorBoard's tf_storage); parts
 * that are not ours are kept as they are.
 */
export function tensorBoardHashFor(hash, data) {
  const parts = String(hash || '').replace(/^#/, '').split('&').filter((p) => p !== '');
  const tab = parts.filter((p) => !p.includes('=')).pop();
  if (tab === undefined || decode(tab) !== PLUGIN_NAME) return null;
  const kept = parts.filter((p) => !decode(p.split('=')[0]).startsWith(PARAM_PREFIX));
  const ours = Object.entries(data).map(([k, v]) =>
    encodeURIComponent(PARAM_PREFIX + k) + '=' + encodeURIComponent(String(v)));
  return kept.concat(ours).join('&');
}

/** Our plugin data in TensorBoard's hash ({} when there is none). */
export function pluginDataIn(hash) {
  const data = {};
  for (const part of String(hash || '').replace(/^#/, '').split('&')) {
    const pair = part.split('=');
    if (pair.length !== 2) continue;
    const key = decode(pair[0]);
    if (key.startsWith(PARAM_PREFIX)) data[key.slice(PARAM_PREFIX.length)] = decode(pair[1]);
  }
  return data;
}

/** TensorBoard's window when it is the same-origin parent page, else null. */
export function tensorBoardWindow() {
  try {
    const parent = window.parent;
    if (!parent || parent === window) return null;
    void parent.location.hash; // Throws when the parent is another origin.
    return parent;
  } catch (e) {
    return null;
  }
}

/**
 * Writes the view into TensorBoard's URL (replacing, not adding, a history
 * entry: the iframe's own hash change already made one).
 */
export function writeViewToTensorBoardUrl(state) {
  const top = tensorBoardWindow();
  if (!top) return;
  try {
    const hash = tensorBoardHashFor(top.location.hash, pluginDataFor(state));
    if (hash === null || '#' + hash === top.location.hash) return;
    const url = new URL(top.location.href);
    url.hash = hash;
    top.history.replaceState(top.history.state, '', url.href);
  } catch (e) {
    // The address bar is a convenience: never let it break the tab.
  }
}

/** The hash (without '#') for a state; the inverse of parseHash. */
export function hashFor(state) {
  const parts = [];
  if (state.view === 'detail') {
    parts.push('view=detail', 'run=' + encodeURIComponent(state.run || ''));
  } else if (state.view === 'compare') {
    parts.push('view=compare', 'runs=' + (state.runs || []).map(encodeURIComponent).join(','));
  }
  if (state.baseline) parts.push('baseline=' + encodeURIComponent(state.baseline));
  return parts.join('&');
}
