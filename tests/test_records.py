"""Batched TFRecord framing: byte for byte what TensorBoard's writer writes."""

import io
import os

import numpy as np
import pytest
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
from tensorboard.summary.writer.record_writer import RecordWriter

from tb_devicecost import records


def test_checksums_match_tensorboards_crc32c():
    rng = np.random.default_rng(0)
    for length in (0, 1, 3, 8, 64, 121, 1000):
        data = rng.integers(0, 256, length, dtype=np.uint8).tobytes()
        assert records.masked_crc32c(data) == masked_crc32c(data)


def test_batch_checksums_match_one_by_one():
    rows = np.random.default_rng(1).integers(0, 256, (50, 37), dtype=np.uint8)
    expected = [masked_crc32c(row.tobytes()) for row in rows]
    assert records.masked_crc32c_rows(rows).tolist() == expected


@pytest.mark.parametrize("batched", [True, False])
def test_framing_is_identical_to_tensorboards_record_writer(batched):
    """Both checksum paths: the C library's and the numpy fallback's."""
    payloads = [os.urandom(n) for n in (5, 5, 9, 120, 5, 0, 9, 3000)]
    buffer = io.BytesIO()
    writer = RecordWriter(buffer)
    for payload in payloads:
        writer.write(payload)
    assert records.frame_records(payloads, batched=batched) == buffer.getvalue()
