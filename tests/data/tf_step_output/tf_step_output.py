"""What timing TensorFlow's fetch inside the graph costs a call of the step.

The callback runs Keras's step through `FetchTimedStep`
(`tb_devicecost/backends/tensorflow.py`): the same body as Keras's
`tf.function`, with two `tf.timestamp` ops around the fetch. This script
calls, on one prefetched `tf.data` iterator of the seeds' MLP at batch 32,
three functions of that body, alternating in rounds (A B C, C B A, ...),
and reads the calling thread's CPU time (`time.thread_time`), the
process's (`time.process_time`) and the wall time a call:

- `keras`: Keras's own body, the fetch untimed (the floor);
- `output`: the fetch's figures returned as a second output beside the
  optional (the callback's design before the queue);
- `queue`: `FetchTimedStep`'s steady function, the figures put into a
  queue of the graph's own and read once a round (as the callback reads
  them once per write).

Each call also reads the optional as Keras does (`has_value`,
`get_value`), and `output` its figures. Printed last: each variant's
median difference from `keras` a call, with its interquartile range over
the rounds. Target: `queue` adds less than `output` on every clock.

A one-off probe for issue 36, kept with its output (README.md here).

Usage: python tests/data/tf_step_output/tf_step_output.py [--rounds 20]
    [--calls 300]   (from the checkout's root)
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

CLOCKS = {"thread": time.thread_time, "process": time.process_time, "wall": time.perf_counter}


def seeds_mlp_step():
    """`(tf, the backend module, Keras's one-step function, iterator)`: the
    seeds' MLP compiled and traced, and a prefetched `tf.data` iterator of
    its batches of 32 (also `queue_components.py`'s)."""
    import tensorflow as tf

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    sys.path[:0] = [root, os.path.join(root, "benchmarks")]
    import models  # pylint: disable=import-outside-toplevel
    from tb_devicecost.backends import keras_loop
    from tb_devicecost.backends import tensorflow as tf_backend

    x, y = models.data("mlp", 32 * 64)
    model = models.build("mlp")
    model.fit(x[:64], y[:64], batch_size=32, verbose=0)
    one_step = keras_loop.one_step_on_data(model.train_function)
    iterator = iter(tf.data.Dataset.from_tensor_slices((x, y)).batch(32).repeat().prefetch(8))
    return tf, tf_backend, one_step, iterator


def paired_figures(tf, tf_backend, iterator):
    """`(batch, figures)` inside a graph: the fetch timed and the batch's
    size stacked as one float64 pair, the figures of the callback's step
    before 479a9c5 (`output_body` here, `queue_components.py`'s pair)."""
    data, wait = tf_backend.timed_get_next(tf, iterator)
    size = tf_backend._leading_size(tf, data)  # pylint: disable=protected-access
    return data, tf.stack([wait, tf.cast(size, tf.float64)])


def alternate(names, calls, rounds, count):
    """`{name: [figures of a round, ...]}`: `calls(name, count)` for each
    name, warmed up first, then alternating in rounds (A B C, C B A, ...)."""
    for name in names:
        calls(name, 50)  # Traced and warm.
    figures = {name: [] for name in names}
    for index in range(rounds):
        for name in (names if index % 2 == 0 else names[::-1]):
            figures[name].append(calls(name, count))
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--calls", type=int, default=300, help="calls a variant a round")
    args = parser.parse_args()
    tf, tf_backend, one_step, iterator = seeds_mlp_step()

    @tf.autograph.experimental.do_not_convert
    def keras_body(it):
        return tf.experimental.Optional.from_value(one_step(it.get_next()))

    @tf.autograph.experimental.do_not_convert
    def output_body(it):
        data, figures = paired_figures(tf, tf_backend, it)
        return tf.experimental.Optional.from_value(one_step(data)), figures

    step = tf_backend.FetchTimedStep(one_step, run_eagerly=False)
    functions = {
        "keras": tf.function(keras_body, reduce_retracing=True),
        "output": tf.function(output_body, reduce_retracing=True),
        "queue": step.steady,
    }

    def calls(name, count):
        function, read = functions[name], {}
        for clock_name, clock in CLOCKS.items():
            read[clock_name] = clock()
        for _ in range(count):
            called = function(iterator)
            optional = called[0] if name == "output" else called
            optional.has_value()
            optional.get_value()
            if name == "output":
                called[1]._numpy().tolist()  # pylint: disable=protected-access
        if name == "queue":
            step._taken()  # pylint: disable=protected-access
        return {clock_name: (clock() - read[clock_name]) / count * 1e6
                for clock_name, clock in CLOCKS.items()}

    names = list(functions)
    rounds = alternate(names, calls, args.rounds, args.calls)

    print(f"µs a call added to Keras's own, {args.rounds} rounds of {args.calls} calls, "
          "median (interquartile range):")
    added = {}
    for name in names[1:]:
        cells = []
        for clock_name in CLOCKS:
            differences = [a[clock_name] - b[clock_name]
                           for a, b in zip(rounds[name], rounds["keras"])]
            quartiles = statistics.quantiles(differences, n=4)
            added[name, clock_name] = statistics.median(differences)
            cells.append(f"{clock_name} {added[name, clock_name]:+.1f} "
                         f"({quartiles[0]:+.1f} to {quartiles[2]:+.1f})")
        print(f"  {name:7s} " + ", ".join(cells))
    print(f"  (Keras's own call: {statistics.median(r['thread'] for r in rounds['keras']):.0f} µs "
          "of the thread)")
    better = all(added["queue", clock] < added["output", clock] for clock in CLOCKS)
    print("queue against output, µs a call: "
          + ", ".join(f"{clock} {added['queue', clock] - added['output', clock]:+.1f}" for clock in CLOCKS)
          + f" (target: below 0 on every clock): {'met' if better else 'not met'}")
    return 0 if better else 1


if __name__ == "__main__":
    sys.exit(main())
