"""TFRecord framing for event files.

An event file is a sequence of records: the data's length (uint64), the
masked CRC-32C of that length, the data, the masked CRC-32C of the data.
TensorBoard's `EventFileWriter` frames each record with a pure-Python
CRC-32C (about 13 µs per 120-byte event) in a writer thread that competes
with the training loop for the GIL: about 25 µs per step in all, 3% of a
1 ms step. Here the checksums come from `google-crc32c` (C, well under
1 µs per event, and per JSON document), written synchronously, no thread.
Where that library cannot load, the checksums of a batch of equal-length
records are computed together with numpy, one byte column at a time (about
2 µs per event, but milliseconds for one long document).

Reading goes through `read_framed`, and `first_damage` says where a file's
framing first fails, for the log directory's scan (`logdir_scan`).
"""

import os
import struct

import numpy as np

try:
    import google_crc32c

    _C_CRC32C = google_crc32c.implementation == "c"
except ImportError:  # pragma: no cover - the fallback is tested directly
    google_crc32c = None
    _C_CRC32C = False

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


def _mask(crc):
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def masked_crc32c(data):
    """Masked CRC-32C of one byte string."""
    if _C_CRC32C:
        return _mask(google_crc32c.value(data))
    return int(masked_crc32c_rows(np.frombuffer(data, dtype=np.uint8)[None, :])[0])


def frame_records(payloads, batched=None):
    """Frames serialised records as TFRecords, in order, as one bytes blob.

    Args:
        batched: Use the numpy batch checksums (`True`) or the C library
            (`False`); defaults to the C library when it loaded.
    """
    if batched is None:
        batched = not _C_CRC32C
    if not batched:
        framed = []
        for payload in payloads:
            header = struct.pack("<Q", len(payload))
            framed.append(header)
            framed.append(struct.pack("<I", masked_crc32c(header)))
            framed.append(payload)
            framed.append(struct.pack("<I", masked_crc32c(payload)))
        return b"".join(framed)
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


def read_framed(handle, offset=0, size=None):
    """`(offset, payload)` of each whole record of an event file, read from
    the binary file `handle` (positioned at `offset`) one record at a time.

    Stops at the end of the file or at a record cut short (a file being
    written ends so). At a record whose length or data checksum fails it
    yields `(offset, None)` and stops: that is damage, not an end.

    Args:
        handle: A binary file.
        offset: Where `handle` is positioned: the offsets yielded count
            from it.
        size: The file's size, where known: a length that runs past it is
            a record cut short, and no buffer of that length is read.
    """
    while True:
        header = handle.read(12)
        if len(header) < 12:
            return
        (length,) = struct.unpack_from("<Q", header)
        (length_crc,) = struct.unpack_from("<I", header, 8)
        if masked_crc32c(header[:8]) != length_crc:
            yield offset, None
            return
        if size is not None and offset + 16 + length > size:
            return
        data = handle.read(length + 4)
        if len(data) < length + 4:
            return
        payload = data[:length]
        (payload_crc,) = struct.unpack_from("<I", data, length)
        if masked_crc32c(payload) != payload_crc:
            yield offset, None
            return
        yield offset, payload
        offset += 16 + length


# Damage checks.

# Per event file: (identity, bytes checked, damage found). A file that
# grows is checked from where the last check stopped.
_CHECKED = {}


def first_damage(path):
    """Where an event file's framing first fails, in words, or `None`.

    Walks the file's TFRecords, checking both checksums of each (C CRC-32C:
    gigabytes a second). A record cut short at the end is not damage (a
    file being written ends so); a checksum that fails is. TensorBoard's
    Python loader, and so `tb-devicecost report`, reads a file up to such a
    record; its default loader skips the record and reads on.
    """
    try:
        status = os.stat(path)
    except OSError:
        return None
    identity = (status.st_dev, status.st_ino)
    checked, damage = 0, None
    cached = _CHECKED.get(path)
    if cached and cached[0] == identity and cached[1] <= status.st_size:
        checked, damage = cached[1], cached[2]
    if damage is None and checked < status.st_size:
        try:
            with open(path, "rb") as handle:
                handle.seek(checked)
                for offset, payload in read_framed(handle, checked, status.st_size):
                    if payload is None:
                        damage = offset
                        break
                    checked = offset + 16 + len(payload)
        except OSError:
            return None
        _CHECKED[path] = (identity, checked, damage)
    if damage is None:
        return None
    return (
        f"it holds a damaged record at byte {damage:,} (a checksum fails): "
        "what follows in the file is not read (TensorBoard's default loader "
        "skips the record and reads on)"
    )
