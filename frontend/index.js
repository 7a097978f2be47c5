// Entry point of the Device Cost tab.
//
// TensorBoard loads this ES module in an iframe whose <base href> is the
// plugin's route prefix and calls render(). Where the view is kept (the
// iframe's hash, TensorBoard's URL): `url_state.js`.

import {
  getRuns, getRun, getCompare, getPluginsListing, profileTabActive, RequestGuard,
} from './model.js';
import {el} from './views/dom.js';
import {errorState} from './views/common.js';
import {buildOverview} from './views/overview.js';
import {buildDetail} from './views/detail.js';
import {buildCompare} from './views/compare.js';
import {buildWorkers} from './views/workers.js';
import {
  PLUGIN_NAME, hashFor, parseHash, pluginDataIn, stateFromPluginData, tensorBoardHashFor,
  tensorBoardWindow, writeViewToTensorBoardUrl,
} from './url_state.js';

const AUTO_REFRESH_MS = 30000;

// ---------------------------------------------------------------------------
// The app.

class App {
  constructor(main, updated) {
    this.main = main;
    this.updated = updated;
    this.guard = new RequestGuard();
    this.picks = new Set();
    this.state = parseHash(window.location.hash);
    this.lastKey = null;
    this.lastText = null;
    this.lastLoadAt = 0;
    this.inFlight = false;
    this.profileTab = null;
    this.syncUrl = false;
  }

  /** Changes the view by changing the hash (so Back works and links are shareable). */
  navigate(state) {
    const hash = hashFor(state);
    if (('#' + hash) === window.location.hash || (hash === '' && window.location.hash === '')) {
      this.load({quiet: false});
    } else {
      window.location.hash = hash;
    }
  }

  chartWidth() {
    const w = (this.main.clientWidth || document.documentElement.clientWidth || 1000) - 40;
    return Math.max(560, Math.min(1400, Math.round(w)));
  }

  /**
   * Fetches the current view's data and draws it.
   * @param {{quiet?: boolean, force?: boolean}} opts quiet: keep the current
   *     content (and scroll position) until the new data is in, and skip the
   *     redraw when nothing changed, unless `force`.
   */
  async load({quiet = false, force = false} = {}) {
    const state = parseHash(window.location.hash);
    this.state = state;
    if (this.syncUrl) writeViewToTensorBoardUrl(state);
    const {token, signal} = this.guard.begin();
    this.inFlight = true;
    let spinner = null;
    if (!quiet) {
      spinner = setTimeout(() => {
        if (this.guard.isCurrent(token)) {
          this.main.replaceChildren(el('div', {class: 'dc-loading', text: 'Loading\u2026'}));
        }
      }, 150);
    }
    document.body.classList.add('dc-busy');

    let result;
    let what;
    if (state.view === 'detail') {
      what = 'run \u201c' + (state.run || '') + '\u201d';
      // Whether TensorBoard has a Profile tab for the capture links.
      const listing = getPluginsListing({signal});
      result = state.run
        ? await getRun(state.run, {signal})
        : {ok: false, status: 0, error: 'No run named in the link.'};
      const active = profileTabActive(await listing);
      if (active !== null) this.profileTab = active;
    } else if (state.view === 'compare') {
      what = 'the comparison';
      result = state.runs.length >= 2
        ? await getCompare(state.runs, state.baseline, {signal})
        : {ok: false, status: 0, error: 'Pick at least two runs on the overview to compare them.'};
    } else {
      what = 'the runs';
      result = await getRuns(state.baseline, {signal});
    }
    if (spinner) clearTimeout(spinner);
    // Stale-response guard: a newer load started while this one waited.
    if (!this.guard.isCurrent(token)) return;
    this.inFlight = false;
    document.body.classList.remove('dc-busy');
    this.lastLoadAt = Date.now();
    this.updated.textContent = 'Updated ' + new Date(this.lastLoadAt).toLocaleTimeString();

    const key = hashFor(state);
    if (quiet && !force && result.ok && key === this.lastKey && result.text === this.lastText) {
      return; // Nothing changed: keep the DOM (and whatever the user is doing with it).
    }
    this.lastKey = key;
    this.lastText = result.ok ? result.text : null;

    let node;
    if (!result.ok) {
      node = errorState({
        what,
        status: result.status,
        message: result.error,
        onRetry: () => this.load({quiet: false}),
        backHash: window.location.hash.replace(/^#/, '') ? '' : null,
      });
    } else {
      try {
        const ctx = {
          state, picks: this.picks, hashFor, profileTab: this.profileTab,
          navigate: (s) => this.navigate(s), chartWidth: this.chartWidth(),
        };
        node = state.view === 'detail' ? buildDetail(result.data, ctx)
          : state.view === 'compare' ? buildCompare(result.data, ctx)
          : buildOverview(result.data, ctx);
        // The processes of distributed fits, right under the summary: which
        // process holds the others back matters more than any one run.
        const workers = state.view === 'overview' ? buildWorkers(result.data.workers, ctx) : null;
        if (workers) node.insertBefore(workers, node.children[1] || null);
      } catch (e) {
        console.error('tb-devicecost: could not draw the view', e);
        node = errorState({
          what, status: 0,
          message: 'The tab could not draw this data: ' + String(e && e.message || e),
          onRetry: () => this.load({quiet: false}),
          backHash: '',
        });
      }
    }
    const scrollY = quiet ? window.scrollY : 0;
    this.main.replaceChildren(node);
    window.scrollTo(0, scrollY);
  }

  /** A background refresh, unless the user is in the middle of something. */
  autoRefresh() {
    if (this.inFlight) return;
    const active = document.activeElement;
    if (active && active.tagName === 'SELECT' && this.main.contains(active)) return;
    this.load({quiet: true});
  }

  visible() {
    // The iframe stays visible to the Page Visibility API while TensorBoard
    // shows another tab; it then has no size.
    return document.visibilityState === 'visible' && window.innerWidth > 0 && window.innerHeight > 0;
  }
}

// ---------------------------------------------------------------------------
// TensorBoard's plugin messaging (tensorboard/components/experimental/
// plugin_lib): a MessageChannel handshake, then JSON messages
// {type, id, payload, error, isReply}. Optional: every step is guarded so
// that the tab works the same outside TensorBoard.

function connectToTensorBoard(onReload) {
  try {
    if (!window.parent || window.parent === window || typeof MessageChannel !== 'function') return null;
    const channel = new MessageChannel();
    const port = channel.port1;
    const waits = new Map();
    let nextId = 0;
    port.onmessage = (event) => {
      let message;
      try {
        message = JSON.parse(event.data);
      } catch (e) {
        return;
      }
      if (!message || typeof message !== 'object') return;
      if (message.isReply) {
        const wait = waits.get(message.id);
        if (!wait) return;
        waits.delete(message.id);
        if (message.error) wait.reject(new Error(String(message.error)));
        else wait.resolve(message.payload);
        return;
      }
      if (message.type === 'experimental.DataReloaded') {
        try {
          onReload();
        } catch (e) {
          // Never let a reload notice break the host's channel.
        }
      }
      try {
        port.postMessage(JSON.stringify({
          type: message.type, id: message.id, payload: null, error: null, isReply: true,
        }));
      } catch (e) {
        // The host went away.
      }
    };
    window.parent.postMessage('experimental.bootstrap', '*', [channel.port2]);
    return {
      send(type, payload, timeoutMs = 2000) {
        return new Promise((resolve, reject) => {
          const id = nextId++;
          waits.set(id, {resolve, reject});
          setTimeout(() => {
            if (waits.delete(id)) reject(new Error('no reply'));
          }, timeoutMs);
          try {
            port.postMessage(JSON.stringify({type, id, payload, error: null, isReply: false}));
          } catch (e) {
            waits.delete(id);
            reject(e);
          }
        });
      },
    };
  } catch (e) {
    return null;
  }
}

// ---------------------------------------------------------------------------

function loadStylesheet() {
  const href = new URL('./style.css', import.meta.url).href;
  if (document.querySelector('link[data-dc-style]')) return Promise.resolve();
  const link = document.createElement('link');
  link.rel = 'stylesheet';
  link.href = href;
  link.setAttribute('data-dc-style', '');
  const done = new Promise((resolve) => {
    link.addEventListener('load', resolve);
    link.addEventListener('error', resolve);
    setTimeout(resolve, 1500);
  });
  (document.head || document.documentElement).appendChild(link);
  return done;
}

let app = null;

/** Called by TensorBoard once the iframe has loaded this module. */
export async function render() {
  if (app) {
    await app.load({quiet: true, force: true});
    return;
  }
  await loadStylesheet();
  document.body.classList.add('dc-body');

  const refresh = el('button', {
    class: 'dc-button dc-refresh', text: 'Refresh',
    attrs: {type: 'button', title: 'Reload the data (also every 30 s while this tab is open)'},
  });
  const updated = el('span', {class: 'dc-updated', attrs: {'aria-live': 'polite'}});
  const main = el('main', {class: 'dc-main'});
  const header = el('header', {class: 'dc-header'}, [
    el('div', {class: 'dc-title-block'}, [
      el('h1', {class: 'dc-title', text: 'Device Cost'}),
      el('span', {
        class: 'dc-subtitle',
        text: 'Where each training step\u2019s time went: data wait, compute, host overhead, warm-up',
      }),
    ]),
    el('span', {class: 'dc-spacer'}),
    // The glossary (docs/READING.md, shipped beside this module as text).
    el('a', {
      class: 'dc-reading-link', text: 'How to read this tab',
      attrs: {href: new URL('./READING.txt', import.meta.url).href, target: '_blank', rel: 'noopener'},
    }),
    updated,
    refresh,
  ]);
  document.body.append(el('div', {class: 'dc-app'}, [header, main]));

  app = new App(main, updated);
  refresh.addEventListener('click', () => app.load({quiet: true, force: true}));
  window.addEventListener('hashchange', () => app.load({quiet: false}));

  // Auto-refresh every 30 s while the tab is visible; catch up on return.
  setInterval(() => {
    if (app.visible() && Date.now() - app.lastLoadAt >= AUTO_REFRESH_MS) app.autoRefresh();
  }, 5000);
  document.addEventListener('visibilitychange', () => {
    if (app.visible() && Date.now() - app.lastLoadAt >= AUTO_REFRESH_MS) app.autoRefresh();
  });

  // TensorBoard's reload button (and its own auto-reload) broadcast
  // DataReloaded; TensorBoard's deep links may carry our state as
  // #devicecost&p.devicecost.run=... on the parent page.
  const host = connectToTensorBoard(() => {
    if (Date.now() - app.lastLoadAt > 2000) app.autoRefresh();
  });

  // The view to open: the iframe's own hash, else the one kept in
  // TensorBoard's URL (read directly when same-origin, else asked for).
  const top = tensorBoardWindow();
  if (!window.location.hash && top) {
    const hash = hashFor(stateFromPluginData(pluginDataIn(top.location.hash)));
    // Resolve against the document, not the <base href>; no hashchange.
    if (hash) window.history.replaceState(window.history.state, '', new URL('#' + hash, window.location.href).href);
  }
  app.syncUrl = true;
  if (top) {
    // TensorBoard rewrites its hash when the user comes back to this tab
    // ('#devicecost'): put the view back. A hash that names another view of
    // ours (a link pasted into the same page) is followed instead.
    top.addEventListener('hashchange', () => {
      const data = pluginDataIn(top.location.hash);
      if (tensorBoardHashFor(top.location.hash, data) === null) return; // another tab
      const hash = hashFor(stateFromPluginData(data));
      if (Object.keys(data).length && hash !== hashFor(parseHash(window.location.hash))) {
        app.navigate(parseHash(hash));
      } else {
        writeViewToTensorBoardUrl(parseHash(window.location.hash));
      }
    });
  }
  const first = app.load({quiet: false});
  if (host && !top && !window.location.hash) {
    host.send('experimental.GetURLPluginData', {pluginName: PLUGIN_NAME}).then((data) => {
      if (!data || typeof data !== 'object' || window.location.hash) return;
      const hash = hashFor(stateFromPluginData(data));
      if (hash) window.location.replace(new URL('#' + hash, window.location.href).href);
    }, () => {});
  }
  await first;
}
