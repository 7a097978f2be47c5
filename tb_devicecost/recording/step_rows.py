"""The rows of a run's steps, kept in step order until they are written.

A synchronous step is closed on the training thread as a record of its
clock reads (`StepAccounting.begin_step`: one list filled and appended a
step); the rows of all the steps closed since the last write are worked
out together in NumPy (`closed_block`), when rows are needed. Groups of
asynchronous steps arrive as rows already (`StepRows.add_block`).
"""

import numpy as np

from tb_devicecost.recording.aggregate import ROW_STEP
from tb_devicecost.recording.aggregate import ROW_WARMUP
from tb_devicecost.recording.aggregate import step_block

# The fields of a step's record, open (`StepAccounting.begin_step` creates
# it) and closed: seconds on the accounting's clock, `None` where not known.
(RECORD_START, RECORD_FETCHED, RECORD_COMPUTE_START, RECORD_COMPUTED, RECORD_BATCH,
 RECORD_STEPS, RECORD_END, RECORD_EXCLUDED, RECORD_WARMUP) = range(9)


class StepRows:
    """The steps not written yet: closed records, then blocks of rows.

    `closed` is the list the training thread appends each closed step's
    record to (the same list for the accounting's life); `settle` turns
    the records into rows after every block before them, so rows stay in
    step order whichever way they came.
    """

    def __init__(self):
        self.closed = []
        self._blocks = []
        self.block_rows = 0
        # Steps whose components `watched` returns (a range), and theirs.
        self._watched = None
        self._watched_rows = {}

    def __len__(self):
        return len(self.closed) + self.block_rows

    def settle(self, after, wall_offset, aggregate):
        """Rows for the closed records, the last of them the global step
        before `after`; their excluded time and steady fetches go to
        `aggregate` (a `RunAggregate`)."""
        if not self.closed:
            return
        block, excluded_s, fetch_ms = closed_block(self.closed, after, wall_offset)
        self.closed.clear()
        aggregate.measurement_total += excluded_s
        aggregate.add_fetches(fetch_ms)
        self.add_block(block)

    def add_block(self, block):
        """Adds rows (an array), the steps after every row so far; the
        closed records must be settled first."""
        if self._watched is not None and len(block):
            steps = block[:, ROW_STEP]
            inside = (steps >= self._watched.start) & (steps < self._watched.stop)
            for row in block[inside]:
                self._watched_rows[int(row[ROW_STEP])] = tuple(row)
        self._blocks.append(block)
        self.block_rows += len(block)

    def take(self):
        """Every row added (settled), as one array in step order, or `None`;
        they are no longer kept."""
        if not self._blocks:
            return None
        blocks, self._blocks, self.block_rows = self._blocks, [], 0
        return np.concatenate(blocks) if len(blocks) > 1 else blocks[0]

    def clear(self):
        """Forgets every step not written."""
        self.closed.clear()
        self._blocks, self.block_rows = [], 0

    def watch(self, steps):
        """Keeps the components of `steps` (a range) for `watched`."""
        self._watched, self._watched_rows = steps, {}

    def watched(self):
        """`[{"step", "data_wait_ms", "compute_ms", "host_overhead_ms"}]` of
        the watched steps settled so far."""
        return [
            {
                "step": step,
                "data_wait_ms": row[2],
                "compute_ms": row[3],
                "host_overhead_ms": row[4],
            }
            for step, row in sorted(self._watched_rows.items())
        ]


def closed_block(records, after, wall_offset):
    """Rows of the steps `StepAccounting.begin_step` closed one by one,
    worked out together (NumPy, once per write, not once a step).

    Args:
        records: The closed steps' records, `[start, fetched, compute
            start, compute end or None, batch size or None, steps, end,
            excluded, warm-up]` each (seconds on the accounting's clock;
            `excluded`: our own measurements' time in the step; `steps`:
            an execution's steps, each given an equal part of it).
        after: The global step after the last row.
        wall_offset: Seconds from the accounting's clock to Unix time.

    Returns:
        `(block, excluded_s, fetch_ms)`: the rows, the seconds of our own
        measurements left out of them, and the fetches (ms) of the steady
        one-step records.
    """
    table = np.array(records, dtype=np.float64)  # `None` reads NaN.
    (start, fetched, compute_start, computed, batch, steps, end, excluded,
     warmup) = table.T
    data_wait_s = fetched - start
    compute_s = np.where(np.isnan(computed), 0.0, computed - compute_start)
    host_overhead_s = np.maximum(0.0, end - start - data_wait_s - compute_s)
    # Our own measurements are kept out of the host overhead they ran in.
    excluded_s = np.minimum(excluded, host_overhead_s)
    host_overhead_s -= excluded_s
    fetch_ms = data_wait_s[(steps == 1) & (warmup == 0.0)] * 1e3
    counts = np.maximum(steps, 0).astype(np.int64)
    first = after - int(counts.sum())
    if (counts == 1).all():
        block = step_block(first, start + wall_offset, data_wait_s, compute_s,
                           host_overhead_s, batch)
        block[:, ROW_WARMUP] = warmup
        return block, float(excluded_s.sum()), fetch_ms
    # An execution of several steps: as many rows, an equal part each; one
    # that ran none (the end of the data) has no row.
    excluded_s[counts == 0] = 0.0
    index = np.repeat(np.arange(len(counts)), counts)
    rank = np.arange(len(index)) - np.repeat(np.cumsum(counts) - counts, counts)
    share = counts[index]
    wall_s = (data_wait_s + compute_s + host_overhead_s)[index]
    block = step_block(first, start[index] + rank * wall_s / share + wall_offset,
                       data_wait_s[index] / share, compute_s[index] / share,
                       host_overhead_s[index] / share, batch[index])
    block[:, ROW_WARMUP] = warmup[index]
    return block, float(excluded_s.sum()), fetch_ms
