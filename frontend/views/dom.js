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
function append(node, children) {
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
// Run names.

/**
 * A run name that wraps only after a '/' (or at a space), never inside a
 * directory name: each piece is unbreakable and a <wbr> follows each '/'.
 * The element's textContent is the name itself.
 *
 * @param {string} name
 * @param {{class?: string, title?: string, attrs?: Object}} [options]
 * @param {string} [tag] 'span' by default.
 * @return {HTMLElement}
 */
export function runName(name, options = {}, tag = 'span') {
  const node = el(tag, Object.assign({}, options, {class: ('dc-run-name ' + (options.class || '')).trim()}));
  appendRunName(node, name);
  return node;
}

/** Appends `name` to `node` as unbreakable pieces split after '/' and spaces. */
export function appendRunName(node, name) {
  // In a <bdi>: a bidirectional control in the name (U+202E) reorders the
  // name alone, never the sentence around it.
  const isolate = node.appendChild(document.createElement('bdi'));
  const pieces = String(name).split(/(?<=[/\s])/);
  pieces.forEach((piece, i) => {
    if (i > 0) isolate.appendChild(document.createElement('wbr'));
    isolate.appendChild(el('span', {class: 'dc-name-piece', text: piece}));
  });
  return node;
}

/**
 * A string from the recorded data (a run name, a device) to set inside a
 * sentence: a <bdi>, so its bidirectional controls stay inside it.
 * @param {*} text
 * @param {Object} [options] as for `el`.
 * @return {HTMLElement}
 */
export function isolated(text, options = {}) {
  return el('bdi', Object.assign({}, options, {text: String(text)}));
}
