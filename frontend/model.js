// Data access for the Device Cost tab.
//
// TensorBoard loads this module in an iframe whose <base href> is the
// plugin's route prefix (/data/plugin/devicecost/), so every route is fetched
// with a URL relative to document.baseURI. Nothing here touches the DOM.

/**
 * @typedef {{ok: boolean, status: number, data: *, error: (string|null),
 *            text: (string|null)}} Result
 */

/**
 * Fetches a JSON route relative to the plugin's route prefix.
 *
 * Never throws: failures come back as `{ok: false, error}` where `error` is
 * the server's own text/plain message when it sent one.
 *
 * @param {string} route e.g. 'runs'
 * @param {Object<string, (string|Array<string>|null|undefined)>} [params]
 *     empty values are left out; an array repeats the parameter.
 * @param {{signal?: AbortSignal}} [options]
 * @return {Promise<Result>}
 */
async function fetchJSON(route, params = {}, options = {}) {
  const url = new URL(route, document.baseURI);
  for (const [key, value] of Object.entries(params)) {
    for (const item of Array.isArray(value) ? value : [value]) {
      if (item !== null && item !== undefined && item !== '') {
        url.searchParams.append(key, String(item));
      }
    }
  }
  let response;
  try {
    response = await fetch(url.href, {
      headers: {Accept: 'application/json'},
      credentials: 'same-origin',
      signal: options.signal,
    });
  } catch (e) {
    if (e && e.name === 'AbortError') {
      return {ok: false, status: 0, data: null, error: 'aborted', text: null, aborted: true};
    }
    return {
      ok: false,
      status: 0,
      data: null,
      error: 'Could not reach the TensorBoard server (' + String(e && e.message || e) + ').',
      text: null,
    };
  }
  let text;
  try {
    text = await response.text();
  } catch (e) {
    text = '';
  }
  if (!response.ok) {
    // The plugin's errors are text/plain; anything else (an HTML error page
    // from a proxy or a crash) is summarised rather than shown as markup.
    const type = response.headers.get('Content-Type') || '';
    const message = (!/html/i.test(type) && text.trim().slice(0, 2000)) ||
        ('The server answered ' + response.status + ' ' + (response.statusText || '') +
         '. The TensorBoard console may say more.').replace(' .', '.');
    return {ok: false, status: response.status, data: null, error: message, text: null};
  }
  try {
    return {ok: true, status: response.status, data: JSON.parse(text), error: null, text};
  } catch (e) {
    return {
      ok: false,
      status: response.status,
      data: null,
      error: 'The server sent a response that is not JSON: ' + text.trim().slice(0, 200),
      text: null,
    };
  }
}

/** GET runs?baseline= : every run's summary and the comparison. */
export function getRuns(baseline, options) {
  return fetchJSON('runs', {baseline}, options);
}

/** GET run?run= : one run's summary plus its per-step series. */
export function getRun(run, options) {
  return fetchJSON('run', {run}, options);
}

/** GET compare?run=a&run=b&baseline=a (repeated: run names may hold commas) */
export function getCompare(runs, baseline, options) {
  return fetchJSON('compare', {run: runs, baseline}, options);
}

/**
 * GET TensorBoard's own `data/plugins_listing` (its root is three levels up
 * from the plugin's route prefix `<root>/data/plugin/devicecost/`).
 */
export function getPluginsListing(options) {
  return fetchJSON('../../../data/plugins_listing', {}, options);
}

/**
 * Whether TensorBoard shows the Profile tab (xprof's `profile` plugin is
 * listed and active): true, false, or null when the listing could not be
 * read.
 * @param {Result} listing getPluginsListing's result.
 * @return {?boolean}
 */
export function profileTabActive(listing) {
  if (!listing || !listing.ok || !listing.data || typeof listing.data !== 'object') return null;
  const profile = listing.data.profile;
  return Boolean(profile && typeof profile === 'object' && profile.enabled === true);
}

/**
 * Stale-response guard. Each view load takes a token; when its response
 * arrives, it is drawn only if no newer load has started since, so a slow
 * older response never overwrites a newer view. Starting a load also aborts
 * the previous one's request.
 */
export class RequestGuard {
  constructor() {
    this._token = 0;
    this._controller = null;
  }

  /** Starts a new load: returns {token, signal}. */
  begin() {
    if (this._controller) this._controller.abort();
    this._controller = typeof AbortController === 'function' ? new AbortController() : null;
    this._token += 1;
    return {token: this._token, signal: this._controller ? this._controller.signal : undefined};
  }

  /** Whether `token` is still the newest load. */
  isCurrent(token) {
    return token === this._token;
  }
}
