"""What the console and Markdown renderers share: the words around figures."""

from tb_devicecost import formatting


def one_line(text):
    """`text` with every run of whitespace (newlines too) as one space."""
    return " ".join(str(text).split())


def verdict_text(run):
    """`input_bound`, or `warmup_dominated (steady state: compute_bound)`."""
    text = run["verdict"] or "no verdict"
    if run["steady_verdict"] and run["steady_verdict"] != run["verdict"]:
        text += f" (steady state: {run['steady_verdict']})"
    return text


def is_baseline(row):
    """Whether a comparison row is a baseline (a run compared with itself)."""
    return row.get("is_baseline", row["run"] == row.get("against"))


def speedup_text(row):
    """`0.46x`, or `baseline`."""
    return "baseline" if is_baseline(row) else formatting.fmt_speedup(row["speedup"])


def row_deltas(row):
    """Whether a comparison row is per 1000 samples, and its deltas so."""
    per_sample = row["basis"] == "samples_per_s"
    return per_sample, row["delta_per_1000_samples_ms" if per_sample else "delta_ms"]
