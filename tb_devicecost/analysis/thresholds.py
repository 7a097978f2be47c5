"""The thresholds of the verdict and the findings: every number the rules use.

Each constant is named once here and documented beside its value, with
where it comes from: the input and host thresholds are the built-in
profiler's (xprof's `InputAnalysis`,
`op_stats_to_input_pipeline_analysis.cc`), so both tools call the same run
input-bound. `verdicts.py` applies them (docs/VERDICTS.md), `data_wait.py`
and `estimates.py` compute with them, and `words/findings.py` quotes them.
"""

# Steady-state share of each step spent waiting for data, above the fetch
# floor: xprof's kHighlyInfeedBoundThresholdInPercent and
# kModeratelyInfeedBoundThresholdInPercent (comparisons are `>=`).
INPUT_HIGH = 0.20
INPUT_MODERATE = 0.05
# Share of each step outside data wait and compute (the Keras loop,
# callbacks, logging): xprof's "All Others" thresholds. From HOST_HIGH it is
# the verdict; from HOST_MODERATE a finding.
HOST_HIGH = 0.15
HOST_MODERATE = 0.03
# Warm-up (the first step of each fit) as a share of the fit's wall time:
# from WARMUP_DOMINATED it is the verdict, from WARMUP_FINDING a finding.
WARMUP_DOMINATED = 0.5
WARMUP_FINDING = 0.2
# With a device trace: the accelerator busy less than this share of the step
# while the input keeps up is `latency_bound` (torch-tb-profiler's "GPU
# utilisation < 50%"); below LATENCY_HIGH_BUSY the finding is high.
LATENCY_DEVICE_BUSY = 0.5
LATENCY_HIGH_BUSY = 0.2
# The fetch floor (a p50) is measured on a synthetic ready iterator; the
# pipeline's own handover of a ready batch costs up to a few times more
# (measured here: 1.8-3.7x on CPU). When the p50 data wait is within this
# factor of the floor (or below it), the p50 wait is the run's own cost of a
# ready batch.
FETCH_FLOOR_MAX_FACTOR = 4.0
# Handing over a ready batch never costs less than this (ms): xprof's rule
# of thumb, a fetch that returns within 50 microseconds is no bottleneck. A
# floor measured lower (a Python handover of arrays already in memory) is
# raised to it, so a few tens of microseconds of loop are not a verdict.
MIN_READY_FETCH_MS = 0.05
# A share this close to a verdict's threshold (relative) is `borderline`:
# run-to-run noise moves it across, so it makes a finding, not the verdict.
BORDERLINE = 0.15
# Without a measured floor (validation and custom-loop runs, older data) the
# wait cannot be split into handover and starvation, so it is judged
# conservatively: only a HIGH share whose p50 wait is at least this long (above
# every fetch floor measured so far, 0.1-0.7 ms) is evidence of starvation.
NO_FLOOR_MIN_P50_MS = 1.0
# When 90% of the steps waited at most this multiple of the floor, the
# pipeline keeps up: waits above it are occasional stalls, not starvation.
STALL_P90_FACTOR = 2.0
# Batches of at most this many samples whose median step is shorter than
# SMALL_BATCH_STEP_MS get the `small_batch` finding: the fixed cost of a
# step (dispatch, synchronisation, the Python loop) outweighs the work.
SMALL_BATCH_SIZE = 64
SMALL_BATCH_STEP_MS = 10.0
# Retraces (counted by the backend, e.g. TensorFlow's tracing count of the
# train function) from this count on are a moderate finding (info below).
RETRACING_MODERATE = 3
# Spikes with no retrace to explain them (`stalls`): moderate from this
# count, info below.
STALLS_MODERATE = 10
# What a larger batch would buy is estimated from the trace of one batch
# size: for at most this many times the batch that ran. Further is
# extrapolation the trace cannot support (memory, per-sample costs that stop
# growing linearly).
LATENCY_MAX_BATCH_GROWTH = 32
# The callback's own time inside a step (`measuring_cost`): above this
# share of the mean step, what it measured is uncertain by about that much,
# since its own code ran inside the parts it split the step into (TraceML
# cost a 1.4 ms step 42%).
MEASURING_SHARE_MAX = 0.05
# Shares are sums of float milliseconds: a threshold met exactly must not be
# missed by a rounding error in the last digit.
EPSILON = 1e-9
# A validation or evaluation run of fewer steady steps than this is short:
# a few long steps (each pass's first, creating its iterator) weigh on its
# mean, so its input and host findings are judged by the typical (p50) step,
# and it is never the overview's "worth a look" (issue 35, item 10).
FEW_STEPS_TO_JUDGE = 100
# ... where its mean rests on those few long steps: a mean step above this
# many typical steps. Input threads that fall behind every other batch make
# half the steps long (an H200 validation: mean 16.7 ms, p50 24.1 ms): its
# mean is the pipeline's, and decides.
FEW_STEPS_MEAN_FACTOR = 1.5
# Fixes tried (`tried.py`, docs/VERDICTS.md "Interventions"). A run whose
# `input_free` replay (the same model on batches already cached) gains less
# than this is not `input_bound`, whatever its data-wait share: removing the
# input entirely would not buy 10%.
INPUT_FREE_MIN_GAIN = 1.10
# The noise of a trial is the largest deviation of a baseline fit's
# samples/s from the baseline fits' median, and never less than this: two
# fits that agree by chance do not make a 1% gain real.
NOISE_FLOOR = 0.02
# A CPU-only host with at most this many cores has none to spare for input
# workers: they take the model's own (issue 34: worker processes as advised
# gave 0.59x on 2 cores, the model's compute per step rising 9.7 -> 16.5 ms).
SHARED_CORES = 4
# Our data wait and the trace's input wait for the same steps disagree when
# they differ by more than this share of the larger one (and by more than
# TRACE_DISAGREE_MIN_MS, below which both are noise; `trace_windows.py`).
TRACE_DISAGREE_RATIO = 0.20
TRACE_DISAGREE_MIN_MS = 0.05
# Comparing runs (`compare.py`, docs/VERDICTS.md "Comparing runs"): speedups
# within this distance of 1 read "as fast as".
SAME_SPEED = 0.05
# Components that differ by less than either of these are not explained as
# a difference: under 50 µs (xprof's bar for a fetch that is no bottleneck,
# MIN_READY_FETCH_MS) or within 10% of each other. Their words still quote
# both figures unless they print the same.
SAME_COMPONENT_MS = 0.05
SAME_COMPONENT_RATIO = 0.10
# A run's warm-up is mentioned when it is this many times the baseline's
# and longer by at least WARMUP_NOTE_MS.
WARMUP_NOTE_RATIO = 2.0
WARMUP_NOTE_MS = 100.0
# A device's step reads "about X ms whatever the batch" when, at the largest
# batch measured, its per-sample part is under this share of its fixed cost.
FLAT_STEP_SHARE = 0.25
# Fewer aligned steps than this are few (`workers.py`): a straggler named on
# them rests on a short overlap of the processes' steps.
FEW_ALIGNED_STEPS = 20
