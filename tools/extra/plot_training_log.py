#!/usr/bin/python3
"""Plots the net outputs of Caffe or dlcaffe training logs (loss, accuracy,
...) against iterations and against seconds; several logs share each plot
for comparison, with the log file names in the legend.

Usage: plot_training_log.py OUT.png|svg|pdf LOG [LOG ...]
           [--outputs train:loss,test:accuracy] [--x iterations|seconds|both]
           [--size 1200x900] [--dpi 100] [--title TEXT]

--outputs lists outputs by name; "train:" or "test:" in front picks one
table, a bare name both. LearningRate may be named too. Default: every
output of the logs. Each output is one row of plots: against iterations on
the left, against seconds on the right (--x picks one). The picture has
exactly --size pixels (default: 1200 wide, 300 per row).
"""
import argparse
import math
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402 (the backend comes first)

from parse_log import parse_log_tables  # noqa: E402
from user_error import UserError, run_main  # noqa: E402

FORMATS = (".png", ".svg", ".pdf")
TABLES = ("train", "test")
X_AXES = {"iterations": ("NumIters", "iterations"), "seconds": ("Seconds", "seconds")}
NET_STYLES = ("-", "--", ":", "-.")


class Series:
    """One line: a table column of one log."""

    def __init__(self, label, xs, ys, style):
        self.label, self.xs, self.ys, self.style = label, xs, ys, style


class LogData:
    """A parsed log: its legend name and its train and test tables."""

    def __init__(self, path, name):
        self.name = name
        train, test = parse_log_tables(path)
        self.tables = {"train": train, "test": test}

    def outputs(self, table):
        """The output names of a table's columns."""
        return [c.output for c in self.tables[table].columns]

    def series(self, table, output, x_column):
        """The lines of `output` in `table` against `x_column`."""
        t = self.tables[table]
        several_nets = len({c.net for c in t.columns}) > 1
        if output == "LearningRate":
            columns = [("LearningRate", None)]
        else:
            columns = [(c.header, c.net) for c in t.columns if c.output == output]
        result = []
        for header, net in columns:
            # Cells without a value, and seconds of a log without timestamps, are left out.
            points = [(row[x_column], row[header]) for row in t.rows
                      if row[header] is not None and not math.isnan(row[x_column])]
            if not points:
                continue
            label = self.name + (" (test net #%d)" % net if several_nets else "")
            style = NET_STYLES[(net or 0) % len(NET_STYLES)]
            result.append(Series(label, [p[0] for p in points], [p[1] for p in points], style))
        return result


def legend_names(paths):
    """File names, or the paths as given where two logs share a file name."""
    names = [os.path.basename(p) for p in paths]
    return [p if names.count(n) > 1 else n for p, n in zip(paths, names)]


def parse_size(text):
    try:
        width, height = (int(v) for v in text.lower().split("x"))
        if width > 0 and height > 0:
            return width, height
    except ValueError:
        pass
    raise UserError("--size must be WIDTHxHEIGHT in pixels, e.g. 1200x900, got '%s'" % text)


def selected_outputs(logs, wanted):
    """(table, output) pairs to plot: the --outputs list, or all outputs."""
    available = []
    for table in TABLES:
        for log in logs:
            for output in log.outputs(table):
                if (table, output) not in available:
                    available.append((table, output))
    if not wanted:
        if not available:
            raise UserError("the logs have no train or test net outputs to plot")
        return available
    selectable = available + [("train", "LearningRate"), ("test", "LearningRate")]
    result = []
    for item in (w.strip() for w in wanted.split(",") if w.strip()):
        table, _, name = item.rpartition(":")
        if table not in ("",) + TABLES:
            raise UserError("'%s': the table must be train: or test:" % item)
        matches = [(t, o) for t, o in selectable
                   if o == name and (table == "" or t == table)]
        if name == "LearningRate" and table == "":
            matches = [("train", "LearningRate")]
        if not matches:
            raise UserError("no output '%s' in the logs; they have: %s" % (
                item, ", ".join("%s:%s" % pair for pair in available)))
        result.extend(m for m in matches if m not in result)
    return result


def plot(logs, outputs, x_axes, size, dpi, title):
    figure, axes = plt.subplots(len(outputs), len(x_axes), squeeze=False,
                                figsize=(size[0] / dpi, size[1] / dpi), dpi=dpi)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for row, (table, output) in enumerate(outputs):
        for col, x_axis in enumerate(x_axes):
            ax = axes[row][col]
            x_column, x_label = X_AXES[x_axis]
            for i, log in enumerate(logs):
                for s in log.series(table, output, x_column):
                    ax.plot(s.xs, s.ys, s.style, color=colors[i % len(colors)], label=s.label,
                            marker="o" if table == "test" else None, markersize=3)
            ax.set_title("%s %s" % (table, output), fontsize="medium")
            ax.set_xlabel(x_label)
            ax.grid(True, alpha=0.3)
            if ax.lines:
                ax.legend(fontsize="small")
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    return figure


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", help="picture to write: .png, .svg or .pdf")
    parser.add_argument("logs", nargs="+", help="training logs")
    parser.add_argument("--outputs", default="", help="outputs to plot, comma-separated")
    parser.add_argument("--x", choices=("iterations", "seconds", "both"), default="both")
    parser.add_argument("--size", help="WIDTHxHEIGHT in pixels")
    parser.add_argument("--dpi", type=int, default=100)
    parser.add_argument("--title", default="")
    args = parser.parse_args()
    extension = os.path.splitext(args.out)[1].lower()
    if extension not in FORMATS:
        raise UserError("%s: the picture must end in %s" % (args.out, ", ".join(FORMATS)))
    if args.dpi <= 0:
        raise UserError("--dpi must be positive")
    for path in args.logs:
        if not os.path.isfile(path):
            raise UserError("log %s does not exist" % path)
    logs = [LogData(p, n) for p, n in zip(args.logs, legend_names(args.logs))]
    outputs = selected_outputs(logs, args.outputs)
    x_axes = ["iterations", "seconds"] if args.x == "both" else [args.x]
    size = parse_size(args.size) if args.size else (1200 if len(x_axes) > 1 else 700,
                                                    300 * len(outputs))
    figure = plot(logs, outputs, x_axes, size, args.dpi, args.title)
    try:
        figure.savefig(args.out, dpi=args.dpi)
    except OSError as error:
        raise UserError("cannot write %s: %s" % (args.out, error.strerror))


if __name__ == "__main__":
    run_main(main)
