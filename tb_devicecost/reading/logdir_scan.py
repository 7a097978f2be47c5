"""Scanning a log directory: its runs, their event files, and what cannot
be read there.

The scan walks the tree itself rather than trusting TensorBoard's walk:
it opens only regular files named like event files (a FIFO or a device
would block or never end), never follows a link back into the tree (a
loop would never end) nor into `/proc`, `/sys` or `/dev`, walks without
recursion and stops after `MAX_SCAN_DEPTH` levels,
`MAX_SCANNED_DIRECTORIES` directories or `MAX_SCAN_S` seconds (naming
what it left), names runs that are not UTF-8 escaped, and checks each
event file's framing (`records.first_damage`), so the reader knows
what to read and can say, per run, what it skipped (docs/FORMAT.md,
"Damaged data").
"""

import dataclasses
import os
import stat
import time

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
# How deep below the log directory the scan goes (a run is a few levels
# down; a chain of a thousand directories is no log directory).
MAX_SCAN_DEPTH = 100
# Seconds a scan walks before it stops and names what it left (a slow or
# hung network mount must not hold the report or the tab).
MAX_SCAN_S = 20.0
# Never followed by a link: the kernel's trees, which hold no runs, hold
# other processes' working directories (`/proc/<pid>/cwd`) and never end.
SYSTEM_DIRECTORIES = ("/proc", "/sys", "/dev")
# ... but for an ordinary file system under them (shared memory).
_ORDINARY_SYSTEM_PLACES = ("/dev/shm",)
_MAX_LINK_HOPS = 40
_clock = time.monotonic


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
    return path_text("." if relative == os.curdir else relative.replace(os.sep, "/"))


def path_text(path):
    """`path` (a name from the disk) as valid Unicode: bytes that are not
    UTF-8 (held as surrogates, PEP 383) written as `\\xe9`.

    The one escaping of names that are not UTF-8: the scan names runs so,
    so the report (text, Markdown, JSON) and the tab show the same name.
    """
    text = str(path)
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeError:  # A surrogate no byte decodes to.
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


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


def _system_directory(path):
    """The system directory (`SYSTEM_DIRECTORIES`) `path` is in, or `None`."""
    if any(_inside(path, allowed) for allowed in _ORDINARY_SYSTEM_PLACES):
        return None
    return next((top for top in SYSTEM_DIRECTORIES if _inside(path, top)), None)


def _system_target(path):
    """The system directory a link at `path` leads into, at any of its hops
    (`x -> /proc/self/cwd` resolves, through /proc, to a directory outside
    it: the hop says where it went), or `None`."""
    current = path
    for _ in range(_MAX_LINK_HOPS):
        try:
            target = os.readlink(current)
        except OSError:
            break
        current = os.path.normpath(os.path.join(os.path.dirname(current), target))
        found = _system_directory(current)
        if found:
            return found
    return _system_directory(os.path.realpath(path))


def _followed(scan, root, real_root, path, seen):
    """Whether the link to a directory at `path` is followed; if not, the
    reason is noted under its name."""
    name = _run_name(root, path)
    system = _system_target(path)
    if system:
        scan.note(name, f"A symbolic link into {system}: not followed (a system "
                  "directory never holds runs, and reading it would list what is "
                  "not yours or never end).")
        return False
    target = os.path.realpath(path)
    try:
        status = os.stat(path)
    except OSError as error:
        scan.note(name, f"A broken link ({os_error(error)}).")
        return False
    if _inside(target, real_root):
        scan.note(
            name,
            "A symbolic link to a directory inside the log directory "
            f"({_run_name(real_root, target)}): not followed, since its runs "
            "are read where they are (and a link back up would loop).",
        )
    elif _inside(real_root, target):
        scan.note(name, f"A symbolic link to {path_text(target)}, which holds the log "
                  "directory: not followed (it would loop).")
    elif (status.st_dev, status.st_ino) in seen:
        scan.note(name, "A symbolic link to a directory already read: not followed.")
    else:
        seen.add((status.st_dev, status.st_ino))
        return True
    return False


def _stop(scan, root, directory, left, why):
    others = f"; {left:,} more directories were not read either" if left else ""
    scan.note(_run_name(root, directory), f"Not read: {why}{others}.")


def scan_logdir(logdir):
    """Finds every run under `logdir` and what cannot be read there.

    Walks the tree itself, iteratively (a chain of a thousand directories
    costs no recursion), at most `MAX_SCAN_DEPTH` directories deep,
    `MAX_SCANNED_DIRECTORIES` directories and `MAX_SCAN_S` seconds: what is
    left unread is named, with why, never fatal. Only regular files named
    like event files are kept (a FIFO or a device is never opened for
    reading), and a link to a directory is followed only out of the log
    directory, to a directory not seen yet and never into
    `SYSTEM_DIRECTORIES`: a link back into the tree (`loop -> .`,
    `up -> ..`, or to a sibling run) is listed, not followed, since its runs
    are read where they are. Each run is named as TensorBoard names it,
    bytes that are not UTF-8 escaped (`path_text`).

    Raises:
        OSError: when `logdir` itself cannot be listed.
    """
    root = os.path.abspath(logdir)
    scan = LogdirScan(root=root)
    real_root = os.path.realpath(root)
    os.listdir(root)  # Raises when the log directory itself is unreadable.
    deadline_s = _clock() + MAX_SCAN_S
    seen = set()
    # Depth first, in name order: (directory, depth below the log directory).
    pending = [(root, 0)]
    visited = 0
    while pending:
        directory, depth = pending.pop()
        visited += 1
        if visited > MAX_SCANNED_DIRECTORIES:
            _stop(scan, root, directory, len(pending),
                  f"the scan stops after {MAX_SCANNED_DIRECTORIES:,} directories")
            return scan
        if _clock() > deadline_s:
            _stop(scan, root, directory, len(pending),
                  f"the scan stops after {MAX_SCAN_S:g} s (a slow or very large tree)")
            return scan
        run = _run_name(root, directory)
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda entry: entry.name)
        except OSError as error:
            scan.note(run, f"The directory could not be read ({os_error(error)}).")
            continue
        try:
            real = os.stat(directory)
            seen.add((real.st_dev, real.st_ino))
        except OSError:
            pass
        subdirectories, readable = [], []
        for entry in entries:
            try:
                is_directory = entry.is_dir()
                is_link = entry.is_symlink()
            except OSError:
                is_directory = is_link = False
            if is_directory:
                if not is_link or _followed(scan, root, real_root, entry.path, seen):
                    subdirectories.append(entry.path)
                continue
            if not _is_event_file(entry.name):
                continue
            reason = _check_event_file(entry.path)
            name = path_text(entry.name)
            if reason:
                scan.note(run, f"Skipped the event file {name}: it {reason}.")
                continue
            readable.append(entry.path)
            damage = records.first_damage(entry.path)
            if damage:
                scan.note(run, f"The event file {name}: {damage}.")
        if readable:
            scan.runs[run] = readable
            for reason in collisions.collided(readable):
                scan.note(run, reason)
        if subdirectories and depth >= MAX_SCAN_DEPTH:
            scan.note(run, "Not read below this directory: the scan goes at most "
                      f"{MAX_SCAN_DEPTH} directories below the log directory.")
            continue
        pending.extend((path, depth + 1) for path in reversed(subdirectories))
    return scan


def scan_if_local(logdir):
    """`scan_logdir(logdir)` for a local directory, else `None` (a bucket,
    no logdir, or one that cannot be read)."""
    if not logdir or "://" in str(logdir) or not os.path.isdir(logdir):
        return None
    try:
        return scan_logdir(logdir)
    except (OSError, ValueError):  # ValueError: a NUL in the path.
        return None
