"""Hand-made runs through the analysis, and what to check of the result."""

import json

from tb_devicecost import words

from tests.support.documents import gpu_placement
from tests.support.documents import make_aggregate
from tests.support.documents import make_record


def analyzed_run(data_wait, compute, host, name="cpu/train", **options):
    """`analyze_run` of a run whose steady steps took these times (ms).

    `warmup_ms`, `batch_size`, `spikes`, `fetch_floor_ms` and `status`
    go to `make_aggregate`, other options to `make_record`.
    """
    aggregate_options = {
        key: options.pop(key)
        for key in ("warmup_ms", "batch_size", "spikes", "fetch_floor_ms", "status")
        if key in options
    }
    aggregate = make_aggregate(data_wait, compute, host, **aggregate_options)
    return words.analyze_run(make_record(name, aggregate=aggregate, **options))


def analyzed_gpu_run(trace=None, batch_size=512, **placement):
    """`analyze_run` of `gpu/train`: short steps on GPU:0 (`gpu_placement`)."""
    aggregate = make_aggregate(0.02, 1.0, 0.01, batch_size=batch_size)
    record = make_record(
        "gpu/train", aggregate=aggregate, placement=gpu_placement(**placement),
        trace=trace,
    )
    return words.analyze_run(record)


def finding_of(result, finding_id):
    """The run object's finding `finding_id`, or `None`; never two."""
    matches = [f for f in result["findings"] if f["id"] == finding_id]
    assert len(matches) <= 1, result["findings"]
    return matches[0] if matches else None


def assert_json_clean(value):
    """Fails unless `value` is JSON without NaN or infinities."""
    json.dumps(value, allow_nan=False)
