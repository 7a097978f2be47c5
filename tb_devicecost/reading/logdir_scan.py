"""Scanning a log directory: its runs, their event files, and what cannot
be read there.

The scan walks the tree itself rather than trusting TensorBoard's walk:
it opens only regular files named like event files (a FIFO or a device
would block or never end), never follows a link back into the tree (a
loop would never end), stops after `MAX_SCANNED_DIRECTORIES`, and checks
each event file's framing (`records.first_damage`), so the reader knows
what to read and can say, per run, what it skipped (docs/FORMAT.md,
"Damaged data").
"""

import dataclasses
import os
import stat

from tb_devicecost.format import records
from tb_devicecost.reading import collisions

# The reason given for a run whose event files hold nothing of ours.
NO_DATA_REASON = (
    "Its event files hold no readable tb-devicecost summaries (only other "
    "summaries, or damaged files)."
)
# Directories a scan looks at before it stops (a link to `/` must not make
# the report walk the whole machine).
MAX_SCANNED_DIRECTORIES = 100_000


@dataclasses.dataclass
class LogdirScan:
    """What is in a log directory, found without opening anything but
    regular event files and without following a link into a loop.

    Attributes:
        root: The log directory.
        runs: `{run: [paths]}`: each run directory (named as TensorBoard
            names runs) with the readable regular event files directly in
            it, in name order.
        problems: `{directory: [reason, ...]}`: what was not read there (an
            unreadable directory, an event file that cannot be opened or is
            not a regular file, a link not followed), as sentences.
    """

    root: str
    runs: dict = dataclasses.field(default_factory=dict)
    problems: dict = dataclasses.field(default_factory=dict)

    def note(self, run, reason):
        self.problems.setdefault(run, []).append(reason)

    def unread(self, reported):
        """`[{"run", "reason"}]`: each directory with nothing reported.

        Args:
            reported: Run names that have a record (their problems go to
                the record instead, see `reader.read_logdir`).
        """
        items = []
        for run in sorted(set(self.runs) | set(self.problems)):
            if run in reported:
                continue
            reasons = list(self.problems.get(run, ()))
            if self.runs.get(run):
                reasons.insert(0, NO_DATA_REASON)
            items.append({"run": run, "reason": " ".join(reasons)})
        return items


def _run_name(root, directory):
    prefix = root.rstrip(os.sep) + os.sep
    if directory.startswith(prefix) and os.sep + os.pardir not in directory:
        # The common case (a directory under the root), without relpath's
        # normalisation: the scan names every directory it walks.
        relative = directory[len(prefix):].rstrip(os.sep) or os.curdir
    else:
        relative = os.path.relpath(directory, root)
    return "." if relative == os.curdir else relative.replace(os.sep, "/")


def os_error(error):
    """An `OSError` in brief, e.g. `PermissionError: Permission denied`."""
    return f"{type(error).__name__}: {error.strerror or error}"


def _is_event_file(name):
    """TensorBoard's rule (`io_wrapper.IsSummaryEventsFile`)."""
    return "tfevents" in name and not name.endswith(".profile-empty")


def _check_event_file(path):
    """Why an event file cannot be read, or `None` when it is a readable
    regular file. Opening never blocks (a FIFO opens at once this way)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        descriptor = os.open(path, flags)
    except OSError as error:
        return f"could not be opened ({os_error(error)})"
    try:
        mode = os.fstat(descriptor).st_mode
    except OSError as error:
        return f"could not be read ({os_error(error)})"
    finally:
        os.close(descriptor)
    if not stat.S_ISREG(mode):
        kind = (
            "a FIFO" if stat.S_ISFIFO(mode)
            else "a directory" if stat.S_ISDIR(mode)
            else "a socket" if stat.S_ISSOCK(mode)
            else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "not a regular file"
        )
        return f"is {kind}, not a regular file: not read"
    return None



def _inside(path, directory):
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def scan_logdir(logdir):
    """Finds every run under `logdir` and what cannot be read there.

    Walks the tree itself: only regular files named like event files are
    kept (a FIFO or a device is never opened for reading), and a link to a
    directory is followed only out of the log directory, to a directory
    not seen yet: a link back into the tree (`loop -> .`, `up -> ..`, or to
    a sibling run) is listed, not followed, since its runs are read where
    they are. Each run is named as TensorBoard names it.

    Raises:
        OSError: when `logdir` itself cannot be listed.
    """
    root = os.path.abspath(logdir)
    scan = LogdirScan(root=root)
    real_root = os.path.realpath(root)
    os.listdir(root)  # Raises when the log directory itself is unreadable.
    seen = set()
    pending = [root]
    visited = 0
    while pending:
        top = pending.pop(0)

        def unreadable(error, top=top):
            where = error.filename or top
            scan.note(
                _run_name(root, where),
                f"The directory could not be read ({os_error(error)}).",
            )

        for directory, subdirectories, files in os.walk(top, onerror=unreadable):
            visited += 1
            if visited > MAX_SCANNED_DIRECTORIES:
                scan.note(
                    _run_name(root, directory),
                    f"Not read: the scan stops after {MAX_SCANNED_DIRECTORIES:,} "
                    "directories.",
                )
                return scan
            run = _run_name(root, directory)
            try:
                real = os.stat(directory)
                seen.add((real.st_dev, real.st_ino))
            except OSError:
                pass
            kept = []
            for name in sorted(subdirectories):
                path = os.path.join(directory, name)
                if not os.path.islink(path):
                    kept.append(name)
                    continue
                target = os.path.realpath(path)
                try:
                    status = os.stat(path)
                except OSError as error:
                    scan.note(_run_name(root, path), f"A broken link ({os_error(error)}).")
                    continue
                if _inside(target, real_root):
                    scan.note(
                        _run_name(root, path),
                        "A symbolic link to a directory inside the log directory "
                        f"({_run_name(real_root, target)}): not followed, since its runs "
                        "are read where they are (and a link back up would loop).",
                    )
                elif _inside(real_root, target):
                    scan.note(
                        _run_name(root, path),
                        f"A symbolic link to {target}, which holds the log directory: "
                        "not followed (it would loop).",
                    )
                elif (status.st_dev, status.st_ino) in seen:
                    scan.note(
                        _run_name(root, path),
                        "A symbolic link to a directory already read: not followed.",
                    )
                else:
                    seen.add((status.st_dev, status.st_ino))
                    pending.append(path)
            subdirectories[:] = kept
            readable = []
            for name in sorted(files):
                if not _is_event_file(name):
                    continue
                path = os.path.join(directory, name)
                reason = _check_event_file(path)
                if reason:
                    scan.note(run, f"Skipped the event file {name}: it {reason}.")
                    continue
                readable.append(path)
                damage = records.first_damage(path)
                if damage:
                    scan.note(run, f"The event file {name}: {damage}.")
            if readable:
                scan.runs[run] = readable
                for reason in collisions.collided(readable):
                    scan.note(run, reason)
    return scan


def scan_if_local(logdir):
    """`scan_logdir(logdir)` for a local directory, else `None` (a bucket,
    no logdir, or one that cannot be read)."""
    if not logdir or "://" in str(logdir) or not os.path.isdir(logdir):
        return None
    try:
        return scan_logdir(logdir)
    except OSError:
        return None
