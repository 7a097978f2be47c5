// Fixes tried (the report's `fixes_tried`): what `tb_devicecost.try_fixes`
// measured of each change on the user's own model, against the noise
// between the baseline's fits, best first, the advised one marked. Every
// figure is the report's; names are shown as text.

import {el, runName} from './dom.js';
import {fmtShare, fmtSpeedup, isNum} from '../format.js';
import {panel} from './common.js';

/** The same words as the report's (tb_devicecost/cli/renderers/common.py). */
export const FIXES_TRIED_TEXT = 'Measured: a change\u2019s median samples/s over the baseline\u2019s, ' +
    'its fits interleaved with the baseline\u2019s; noise: the largest deviation of a baseline fit ' +
    'from their median; kept: above 1 + noise. input_free and empty_step are ceilings, not fixes.';

/** `ADVISED`, `kept`, `slower`, `in noise`, `ceiling`: as the report's. */
export function resultText(entry) {
  if (entry.ceiling) return 'ceiling';
  if (entry.advised) return 'ADVISED';
  if (entry.slower) return 'slower';
  if (entry.kept) return entry.keeps_arithmetic ? 'kept' : 'kept (new arithmetic)';
  return isNum(entry.measured) ? 'in noise' : 'no measure';
}

/**
 * @param {Array<Object>|undefined} entries the report's `fixes_tried`.
 * @return {?HTMLElement} null when nothing was tried.
 */
export function buildFixesTried(entries) {
  const list = Array.isArray(entries)
    ? entries.filter((e) => e && typeof e === 'object' && e.run != null && e.change != null)
    : [];
  if (list.length === 0) return null;
  const head = el('tr', {}, [
    el('th', {text: 'Baseline'}),
    el('th', {text: 'Change'}),
    el('th', {class: 'dc-num', text: 'Predicted'}),
    el('th', {class: 'dc-num', text: 'Measured'}),
    el('th', {class: 'dc-num', text: 'Noise'}),
    el('th', {text: 'Result'}),
  ]);
  const body = el('tbody', {}, list.map((entry) => el('tr', {
    class: 'dc-fix-tried' + (entry.advised ? ' dc-fix-advised' : ''),
    attrs: {'data-change': String(entry.change), 'data-run': String(entry.run),
      'data-result': resultText(entry)},
    title: typeof entry.text === 'string' ? entry.text : '',
  }, [
    el('td', {class: 'dc-col-run'}, [runName(String(entry.baseline))]),
    el('td', {class: 'dc-fix-change', text: String(entry.change),
      title: typeof entry.what === 'string' ? entry.what : ''}),
    el('td', {class: 'dc-num dc-fix-predicted',
      text: isNum(entry.predicted) ? fmtSpeedup(entry.predicted) : '\u2014',
      title: typeof entry.predicted_basis === 'string' ? entry.predicted_basis : ''}),
    el('td', {class: 'dc-num dc-fix-measured', text: isNum(entry.measured) ? fmtSpeedup(entry.measured) : '\u2014'}),
    el('td', {class: 'dc-num dc-fix-noise', text: isNum(entry.noise) ? '\u00b1' + fmtShare(entry.noise) : '\u2014'}),
    el('td', {class: 'dc-fix-result', text: resultText(entry)}),
  ])));
  return panel('Fixes tried', [
    el('p', {
      class: 'dc-muted',
      text: 'Each change tried on this model in short fits interleaved with the baseline\u2019s: ' +
        'what its finding predicted, what it measured, and the noise between the baseline\u2019s fits.',
    }),
    el('div', {class: 'dc-table-wrap'}, [
      el('table', {class: 'dc-table dc-fixes-tried-table'}, [el('thead', {}, [head]), body]),
    ]),
    el('p', {class: 'dc-footnote', text: FIXES_TRIED_TEXT}),
  ], 'dc-fixes-tried');
}
