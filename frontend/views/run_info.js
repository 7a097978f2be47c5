// Run detail's facts: where the step ran (the Placement panel) and what the
// run was (the Run info panel).

import {el, isolated} from './dom.js';
import {fmtCount, fmtBytes, isNum, DASH} from '../format.js';
import {isolatedList, stepDevices, stepDevicesNodes} from './common.js';

function countList(counts) {
  if (!counts || typeof counts !== 'object' || Object.keys(counts).length === 0) {
    return el('span', {class: 'dc-muted', text: DASH});
  }
  return el('span', {class: 'dc-count-list'}, Object.entries(counts).map(([device, n]) =>
    el('span', {class: 'dc-chip'}, [
      el('span', {class: 'dc-chip-key'}, [isolated(device)]),
      el('span', {class: 'dc-chip-value', text: fmtCount(n)}),
    ])));
}

export function placementPanel(run) {
  const placement = run.placement;
  if (!placement || typeof placement !== 'object') {
    return el('p', {
      class: 'dc-muted',
      text: 'Placement was not recorded for this run (it is read on the first step of a ' +
        'TensorFlow-backend fit).',
    });
  }
  const {device, others} = stepDevices(run);
  const models = placement.device_models && typeof placement.device_models === 'object' ? placement.device_models : {};
  // Device and model names are the recorded data's: each isolated.
  const named = (d) => (models[d] ? [isolated(d), ' (', isolated(models[d]), ')'] : [isolated(d)]);
  const visible = Array.isArray(placement.devices) ? placement.devices.map(String) : [];
  const cpuOps = Array.isArray(placement.cpu_ops_on_accelerator_run) ? placement.cpu_ops_on_accelerator_run : null;
  const rows = [
    ['Step ran on', el('span', {class: 'dc-step-device'}, device ? named(device) : [DASH])],
    others.length
      ? ['Also used', el('span', {class: 'dc-count-list'}, others.map((d) => el('span', {class: 'dc-chip'}, named(d))))]
      : null,
    ['Variables per device', countList(placement.variables)],
    ['Ops per device', countList(placement.ops)],
    ['CPU ops in an accelerator run', cpuOps === null
      ? el('span', {class: 'dc-muted', text: DASH})
      : cpuOps.length === 0
        ? el('span', {text: 'none'})
        : el('span', {class: 'dc-count-list dc-cpu-ops'}, cpuOps.map((op) => el('code', {class: 'dc-op'}, [isolated(op)])))],
    ['Cross-device copies', el('span', {text: fmtCount(placement.cross_device_copies)})],
    ['Input bytes per step', el('span', {text: fmtBytes(placement.input_bytes_per_step)})],
    visible.length
      ? ['Visible devices', el('span', {class: 'dc-muted dc-visible-devices',
        title: 'Devices TensorFlow could use; the step ran on the ones above'}, isolatedList(visible, ', '))]
      : null,
  ].filter(Boolean);
  return el('dl', {class: 'dc-kv'}, rows.flatMap(([k, v]) => [el('dt', {text: k}), el('dd', {}, [v])]));
}

// Run info: what helps a user read and reproduce the run, in their words.
// Internals (the record schema, steps per record, the fetch floor of the run
// info, which the Fetch floor card shows as analysed) stay out.

const LIBRARIES = [
  ['keras', 'Keras'], ['tensorflow', 'TensorFlow'], ['jax', 'JAX'], ['torch', 'PyTorch'],
  ['numpy', 'NumPy'], ['tensorboard', 'TensorBoard'], ['tb_devicecost', 'tb-devicecost'],
];

function text(v) {
  return v === null || v === undefined || v === '' ? null : String(v);
}

function yesNo(v) {
  return typeof v === 'boolean' ? (v ? 'yes' : 'no') : null;
}

/** A recorded string as children for `el`: isolated, or null when empty. */
function shown(v) {
  const value = text(v);
  return value === null ? null : [isolated(value)];
}

/** The distribution strategy's name, or null for Keras's default (none). */
function strategyText(info) {
  const name = text(info.distribution_strategy);
  if (!name || /^_?Default/.test(name)) return null;
  const replicas = isNum(info.replicas) && info.replicas > 1 ? ', ' + fmtCount(info.replicas) + ' replicas' : '';
  return [isolated(name.replace(/^_+/, '')), replicas];
}

/** A process of a multi-process job: its index, and the devices it holds. */
function processRow(info) {
  if (!isNum(info.process_count) || info.process_count < 2 || !isNum(info.process_index)) return null;
  const devices = Array.isArray(info.local_devices) ? info.local_devices.map(String) : [];
  return ['Process', [fmtCount(info.process_index) + ' of ' + fmtCount(info.process_count),
    ...(devices.length ? [', holding ', ...isolatedList(devices, ', ')] : [])]];
}

/** How the batch is split (the run object's `distribution`). */
function batchSplitRow(distribution) {
  if (!distribution || typeof distribution !== 'object') return null;
  const parts = [
    isNum(distribution.global_batch) ? fmtCount(distribution.global_batch) + ' in all' : null,
    isNum(distribution.per_process_batch) && distribution.process_count > 1
      ? fmtCount(distribution.per_process_batch) + ' per process' : null,
    isNum(distribution.per_replica_batch) ? fmtCount(distribution.per_replica_batch) + ' per replica' : null,
  ].filter(Boolean);
  return parts.length ? ['Batch split', parts.join(', ')] : null;
}

/**
 * [label, value] rows of the run info a user needs; values are strings, or
 * children for `el` where they hold recorded strings (a model, host or
 * device name), each of those in its own <bdi>.
 */
function infoRows(run) {
  const info = run.info && typeof run.info === 'object' ? run.info : {};
  const versions = info.versions && typeof info.versions === 'object' ? info.versions : {};
  const versionText = LIBRARIES.filter(([key]) => text(versions[key]))
    .flatMap(([key, label], i) => [i ? ', ' + label + ' ' : label + ' ', isolated(versions[key])]);
  const spe = isNum(info.steps_per_execution) ? info.steps_per_execution : null;
  const model = text(info.model);
  const hostParts = [text(info.cpu_model) ? isolated(info.cpu_model) : null,
    isNum(info.cpu_count) ? fmtCount(info.cpu_count) + ' CPUs' : null].filter(Boolean);
  const host = hostParts.flatMap((part, i) => (i ? [', ', part] : [part]));
  const rows = [
    ['Backend', shown(info.backend) || shown(run.backend)],
    ['Versions', versionText.length ? versionText : null],
    ['Device', run.device != null ? stepDevicesNodes(run) : null],
    ['Batch size', isNum(run.batch_size) ? fmtCount(run.batch_size)
      : isNum(info.batch_size) ? fmtCount(info.batch_size) : null],
    ['XLA compilation (jit_compile)', yesNo(info.jit_compile !== undefined ? info.jit_compile : run.jit_compile)],
    spe !== null && spe > 1 ? ['Steps per call (steps_per_execution)', fmtCount(spe)] : null,
    ['Distribution strategy', strategyText(info)],
    processRow(info),
    batchSplitRow(run.distribution),
    ['Precision (dtype policy)', shown(info.dtype_policy)],
    info.run_eagerly === true ? ['Runs eagerly (run_eagerly)', 'yes: every step runs op by op in Python'] : null,
    ['Model', model ? [isolated(model), isNum(info.parameters) ? ', ' + fmtCount(info.parameters) + ' parameters' : ''] : null],
    ['Host', text(info.hostname)
      ? [isolated(info.hostname), ...(host.length ? [' (', ...host, ')'] : [])]
      : host.length ? host : null],
    ['Started', shown(info.start_time)],
  ];
  return rows.filter((row) => row && row[1] !== null);
}

export function infoList(run) {
  const rows = infoRows(run);
  if (rows.length === 0) {
    return el('p', {class: 'dc-muted', text: 'No run info recorded.'});
  }
  return el('dl', {class: 'dc-kv'}, rows.flatMap(([k, v]) => [
    el('dt', {text: k}),
    Array.isArray(v) ? el('dd', {}, v) : el('dd', {text: v}),
  ]));
}
