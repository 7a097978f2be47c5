// Predictions checked (the report's `predictions`): where the log directory
// holds a run and a fixed counterpart of it (the same model with a faster
// input pipeline, a larger batch or on the other device), the gain the
// finding predicted beside the gain the counterpart achieved. Every figure
// is the report's; names are shown as text.

import {el, isolated, runName} from './dom.js';
import {fmtCount, fmtSpeedup, isNum} from '../format.js';
import {panel} from './common.js';

const CHANGES = {
  input_pipeline: 'faster input pipeline',
  batch_size: 'larger batch',
  device: 'other device',
};
const BOUND_SIGNS = {at_most: '\u2264 ', at_least: '\u2265 '};
/** The same words as the report's (tb_devicecost/cli/renderers/common.py). */
export const PREDICTIONS_TEXT = 'Predicted: the gain a finding\u2019s estimate (or a sweep\u2019s fits, ' +
    'for the other device) gives at the counterpart\u2019s batch size; achieved: the counterpart\u2019s ' +
    'samples/s over the run\u2019s; * where a batch is beyond those the estimate was made from; ' +
    'none where no honest figure exists, with the reason.';

/**
 * `larger batch (10 → 1,024)`: what differs between the two runs, as
 * children for `el` (device names isolated).
 */
function changeText(pair) {
  const text = CHANGES[pair.change] || String(pair.change);
  const sizes = pair.batch_size && typeof pair.batch_size === 'object' ? pair.batch_size : null;
  const devices = pair.device && typeof pair.device === 'object' ? pair.device : null;
  if (pair.change === 'batch_size' && sizes) {
    return [text + ' (' + fmtCount(sizes.run) + ' \u2192 ' + fmtCount(sizes.counterpart) + ')'];
  } else if (pair.change === 'device' && devices) {
    return [text + ' (', isolated(devices.run), ' \u2192 ', isolated(devices.counterpart), ')'];
  }
  return [text];
}

/** `≤ 3.10x`, `34.89x*`: the predicted speedup, its bound, a star beyond it. */
function predictedText(pair) {
  if (!isNum(pair.predicted_speedup)) return 'none';
  const bound = pair.predicted && typeof pair.predicted === 'object' ? pair.predicted.bound : null;
  return (BOUND_SIGNS[bound] || '') + fmtSpeedup(pair.predicted_speedup) + (pair.extrapolated ? '*' : '');
}

/** `1.18x`, `held` or `broken` (a bound), or a dash (no prediction). */
function ratioText(pair) {
  if (pair.within_bound === true) return 'held';
  if (pair.within_bound === false) return 'broken';
  return isNum(pair.achieved_over_predicted) ? fmtSpeedup(pair.achieved_over_predicted) : '\u2014';
}

/**
 * What made the prediction: a finding's id, or `sweep` then the sweep's
 * name in code type, as the README writes it (sweep `name`): a sweep named
 * "sweep" must not read "sweep sweep".
 */
function predictedBy(pair) {
  const cell = el('td', {class: 'dc-prediction-by'});
  if (pair.predicted_by === 'sweep') {
    cell.appendChild(document.createTextNode('sweep '));
    cell.appendChild(el('code', {class: 'dc-sweep-name', text: String(pair.sweep)}));
  } else {
    cell.appendChild(el('code', {class: 'dc-finding-id', text: String(pair.predicted_by)}));
  }
  return cell;
}

/**
 * @param {Array<Object>|undefined} pairs the report's `predictions`.
 * @return {?HTMLElement} null when no run has a fixed counterpart.
 */
export function buildPredictions(pairs) {
  const list = Array.isArray(pairs)
    ? pairs.filter((p) => p && typeof p === 'object' && p.run != null && p.counterpart != null)
    : [];
  if (list.length === 0) return null;
  const head = el('tr', {}, [
    el('th', {text: 'Run'}),
    el('th', {text: 'With the fix'}),
    el('th', {text: 'Change'}),
    el('th', {text: 'Predicted by'}),
    el('th', {class: 'dc-num', text: 'Predicted (samples/s)', title: 'The gain in samples/s the estimate gives at the counterpart\u2019s batch size'}),
    el('th', {class: 'dc-num', text: 'Achieved (samples/s)', title: 'The counterpart\u2019s samples/s over the run\u2019s (mean steps)'}),
    el('th', {class: 'dc-num', text: 'Achieved \u00f7 predicted'}),
  ]);
  const body = el('tbody', {}, list.map((pair) => el('tr', {
    class: 'dc-prediction',
    attrs: {'data-run': String(pair.run), 'data-counterpart': String(pair.counterpart),
      'data-change': String(pair.change)},
    title: typeof pair.text === 'string' ? pair.text : '',
  }, [
    el('td', {class: 'dc-col-run'}, [runName(String(pair.run))]),
    el('td', {class: 'dc-col-run'}, [runName(String(pair.counterpart))]),
    el('td', {class: 'dc-prediction-change'}, changeText(pair)),
    predictedBy(pair),
    el('td', {
      class: 'dc-num dc-predicted', text: predictedText(pair),
      title: typeof pair.unpredicted === 'string' ? 'No prediction: ' + pair.unpredicted
        : typeof pair.basis === 'string' ? pair.basis : '',
    }),
    el('td', {class: 'dc-num dc-achieved', text: fmtSpeedup(pair.achieved_speedup)}),
    el('td', {class: 'dc-num dc-achieved-over-predicted', text: ratioText(pair)}),
  ])));
  const unpredicted = list.filter((pair) => typeof pair.unpredicted === 'string');
  return panel('Predictions checked', [
    el('p', {
      class: 'dc-muted',
      text: 'Runs of the same model with a fix applied: what the finding (or, for the other ' +
        'device, the batch-size sweep) predicted it would buy, and what it bought.',
    }),
    el('div', {class: 'dc-table-wrap'}, [
      el('table', {class: 'dc-table dc-predictions-table'}, [el('thead', {}, [head]), body]),
    ]),
    el('p', {class: 'dc-footnote', text: PREDICTIONS_TEXT}),
    ...(unpredicted.length ? [el('ul', {class: 'dc-unpredicted'}, unpredicted.map((pair) => el('li', {}, [
      runName(String(pair.run)), ' \u2192 ', runName(String(pair.counterpart)),
      ': no prediction: ', isolated(pair.unpredicted),
    ])))] : []),
  ], 'dc-predictions');
}
