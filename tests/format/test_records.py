"""Batched TFRecord framing: byte for byte what TensorBoard's writer writes."""

import io
import os

import numpy as np
import pytest
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c
from tensorboard.summary.writer.record_writer import RecordWriter

from tb_devicecost.format import records


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


def test_the_report_reads_the_records_tensorboards_reader_reads(tmp_path):
    """`local_data.iter_records` yields what TensorBoard's own record reader
    yields, and stops where it stops: at a record whose checksum fails, and
    at a record cut short at the end."""
    from tensorboard.compat.tensorflow_stub import errors
    from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import PyRecordReader_New

    from tb_devicecost.reading import local_data

    def tensorboards(path):
        reader = PyRecordReader_New(str(path))
        payloads = []
        while True:
            try:
                reader.GetNext()
            except (errors.OutOfRangeError, errors.DataLossError):
                return payloads
            payloads.append(reader.record())

    payloads = [os.urandom(n) for n in (5, 120, 0, 3000, 9, 64)]
    data = records.frame_records(payloads)
    damaged = bytearray(data)
    damaged[len(data) // 2] ^= 0x04  # inside the 3000-byte record
    for name, content in (("whole", data), ("damaged", bytes(damaged)),
                          ("cut", data[:-7])):
        path = tmp_path / name
        path.write_bytes(content)
        with open(path, "rb") as handle:
            ours = [payload for _, payload in local_data.iter_records(handle)]
        assert ours == tensorboards(path), name
        # The same from a stream whose size is unknown.
        assert [p for _, p in local_data.iter_records(io.BytesIO(content))] == ours, name
    assert [p for _, p in local_data.iter_records(io.BytesIO(bytes(damaged)))] == payloads[:3]
    assert [p for _, p in local_data.iter_records(io.BytesIO(data[:-7]))] == payloads[:-1]


def test_framed_reading_tells_damage_from_an_end():
    """`read_framed`, the one reader of the framing (the report's records
    and the damage check both use it): a record whose checksum fails is
    yielded as `(its offset, None)`; a record cut short simply ends the
    file; offsets count from where reading started."""
    payloads = [b"a" * 5, b"b" * 120, b"c" * 9]
    data = records.frame_records(payloads)
    offsets = [0, 16 + 5, 16 + 5 + 16 + 120]
    assert list(records.read_framed(io.BytesIO(data))) == list(zip(offsets, payloads))
    damaged = bytearray(data)
    damaged[offsets[1] + 12 + 60] ^= 0x01  # inside the second record's data
    assert list(records.read_framed(io.BytesIO(bytes(damaged)))) == [
        (0, payloads[0]), (offsets[1], None)
    ]
    damaged = bytearray(data)
    damaged[offsets[2] + 2] ^= 0x01  # the third record's length
    assert list(records.read_framed(io.BytesIO(bytes(damaged))))[-1] == (offsets[2], None)
    cut = data[:-3]
    assert list(records.read_framed(io.BytesIO(cut), size=len(cut))) == list(zip(offsets, payloads))[:2]
    stream = io.BytesIO(data)
    stream.seek(offsets[1])
    assert list(records.read_framed(stream, offsets[1])) == list(zip(offsets, payloads))[1:]
