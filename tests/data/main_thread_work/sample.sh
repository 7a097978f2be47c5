#!/usr/bin/env bash
# The training thread's CPU by shared library, without and with the
# callback: `perf record -e cpu-clock` attached to FITS fits of 2,000 steps
# of each variant (main_thread_work.py fits), one process each, then the
# samples of the process's first thread (the training thread) by library,
# and by symbol within libpython. A sample is 0.25 ms (-F 4000).
# Usage (from the checkout's root): bash tests/data/main_thread_work/sample.sh [FITS] [ORDER]
set -eu
fits=${1:-16}
order=${2:-"none full"}
work=$(mktemp -d)
here=$(dirname "$0")
for variant in $order; do
    (cd "$work" && KERAS_BACKEND=jax "$OLDPWD/.venv/bin/python" "$OLDPWD/$here/main_thread_work.py" \
        fits "$variant" "$fits" > /dev/null 2>&1) &
    runner=$!
    while [ ! -f "$work/ready_$variant" ]; do sleep 0.2; done
    pid=$(cat "$work/ready_$variant")
    perf record -q -e cpu-clock -F 4000 -p "$pid" -o "$work/$variant.data" 2> /dev/null &
    recorder=$!
    wait $runner
    sleep 0.5
    kill -INT $recorder 2> /dev/null || true
    wait $recorder || true
    echo "== $variant: $fits fits of 2000 steps; samples of the training thread (pid $pid) by library"
    perf report -i "$work/$variant.data" --stdio --sort pid,dso -F sample,pid,dso 2> /dev/null \
        | grep " $pid:" | sort -n -r | head -6
    echo "   within libpython, by symbol"
    perf report -i "$work/$variant.data" --stdio --pid "$pid" --dso libpython3.11.so.1.0 \
        --sort sym -F sample,sym 2> /dev/null | grep -v '^#' | grep -v '^$' | sort -n -r | head -8
done
rm -rf "$work"
