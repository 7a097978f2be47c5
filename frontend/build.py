"""Copies the frontend sources into `tb_devicecost/static/`.

The frontend is plain ES modules and CSS with no bundler, so "building" is a
copy: `frontend/<path>` becomes `tb_devicecost/static/<path>`, byte for byte.
The static copy is what the package ships and the plugin serves.

Usage:
    python frontend/build.py          # update tb_devicecost/static/
    python frontend/build.py --check  # exit 1, naming the files that differ,
                                      # when the static copy is out of date
"""

import argparse
import os
import sys

FRONTEND_DIR = os.path.dirname(os.path.abspath(__file__))
REPO_DIR = os.path.dirname(FRONTEND_DIR)
STATIC_DIR = os.path.join(REPO_DIR, "tb_devicecost", "static")

# Only these kinds of file are part of the frontend.
SOURCE_SUFFIXES = (".js", ".css", ".svg", ".png", ".json", ".html")


def _relative_files(root):
    """Sorted relative paths (with "/") of frontend files under `root`."""
    found = []
    if not os.path.isdir(root):
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(
            d for d in dirnames if not d.startswith(".") and d != "__pycache__"
        )
        for name in filenames:
            if name.startswith(".") or not name.endswith(SOURCE_SUFFIXES):
                continue
            path = os.path.relpath(os.path.join(dirpath, name), root)
            found.append(path.replace(os.sep, "/"))
    return sorted(found)


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def differences(src=FRONTEND_DIR, dst=STATIC_DIR):
    """Returns [(relative path, "missing" | "differs" | "extra")]."""
    sources = _relative_files(src)
    copies = set(_relative_files(dst))
    out = []
    for rel in sources:
        target = os.path.join(dst, *rel.split("/"))
        if rel not in copies:
            out.append((rel, "missing"))
        elif _read(os.path.join(src, *rel.split("/"))) != _read(target):
            out.append((rel, "differs"))
    for rel in sorted(copies - set(sources)):
        out.append((rel, "extra"))
    return out


def build(src=FRONTEND_DIR, dst=STATIC_DIR):
    """Makes `dst` an exact copy of the frontend files in `src`."""
    changed = differences(src, dst)
    for rel, kind in changed:
        target = os.path.join(dst, *rel.split("/"))
        if kind == "extra":
            os.remove(target)
            continue
        os.makedirs(os.path.dirname(target), exist_ok=True)
        data = _read(os.path.join(src, *rel.split("/")))
        with open(target, "wb") as f:
            f.write(data)
    # Drop directories that the removals left empty.
    for dirpath, _, _ in sorted(os.walk(dst), key=lambda t: -len(t[0])):
        if dirpath != dst and not os.listdir(dirpath):
            os.rmdir(dirpath)
    return changed


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python frontend/build.py",
        description="Copy frontend/ into tb_devicecost/static/.",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="change nothing; exit 1 if tb_devicecost/static/ is out of date",
    )
    args = parser.parse_args(argv)
    static_rel = os.path.relpath(STATIC_DIR, REPO_DIR)
    if args.check:
        diffs = differences()
        if not diffs:
            print(f"{static_rel} is up to date.")
            return 0
        print(f"{static_rel} is out of date:", file=sys.stderr)
        for rel, kind in diffs:
            print(f"  {kind:8} {rel}", file=sys.stderr)
        print("Run `python frontend/build.py` to update it.", file=sys.stderr)
        return 1
    changed = build()
    if changed:
        for rel, kind in changed:
            action = "removed" if kind == "extra" else "copied"
            print(f"{action} {rel}")
    else:
        print(f"{static_rel} was already up to date.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
