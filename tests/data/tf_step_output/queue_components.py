"""What the queue of three components saves a call of TensorFlow's step.

`FetchTimedStep` (`tb_devicecost/backends/tensorflow.py`) queues each
steady step's fetch figures in its graph. Before 2026-11-29 it queued one
float64 pair, `[wait, size]`: the wait subtracted in the graph, the size
cast to float64, the two stacked. It now queues the two timestamps and the
int32 size as three components and subtracts at the read, three ops fewer
a call. This script calls both bodies on one prefetched `tf.data` iterator
of the seeds' MLP at batch 32, alternating in rounds (A B, B A, ...), and
prints the median difference a call (new less old) on the calling thread's
CPU clock, the process's and the wall, with its interquartile range and a
bootstrap 95% interval of the median (rounds resampled).

A one-off probe for issue 36, kept with its output (README.md here).

Usage: python tests/data/tf_step_output/queue_components.py [--rounds 150]
    [--calls 200]   (from the checkout's root)
"""

import argparse
import os
import random
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tf_step_output import CLOCKS, alternate, paired_figures, seeds_mlp_step  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=150)
    parser.add_argument("--calls", type=int, default=200, help="calls a body a round")
    args = parser.parse_args()
    tf, tf_backend, one_step, iterator = seeds_mlp_step()
    step = tf_backend.FetchTimedStep(one_step, run_eagerly=False)
    with tf.init_scope():
        pairs = tf.queue.FIFOQueue(-1, [tf.float64], shapes=[[2]])

    @tf.autograph.experimental.do_not_convert
    def pair_body(it):
        # The body before: one float64 pair a step.
        data, figures = paired_figures(tf, tf_backend, it)
        outputs = tf.experimental.Optional.from_value(one_step(data))
        pairs.enqueue(figures)
        return outputs

    functions = {"pair": tf.function(pair_body, reduce_retracing=True), "three": step.steady}

    def calls(name, count):
        function = functions[name]
        read = {clock_name: clock() for clock_name, clock in CLOCKS.items()}
        for _ in range(count):
            optional = function(iterator)
            optional.has_value()
            optional.get_value()
        added = {clock_name: (clock() - read[clock_name]) / count * 1e6
                 for clock_name, clock in CLOCKS.items()}
        # Emptied once a round, as the callback does once per write.
        if name == "three":
            step._taken()  # pylint: disable=protected-access
        elif int(pairs.size()):
            pairs.dequeue_many(int(pairs.size())).numpy()
        return added

    names = list(functions)
    rounds = alternate(names, calls, args.rounds, args.calls)

    print(f"three components less one pair, µs a call, {args.rounds} rounds of {args.calls} "
          "calls, median (interquartile range; bootstrap 95% interval of the median):")
    generator = random.Random(0)
    saved = True
    for clock_name in CLOCKS:
        differences = [a[clock_name] - b[clock_name]
                       for a, b in zip(rounds["three"], rounds["pair"])]
        quartiles = statistics.quantiles(differences, n=4)
        medians = sorted(
            statistics.median(generator.choices(differences, k=len(differences)))
            for _ in range(2000))
        low, high = medians[49], medians[1949]
        saved = saved and high < 0
        print(f"  {clock_name:7s} {statistics.median(differences):+.1f} "
              f"({quartiles[0]:+.1f} to {quartiles[2]:+.1f}; {low:+.1f} to {high:+.1f})")
    print(f"  (the pair's call: {statistics.median(r['thread'] for r in rounds['pair']):.0f} µs "
          "of the thread)")
    print("target: the interval below 0 on every clock: " + ("met" if saved else "not met"))
    return 0 if saved else 1


if __name__ == "__main__":
    sys.exit(main())
