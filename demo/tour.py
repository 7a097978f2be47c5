"""`python -m demo.tour`: the README's tour, written from a demo's own runs.

Reads the runs of `python -m demo` through the same analysis as the tab and
the report, and writes, per scenario, what a common answer says, what the tab
shows (a screenshot of it), the verdict and the fix, and the before/after
figures. Every figure comes from the runs; nothing is typed by hand.

    python -m demo --logdir runs --no-serve
    python -m demo.tour --logdir runs --readme README.md --images docs/images
"""

import argparse
import os
import re
import sys

from tb_devicecost import analysis
from tb_devicecost import words
from tb_devicecost.analysis import formatting
from tb_devicecost.reading import reader

START = "<!-- tour:start -->"
END = "<!-- tour:end -->"
GPU_START = "<!-- h100:start -->"
GPU_END = "<!-- h100:end -->"
# The GPU story's runs: the scenarios of both devices, by run name stem.
GPU_ROWS = ("small_work/batch10", "small_work/batch1024", "warmup/long", "input_pipeline/naive")

SECTIONS = [
    {
        "scenario": "small_work",
        "finding": 'small_batch',
        "title": "Too little work per step",
        "claim": "For a small model the fixed cost of a step (kernel launches, "
        "transfers, the Python loop) outweighs the arithmetic, so the GPU cannot "
        "pay off.",
        "variants": ["batch10", "batch1024"],
        "screenshot": ("compare", ["batch10", "batch1024"]),
    },
    {
        "scenario": "input_pipeline",
        "finding": 'input_bound',
        "title": "A CPU-bound input pipeline",
        "claim": "Decoding and augmenting in Python on the CPU starves the "
        "accelerator; `num_parallel_calls=AUTOTUNE`, `prefetch` and `cache()` fix it.",
        "variants": ["naive", "parallel_cache_prefetch", "tf_ops", "augment_in_model"],
        "screenshot": ("compare", ["naive", "parallel_cache_prefetch", "tf_ops", "augment_in_model"]),
    },
    {
        "scenario": "warmup",
        "finding": 'warmup_dominated',
        "title": "Warm-up",
        "claim": "Graph construction, kernel compilation and memory allocation "
        "make the first steps slow, so short runs look slow on the GPU.",
        "variants": ["short", "long"],
        "screenshot": ("detail", "short"),
    },
    {
        "scenario": "placement",
        "finding": 'cross_device_copies',
        "title": "Op placement",
        "claim": "Some operations land on the CPU while the model is on the GPU, "
        "and every step copies data between the two.",
        "variants": ["pinned_layer"],
        "screenshot": ("detail", "pinned_layer"),
    },
    {
        "scenario": "tfrecord",
        "finding": None,
        "title": "A TFRecord pipeline done right",
        "claim": "Read TFRecords with parallel interleave, parse them in "
        "TensorFlow ops with `num_parallel_calls`, and prefetch (here also "
        "`cache()` the decoded images, which fit in memory).",
        "variants": ["parallel_prefetch"],
        "screenshot": ("detail", "parallel_prefetch"),
    },
]


def _runs_of(runs, section, device):
    return [
        runs.get(f"{section['scenario']}/{variant}-{device}/train")
        for variant in section["variants"]
    ]


def _pct(value):
    # The analysis's own formatting, so the tour and the findings agree.
    return "n/a" if value is None else analysis.fmt_share(value)


def _ms(value):
    return "n/a" if value is None else analysis.fmt_ms(value)


def _rate(value):
    return "n/a" if value is None else f"{value:,.0f}"


def _table(runs):
    lines = [
        "| run | verdict | p50 step (ms) | samples/s (mean step) | data wait (share) | compute (share) | host overhead (share) | warm-up (share of wall) |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for run in runs:
        if run is None:
            continue
        shares = run["shares"] or {}
        lines.append(
            f"| `{run['run']}` | `{run['verdict']}` | {_ms(run['step_ms']['p50'])} | "
            f"{_rate(run['samples_per_s'])} | {_pct(shares.get('data_wait'))} | "
            f"{_pct(shares.get('compute'))} | {_pct(shares.get('host_overhead'))} | "
            f"{_pct(run['warmup_share_of_wall'])} |"
        )
    return "\n".join(lines)


def _key_finding(run, finding_id=None):
    """The finding the scenario is about, else the verdict's own."""
    for wanted in (finding_id, run["verdict"]):
        for finding in run["findings"]:
            if finding["id"] == wanted:
                return finding
    return run["findings"][0] if run["findings"] else None


def _observation(section, runs):
    """One sentence per scenario, from its own numbers."""
    present = [run for run in runs if run is not None]
    if len(present) != len(runs):
        return "Some runs of this scenario are missing: run the whole demo."
    name = section["scenario"]
    if name == "small_work":
        small, large = runs
        return (
            f"At batch 10 a step takes {_ms(small['step_ms']['p50'])} ms; at batch 1024 "
            f"{_ms(large['step_ms']['p50'])} ms: {large['batch_size'] / small['batch_size']:.0f}× the "
            f"work for {large['step_ms']['p50'] / small['step_ms']['p50']:.1f}× the time, so "
            f"{large['samples_per_s'] / small['samples_per_s']:.0f}× the samples per second. "
            "Most of a small step is its fixed cost."
        )
    if name == "input_pipeline":
        naive, usual_fix, tf_ops, in_model = runs
        return (
            f"The Python pipeline keeps each step waiting {_pct(naive['shares']['data_wait'])} of "
            f"its time ({_ms(naive['data_wait_ms']['mean'])} ms). The usual fix (parallel calls, "
            f"cache, prefetch) cuts that to {_pct(usual_fix['shares']['data_wait'])}: Python work "
            "holds the GIL, so parallel calls do not help; only the cache does, from the second "
            f"epoch on. The same work in TensorFlow ops waits {_pct(tf_ops['shares']['data_wait'])}, "
            f"and in the model's preprocessing layers {_pct(in_model['shares']['data_wait'])}: "
            f"{in_model['samples_per_s'] / naive['samples_per_s']:.0f}× the naive throughput."
        )
    if name == "warmup":
        short, long = runs
        return (
            f"The short fit spends {_pct(short['warmup_share_of_wall'])} of its wall time in "
            f"warm-up ({_ms(short['warmup_ms'])} ms of tracing and graph optimisation); the "
            f"long one {_pct(long['warmup_share_of_wall'])}. Compare devices on the steady "
            "state, never on a short fit's total time."
        )
    if name == "placement":
        [pinned] = runs
        placement = pinned["placement"]
        ops = ", ".join(f"{count} on {device}" for device, count in sorted((placement["ops"] or {}).items()))
        return (
            f"The first step's ops: {ops}; {placement['cross_device_copies']} edges copy data "
            "between the devices on every step (on a CPU-only machine the layer goes to a "
            "second logical CPU, so the copies still show)."
        )
    [tfrecord] = runs
    return (
        f"Verdict `{tfrecord['verdict']}`: the pipeline waits {_pct(tfrecord['shares']['data_wait'])} "
        f"of each step, {_ms(tfrecord['data_wait_ms']['mean'])} ms against a fetch floor of "
        f"{_ms(tfrecord['fetch_floor_ms'])} ms."
    )


def render(report, device="cpu0", images="docs/images"):
    runs = {run["run"]: run for run in report["runs"]}
    parts = [
        START,
        "",
        "Figures from `python -m demo` on a 2-core CPU machine (regenerate with "
        "`python -m demo.tour`); your machine's will differ, the verdicts should not.",
        "",
    ]
    for index, section in enumerate(SECTIONS, start=1):
        section_runs = _runs_of(runs, section, device)
        parts += [
            f"### {index}. {section['title']}",
            "",
            f"**What a common answer says.** {section['claim']}",
            "",
            f"**What the tab shows.** {_observation(section, section_runs)}",
            "",
            f"![{section['title']}]({images}/tour_{section['scenario']}.png)",
            "",
            _table(section_runs),
            "",
        ]
        key_run = next((run for run in section_runs if run is not None), None)
        finding = _key_finding(key_run, section["finding"]) if key_run else None
        if finding:
            parts += [
                f"**Verdict and fix** for `{key_run['run']}`: `{key_run['verdict']}`; "
                f"`{finding['id']}`: {finding.get('headline') or finding['message']} "
                f"*Fix:* {finding['fix']}",
                "",
            ]
    parts.append(END)
    return "\n".join(parts)


_PREDICTIONS_NOTE = (
    "Predicted: the gain a finding's estimate (or the sweep's fits, for the "
    "other device) gives at the fixed run's batch size; achieved: the fixed "
    "run's samples/s over the run's; \\* where a batch is beyond those the "
    "estimate was made from; ≥ a bound from below, and whether it held; none "
    "where no honest figure exists, and why (docs/READING.md says how runs "
    "are paired and when a figure is given)."
)
# The comparison's sentence on how the two devices scale with the batch:
# the sweep's fits and crossover, which the section already gives once, so
# it is left out of the README here.
_SCALING_SENTENCE = re.compile(r" Across batch sizes \(.*?\): .*?\.(?=\s|$)")


def without_scaling(explanation):
    """A comparison's explanation without its "Across batch sizes" sentence."""
    return _SCALING_SENTENCE.sub("", explanation)


def predictions_table(pairs):
    """The report's predictions checked as a Markdown table: each run with a
    fixed counterpart, the gain predicted beside the gain achieved, the
    figures as `tb-devicecost report` writes them."""
    from tb_devicecost.cli.renderers import common

    lines = [
        "| run | with the fix | change | predicted by | predicted | achieved | achieved ÷ predicted |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    unpredicted = []
    for pair in pairs:
        by = pair["predicted_by"]
        lines.append(
            f"| `{pair['run']}` | `{pair['counterpart']}` | {common.change_text(pair)} | "
            f"{'`' + by + '`' if by != 'sweep' else 'sweep `' + pair['sweep'] + '`'} | "
            f"{common.predicted_text(pair).replace('*', chr(92) + '*')} | "
            f"{formatting.fmt_speedup(pair['achieved_speedup'])} | "
            f"{common.ratio_text(pair)} |"
        )
        if pair.get("unpredicted"):
            unpredicted.append(
                f"- `{pair['run']}` → `{pair['counterpart']}`: {pair['unpredicted']}.")
    if unpredicted:
        lines += ["", "No prediction:", ""] + unpredicted
    return "\n".join(lines)


def render_gpu(report, images="docs/images", source="tests/data/h100_demo/jax"):
    """The README's "On an NVIDIA H100" section, from a demo run on a GPU
    machine: the GPU mostly idle at a small batch, why against the CPU,
    where the GPU starts to win (the model's one crossover and speedup, from
    its sweep), and each finding's prediction checked against the run with
    its fix applied."""
    runs = {run["run"]: run for run in report["runs"]}
    gpu = runs["small_work/batch10-gpu0/train"]
    [row] = [row for row in report["comparison"]["rows"] if row["run"] == gpu["run"]]
    [sweep] = report["sweeps"]
    # The verdict's own finding: on JAX the training thread's fetch is the
    # largest part of the step (input_bound), on PyTorch the launches
    # (latency_bound); either way with the GPU busy a few percent.
    finding = _key_finding(gpu)
    lines = [
        "| run | device | verdict | mean step (ms) | samples/s | GPU busy |",
        "|---|---|---|---:|---:|---:|",
    ]
    for stem in GPU_ROWS:
        for device in ("cpu0", "gpu0"):
            run = runs.get(f"{stem}-{device}/train")
            if run is None:
                continue
            lines.append(
                f"| `{run['run']}` | {run['device']} | `{run['verdict']}` | "
                f"{_ms(run['step_ms']['mean'])} | {_rate(run['samples_per_s'])} | "
                f"{_pct(run['device_busy_fraction']) if run['device_busy_fraction'] is not None else '–'} |"
            )
    sweep_lines = [
        "| batch | " + " | ".join(f"{device} samples/s" for device in sorted(sweep["devices"])) + " |",
        "|---:|" + "---:|" * len(sweep["devices"]),
    ]
    points = {
        device: {point["batch_size"]: point["samples_per_s"] for point in fit["points"]}
        for device, fit in sweep["devices"].items()
    }
    for batch in sorted({b for device in points.values() for b in device}):
        sweep_lines.append(
            f"| {batch:,} | "
            + " | ".join(_rate(points[device].get(batch)) for device in sorted(points))
            + " |"
        )
    backend = {"jax": "JAX", "torch": "PyTorch", "tensorflow": "TensorFlow"}.get(
        gpu["backend"], gpu["backend"]
    )
    return "\n".join([
        GPU_START,
        "",
        f"Recorded with `python -m demo` on the borrowed NVIDIA H100 machine (16 CPU "
        f"cores, the {backend} backend, no TensorFlow installed), every scenario on the "
        f"CPU and the GPU (`device_busy=True` on the GPU); the runs are kept in `{source}` "
        "and checked by the tests. Regenerate this section with "
        f"`python -m demo.tour --gpu-logdir {source}`.",
        "",
        "\n".join(lines),
        "",
        f"**The GPU is mostly idle:** busy {_pct(gpu['device_busy_fraction'])} of "
        f"each step of `{gpu['run']}`, from 10 traced steps of which only the digest "
        f"is kept. `{finding['id']}`: {finding.get('headline') or finding['message']}",
        "",
        f"*Fix:* {finding['fix']} *Expected:* {finding['expected']['text']}.",
        "",
        f"![The H100 run in the tab, with the trace's numbers]({images}/h100_detail.png)",
        "",
        f"**Why the CPU is faster here.** {without_scaling(row['explanation'])}",
        "",
        f"![The GPU run against the CPU run of the same model]({images}/h100_compare.png)",
        "",
        f"**Where the GPU starts to win.** The demo's sweep of the same MLP: "
        f"{sweep['message']}",
        "",
        "\n".join(sweep_lines),
        "",
        f"![The sweep: samples/s against batch size on each device]({images}/h100_sweep.png)",
        "",
        "**Predictions checked.** Each finding's expected gain, beside what the "
        "same model with the fix applied achieved in this log directory (for the "
        "other device, the sweep's prediction), as measured: achieved ÷ predicted "
        "is 1.00x for a perfect prediction.",
        "",
        predictions_table(report["predictions"]),
        "",
        f"{_PREDICTIONS_NOTE}",
        "",
        f"![The predictions checked, in the tab]({images}/h100_predictions.png)",
        "",
        GPU_END,
    ])


def splice(readme_path, tour, start=START, end=END):
    with open(readme_path, encoding="utf-8") as readme:
        text = readme.read()
    pattern = re.compile(re.escape(start) + ".*?" + re.escape(end), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{readme_path} has no {start} ... {end} markers.")
    with open(readme_path, "w", encoding="utf-8") as readme:
        readme.write(pattern.sub(lambda _: tour, text))


def take_screenshots(logdir, images, device="cpu0"):
    """Screenshots of the tab on the demo's runs, one per scenario, plus the
    overview, a run detail and a comparison for the README's top."""
    views = {"overview": ("", None)}
    for section in SECTIONS:
        kind, variants = section["screenshot"]
        name = lambda v: f"{section['scenario']}/{v}-{device}/train"  # noqa: E731
        if kind == "compare":
            state = "view=compare&runs=" + ",".join(_encode(name(v)) for v in variants)
        else:
            state = "view=detail&run=" + _encode(name(variants))
        views[f"tour_{section['scenario']}"] = (state, None)
    _screenshot_views(logdir, images, views, height=1500)


def take_gpu_screenshots(logdir, images):
    """The H100 section's screenshots: the small-batch GPU run's detail, its
    comparison with the CPU run, and the sweep on the overview."""
    gpu, cpu = "small_work/batch10-gpu0/train", "small_work/batch10-cpu0/train"
    views = {
        "h100_detail": ("view=detail&run=" + _encode(gpu), None),
        "h100_compare": ("view=compare&runs=" + ",".join(_encode(r) for r in (gpu, cpu)), None),
        "h100_sweep": ("", ".dc-sweep-message"),
        "h100_predictions": ("", ".dc-predictions"),
    }
    _screenshot_views(logdir, images, views, height=1300)


def _screenshot_views(logdir, images, views, height):
    """Serves `logdir` and saves `<images>/<name>.png` of each view of the
    tab: `views` maps a name to `(the tab's hash, a selector to scroll into
    view or None)`."""
    from playwright.sync_api import sync_playwright

    from demo import serve

    os.makedirs(images, exist_ok=True)
    process, base = serve.start_tensorboard(logdir, 6106)
    try:
        with sync_playwright() as playwright:
            browser = serve.launch_chromium(playwright)
            page = browser.new_page(viewport={"width": 1400, "height": height})
            page.goto(base + "/#devicecost")
            frame = page.frame_locator('iframe[src*="name=devicecost"]')
            frame.locator(".dc-run-row").first.wait_for(timeout=60_000)
            for file_name, (state, anchor) in views.items():
                frame.locator("body").evaluate("(body, hash) => { location.hash = hash; }", state)
                page.wait_for_timeout(1500)
                if anchor:
                    frame.locator(anchor).first.scroll_into_view_if_needed()
                    page.wait_for_timeout(300)
                page.screenshot(path=os.path.join(images, f"{file_name}.png"))
            browser.close()
    finally:
        serve.stop_tensorboard(process)


def _encode(text):
    import urllib.parse

    return urllib.parse.quote(text, safe="")


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m demo.tour", description=__doc__.splitlines()[0])
    parser.add_argument("--logdir", default="runs")
    parser.add_argument("--readme", default="README.md")
    parser.add_argument("--images", default="docs/images")
    parser.add_argument("--no-screenshots", action="store_true")
    parser.add_argument(
        "--gpu-logdir",
        help="a demo's runs recorded on a GPU machine: writes the README's "
        "'On an NVIDIA H100' section from them instead of the CPU tour",
    )
    args = parser.parse_args(argv)
    from demo.__main__ import own_signals

    own_signals()  # Ctrl-C or `kill` stops the TensorBoard of the screenshots too.
    if args.gpu_logdir:
        report = words.build_report(reader.read_runs(reader.local_provider(args.gpu_logdir)))
        splice(args.readme, render_gpu(report, args.images, args.gpu_logdir), GPU_START, GPU_END)
        if not args.no_screenshots:
            take_gpu_screenshots(args.gpu_logdir, args.images)
    else:
        report = words.build_report(reader.read_runs(reader.local_provider(args.logdir)))
        splice(args.readme, render(report, images=args.images))
        if not args.no_screenshots:
            take_screenshots(args.logdir, args.images)
    print(f"Wrote the tour into {args.readme}" + ("" if args.no_screenshots else f" and screenshots into {args.images}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
