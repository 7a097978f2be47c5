"""The `tb-devicecost` command: `tb-devicecost report LOGDIR`,
`tb-devicecost sweep MODULE:BUILDER --data MODULE:FUNC` (`sweep.sweep`) and
`tb-devicecost try MODULE:BUILDER --data MODULE:FUNC --log-dir DIR`
(`trying.try_fixes`).

Prints, for every run under LOGDIR that holds tb-devicecost summaries, where
each step's time went, the verdict with its fixes, and how the runs compare:
as a table for the terminal (default), `--json` (the stable machine
interface, documented in `docs/CLI.md`) or `--markdown`.

Exit status: 0 on success; 2, with a one-line reason on stderr, when LOGDIR
does not exist, holds no run with our data, or an option is wrong (a
sweep's `--log-dir` that is no writable directory is refused before the
first fit); 1, with one line, when a sweep's builder or one of its fits
raised; 130, with one line, on Ctrl-C.

This module reads the command line and the log directory and sets the exit
status; `tb_devicecost.analysis` builds the report and its renderers
(`renderers/`, used by nothing else) write it. The command is the package
itself, so `tb_devicecost.cli:main` stays the console script's entry point
and `python -m tb_devicecost`'s.
"""

import argparse
import importlib
import os
import sys

from tb_devicecost import version
from tb_devicecost import words
from tb_devicecost.cli.renderers import common
from tb_devicecost.cli.renderers import console
from tb_devicecost.cli.renderers import jsonrenderer
from tb_devicecost.cli.renderers import markdown
from tb_devicecost.reading import without_tensorflow

PROG = "tb-devicecost"
_USAGE = "tb-devicecost report LOGDIR [--baseline RUN] [--json | --markdown]"
_TRY_USAGE = (
    "tb-devicecost try MODULE:BUILDER --data MODULE:FUNC --log-dir DIR [--budget S] "
    "[--batch-size N] [--steps N] [--json]"
)
_SWEEP_USAGE = (
    "tb-devicecost sweep MODULE:BUILDER --data MODULE:FUNC [--batch-sizes 16,64,...] "
    "[--devices cpu,gpu] [--log-dir DIR] [--steps N] [--your-batch-size N]"
)


class UsageError(Exception):
    """A wrong command line or log directory: exit 2 with one line."""


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors that `main` turns into exit 2."""

    def error(self, message):
        usage = (_SWEEP_USAGE if self.prog.endswith(" sweep")
                 else _TRY_USAGE if self.prog.endswith(" try") else _USAGE)
        raise UsageError(f"{message} (usage: {usage})")


def _build_parser():
    parser = _Parser(
        prog=PROG,
        description=(
            "Where each Keras training step's time went (data wait, compute, "
            "host overhead, warm-up), with a verdict, fixes and a comparison "
            "of runs."
        ),
    )
    parser.add_argument(
        "--version", action="version", version=f"%(prog)s {version.__version__}"
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    report = commands.add_parser(
        "report",
        help="report every run under a log directory",
        description=(
            "Report every run under LOGDIR (any depth) recorded by "
            "DeviceCostCallback or StepRecorder."
        ),
    )
    report.add_argument(
        "logdir", metavar="LOGDIR", help="the directory given to tensorboard --logdir"
    )
    report.add_argument(
        "--baseline",
        metavar="RUN",
        help=(
            "run to compare the others against, e.g. cpu/train; runs of another "
            "role (validation, evaluation) are compared with its run of that "
            "role (default: each run against the same model trained on the "
            "CPU, the run whose name differs only in the device; runs without "
            "one are not compared)"
        ),
    )
    output = report.add_mutually_exclusive_group()
    output.add_argument(
        "--json", action="store_true", help="print the report as JSON (docs/CLI.md)"
    )
    output.add_argument(
        "--markdown", action="store_true", help="print the report as Markdown"
    )
    report.add_argument(
        "--verbose",
        action="store_true",
        help=(
            "show each finding's details (the arithmetic behind its headline) "
            "in the text and Markdown output; --json always has them"
        ),
    )
    _add_sweep_parser(commands)
    _add_try_parser(commands)
    return parser


def _add_try_parser(commands):
    tried = commands.add_parser(
        "try",
        help="try the fixes a diagnosis advises on your own model, and measure them",
        description=(
            "Fit a model built by MODULE:BUILDER on the input MODULE:FUNC returns "
            "(what you pass to fit), read the findings, try each change they "
            "advise in short interleaved fits, and print what each measured "
            "against the noise between baseline fits (runs under DIR/tried)."
        ),
    )
    tried.add_argument("builder", metavar="MODULE:BUILDER", help="e.g. train:build_model")
    tried.add_argument("--data", metavar="MODULE:FUNC", required=True,
                       help="a function of no arguments returning what you pass to fit")
    tried.add_argument("--log-dir", metavar="DIR", required=True,
                       help="directory for the runs (DIR/tried/<change>)")
    tried.add_argument("--budget", metavar="S", type=float, default=120.0,
                       help="seconds the trials may take after the first fit (default: 120)")
    tried.add_argument("--batch-size", metavar="N", type=int, default=None,
                       help="batch size of arrays data (default: 32)")
    tried.add_argument("--steps", metavar="N", type=int, default=None,
                       help="steps of each fit (default: 100; steps_per_execution: "
                            "whole executions of 8, at least 4)")
    tried.add_argument("--json", action="store_true",
                       help="print the fixes tried as JSON (docs/CLI.md)")


def _add_sweep_parser(commands):
    sweep = commands.add_parser(
        "sweep",
        help="time short fits of a model over batch sizes and devices",
        description=(
            "Fit a model built by MODULE:BUILDER (a function of no arguments "
            "returning a compiled keras.Model) for a few steps at each batch "
            "size on each device, each fit recorded as a run, then print at "
            "which batch size one device overtakes the other. Keras's backend "
            "is KERAS_BACKEND's. The module is imported from the current "
            "directory or sys.path."
        ),
    )
    sweep.add_argument("builder", metavar="MODULE:BUILDER", help="e.g. train:build_model")
    sweep.add_argument(
        "--data",
        metavar="MODULE:FUNC",
        required=True,
        help="a function of no arguments returning (x, y) or x, NumPy arrays",
    )
    sweep.add_argument(
        "--batch-sizes",
        metavar="SIZES",
        default="16,64,256,1024,4096",
        help="comma-separated batch sizes (default: 16,64,256,1024,4096)",
    )
    sweep.add_argument(
        "--devices",
        metavar="DEVICES",
        help="comma-separated devices, e.g. cpu,gpu (default: the CPU and, "
        "when there is one, the GPU)",
    )
    sweep.add_argument(
        "--log-dir", default="logs/sweep", help="the sweep's directory (default: logs/sweep)"
    )
    sweep.add_argument(
        "--steps", type=int, default=50, help="steps per fit, warm-up included (default: 50)"
    )
    sweep.add_argument(
        "--your-batch-size",
        type=int,
        metavar="N",
        help="the batch size you train with, to say which device is faster there",
    )


def main(argv=None):
    """Runs the command; returns the exit status (0, or 2 on a usage error)."""
    parser = _build_parser()
    try:
        try:
            args = parser.parse_args(argv)
        except SystemExit as exit_:  # --help and --version
            return exit_.code if isinstance(exit_.code, int) else 0
        if args.command is None:
            raise UsageError(
                f"choose a command, e.g. 'tb-devicecost report logs' (usage: {_USAGE})"
            )
        if args.command == "sweep":
            return _sweep(args)
        if args.command == "try":
            return _try(args)
        return _report(args)
    except UsageError as error:
        print(f"{PROG}: error: {common.neutral(common.one_line(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C (during a sweep's fits, or a long report): one line, and
        # the shell's status for SIGINT, never a traceback.
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130


def _load_records(logdir):
    """`(records, unread)` of every run under `logdir` (`reader.read_logdir`)."""
    if not os.path.exists(logdir):
        raise UsageError(
            f"log directory {logdir!r} does not exist; pass the directory that "
            "holds your runs (the parent of DeviceCostCallback's log_dir), e.g. 'logs'"
        )
    if not os.path.isdir(logdir):
        raise UsageError(
            f"{logdir!r} is a file, not a log directory; pass the directory that "
            "holds your runs, e.g. 'logs'"
        )
    without_tensorflow.avoid_tensorflow_import()
    from tb_devicecost.reading import reader  # Loads TensorBoard's event reading.

    # The tree is scanned first (no link loop followed, only regular files
    # opened); TensorBoard's loader then reads only what the scan vetted.
    try:
        scan = reader.scan_logdir(logdir)
    except OSError as error:
        raise UsageError(
            f"log directory {logdir!r} could not be read "
            f"({type(error).__name__}: {error.strerror or error})"
        ) from None
    try:
        provider = reader.local_provider(logdir, scan=scan)
    except ValueError as error:
        raise UsageError(str(error)) from None
    return reader.read_logdir(provider, scan)


def _report(args):
    from tb_devicecost.reading import reader  # Loaded by `_load_records`.

    records, unread = _load_records(args.logdir)
    if not records and all(item["reason"] == reader.NO_DATA_REASON for item in unread):
        raise UsageError(
            f"no run under {args.logdir!r} holds tb-devicecost data; record one "
            "with model.fit(..., callbacks=[tb_devicecost.DeviceCostCallback("
            "'logs/cpu')]) and pass 'logs'"
        )
    try:
        report = words.build_report(records, baseline=args.baseline, unread=unread)
    except ValueError as error:
        raise UsageError(common.one_line(error)) from None
    if not report["runs"]:
        reasons = "; ".join(
            f"{item['run']}: {item['reason']}" for item in report["skipped"]
        )
        raise UsageError(
            f"no run under {args.logdir!r} could be reported ({reasons})"
        )
    if args.json:
        for item in report["skipped"]:
            print(
                f"{PROG}: skipped {common.neutral(item['run'])}: "
                f"{common.neutral(item['reason'])}",
                file=sys.stderr,
            )
        text = jsonrenderer.render(report)
    elif args.markdown:
        text = markdown.render(report, verbose=args.verbose)
    else:
        text = console.render(
            report, args.logdir, ascii_only=not _shows(console.BARS), verbose=args.verbose
        )
    _write(text)
    return 0


def _callable(spec, option):
    """The function named by `MODULE:NAME`, imported from the current
    directory or `sys.path`."""
    module_name, _, name = spec.partition(":")
    if not module_name or not name.isidentifier():
        raise UsageError(
            f"{option} must name a function as MODULE:NAME, e.g. train:build_model; "
            f"got {spec!r} (usage: {_SWEEP_USAGE})"
        )
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name and module_name.startswith(error.name):
            raise UsageError(
                f"{option}: no module {module_name!r} in the current directory "
                "or on sys.path"
            ) from None
        raise UsageError(f"{option}: importing {module_name!r} failed: {_brief_error(error)}") from None
    except Exception as error:  # pylint: disable=broad-except
        raise UsageError(f"{option}: importing {module_name!r} failed: {_brief_error(error)}") from None
    function = getattr(module, name, None)
    if not callable(function):
        raise UsageError(f"{option}: module {module_name!r} has no function {name!r}")
    return function


def _brief_error(error):
    return f"{type(error).__name__}: {common.one_line(error)}"


def _comma_list(text, option, convert=str):
    try:
        values = [convert(item.strip()) for item in text.split(",") if item.strip()]
    except ValueError:
        values = []
    if not values:
        raise UsageError(
            f"{option} must be a comma-separated list, e.g. "
            f"{'16,256,4096' if convert is int else 'cpu,gpu'}; got {text!r}"
        )
    return values


def _sweep(args):
    build_model = _callable(args.builder, "MODULE:BUILDER")
    make_data = _callable(args.data, "--data")
    batch_sizes = _comma_list(args.batch_sizes, "--batch-sizes", int)
    devices = None if args.devices is None else _comma_list(args.devices, "--devices")
    _check_log_dir(args.log_dir)
    try:
        data = make_data()
    except Exception as error:  # pylint: disable=broad-except
        print(f"{PROG}: error: {args.data}() raised {common.neutral(_brief_error(error))}", file=sys.stderr)
        return 1
    x, y = data if isinstance(data, tuple) and len(data) == 2 else (data, None)
    from tb_devicecost.recording import batch_sweep  # Imports Keras.

    try:
        batch_sweep.sweep(
            build_model,
            x,
            y,
            batch_sizes=tuple(batch_sizes),
            devices=devices,
            log_dir=args.log_dir,
            steps=args.steps,
            your_batch_size=args.your_batch_size,
        )
    except batch_sweep.SweepArgumentError as error:
        raise UsageError(common.one_line(error)) from None
    except Exception as error:  # pylint: disable=broad-except
        print(f"{PROG}: error: the sweep failed: {common.neutral(_brief_error(error))}", file=sys.stderr)
        return 1
    records, unread = _load_records(args.log_dir)
    report = words.build_report(records, unread=unread)
    _write(console.render_sweeps(report["sweeps"], args.log_dir, ascii_only=not _shows(console.BARS)))
    return 0


def _try(args):
    build_model = _callable(args.builder, "MODULE:BUILDER")
    make_data = _callable(args.data, "--data")
    _check_log_dir(args.log_dir, "runs of the trials, e.g. logs/try")
    from tb_devicecost.cli import trying  # pylint: disable=import-outside-toplevel
    from tb_devicecost.recording import fix_trials  # Imports Keras.

    try:
        result = trying.try_fixes(
            build_model, make_data, log_dir=args.log_dir, batch_size=args.batch_size,
            steps=args.steps, budget_s=args.budget)
    except (fix_trials.TrialArgumentError, ValueError) as error:
        raise UsageError(common.one_line(error)) from None
    except Exception as error:  # pylint: disable=broad-except
        print(f"{PROG}: error: the trials failed: {common.neutral(_brief_error(error))}",
              file=sys.stderr)
        return 1
    report = result["report"]
    for change, why in sorted(result["failed"].items()):
        print(f"{PROG}: {change} could not be tried: {common.neutral(common.one_line(why))}",
              file=sys.stderr)
    if args.json:
        import json  # pylint: disable=import-outside-toplevel

        _write(json.dumps({"log_dir": result["log_dir"], "advised": result["advised"],
                           "failed": result["failed"], "fixes_tried": report["fixes_tried"]},
                          indent=2, sort_keys=True, allow_nan=False))
    else:
        _write(console.render_fixes_tried(report["fixes_tried"], ascii_only=not _shows(console.BARS)))
    return 0


def _check_log_dir(log_dir, what="the sweep's runs, e.g. logs/sweep"):
    """Before the first fit: `log_dir` is, or can be made, a directory we
    can write into. Otherwise every fit would run with recording off."""
    if os.path.exists(log_dir) and not os.path.isdir(log_dir):
        raise UsageError(f"--log-dir {log_dir!r} is a file, not a directory; pass a "
                         f"directory for {what}")
    try:
        os.makedirs(log_dir, exist_ok=True)
    except OSError as error:
        raise UsageError(f"--log-dir {log_dir!r} cannot be made a directory "
                         f"({type(error).__name__}: {error.strerror or error})") from None
    if not os.access(log_dir, os.W_OK | os.X_OK):
        raise UsageError(f"--log-dir {log_dir!r} cannot be written to")


def _write(text):
    try:
        sys.stdout.write(text if text.endswith("\n") else text + "\n")
        sys.stdout.flush()
    except UnicodeEncodeError:
        encoding = sys.stdout.encoding or "ascii"
        sys.stdout.write(text.encode(encoding, errors="replace").decode(encoding))
        sys.stdout.write("\n")


def _shows(characters, stream=None):
    """Whether `stream` (default: stdout) can write `characters`."""
    encoding = getattr(stream or sys.stdout, "encoding", None) or "ascii"
    try:
        "".join(characters).encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True
