#!/usr/bin/python3
"""Parses a Caffe or dlcaffe training log into two CSV files, as Caffe's
tools/extra/parse_log.py does: LOG.train and LOG.test in OUTDIR, with the
columns NumIters, Seconds, LearningRate and then one per net output.

Usage: parse_log.py LOG OUTDIR [--delimiter ,] [--verbose]

- Seconds count from the "Solving ..." line (Caffe's start), or from the
  first timestamped line when there is none. glog prefixes with and without
  the year are read; runs across midnight and New Year count on.
- LearningRate is the rate logged for the row's own iteration ("Iteration N,
  lr = X"); before the first one, the first logged rate (Caffe's fix for the
  first row). "nan" when the log has none.
- Several test nets: one LOG.test row per test pass; each output column is
  named "net<K>/<output>" (e.g. net0/accuracy, net1/accuracy). With a single
  test net the columns keep Caffe's bare output names.
- An output name logged twice in one pass (a blob of several values) gets
  "<output>[i]" columns. A cell with no value (an interrupted test) is empty.
- dlcaffe's lines ("Iteration N (x iter/s, ...)", "    Speed: ... ETA ...")
  and any other line are read without harm.
"""
import argparse
import collections
import csv
import datetime
import math
import os
import re

from glog_time import GlogLine, timestamps
from user_error import UserError, run_main

_NUMBER = r"([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?(?:nan|inf)(?:inity)?)"
_ITERATION = re.compile(r"Iteration (\d+)")
_TESTING = re.compile(r"Testing net \(#(\d+)\)")
_LEARNING_RATE = re.compile(r"(?<!\w)lr = " + _NUMBER, re.IGNORECASE)
_TRAIN_OUTPUT = re.compile(r"Train net output #(\d+): (\S+) = " + _NUMBER, re.IGNORECASE)
_TEST_OUTPUT = re.compile(r"Test net output #(\d+): (\S+) = " + _NUMBER, re.IGNORECASE)
_START = "Solving "

FIXED_COLUMNS = ("NumIters", "Seconds", "LearningRate")

Column = collections.namedtuple("Column", "header output net")
Column.__doc__ = """One CSV column of net outputs: its header, the output name
as logged, and the test net's index (None for the train net)."""


class Table:
    """Rows (dicts keyed by header) under FIXED_COLUMNS + output columns."""

    def __init__(self, columns, rows):
        self.columns = columns
        self.rows = rows

    @property
    def headers(self):
        return list(FIXED_COLUMNS) + [c.header for c in self.columns]


class _Row:
    def __init__(self, iteration, seconds):
        self.iteration = iteration
        self.seconds = seconds
        self.values = {}  # (net, output index) -> (name, value)


def _read_lines(path):
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError as error:
        raise UserError("cannot read log %s: %s" % (path, error.strerror))
    return [GlogLine(line) for line in text.splitlines()]


def _seconds_since_start(lines, times):
    """Seconds of each line since the start line, NaN where unknown."""
    known = [t for t in times if t is not None]
    start = next((t for line, t in zip(lines, times)
                  if t is not None and _START in line.message), known[0] if known else None)
    return [(t - start).total_seconds() if t is not None and start is not None else math.nan
            for t in times]


def _columns(rows, several_nets):
    """Columns in (net, output index) order, named as the module doc says."""
    names = {}
    for row in rows:
        for key, (name, _) in row.values.items():
            names.setdefault(key, name)
    keys = sorted(names, key=lambda k: (-1 if k[0] is None else k[0], k[1]))
    per_net_name = collections.Counter((k[0], names[k]) for k in keys)
    seen = collections.Counter()
    columns = []
    for key in keys:
        net, name = key[0], names[key]
        header = name
        if per_net_name[(net, name)] > 1:
            header = "%s[%d]" % (name, seen[(net, name)])
            seen[(net, name)] += 1
        if several_nets:
            header = "net%d/%s" % (net, header)
        columns.append((key, Column(header, name, net)))
    return columns


def _learning_rate_at(iteration, rates):
    """The rate logged for `iteration` or the last one before it; else the first."""
    before = [rate for it, rate in rates if it <= iteration]
    if before:
        return before[-1]
    return rates[0][1] if rates else math.nan


def _table(rows, rates, several_nets=False):
    keyed_columns = _columns(rows, several_nets)
    dict_rows = []
    for row in rows:
        d = collections.OrderedDict([("NumIters", row.iteration), ("Seconds", row.seconds),
                                     ("LearningRate", _learning_rate_at(row.iteration, rates))])
        for key, column in keyed_columns:
            value = row.values.get(key)
            d[column.header] = value[1] if value else None
        dict_rows.append(d)
    return Table([c for _, c in keyed_columns], dict_rows)


def parse_log_tables(path):
    """(train Table, test Table) of the log at `path`; a UserError if it has no
    "Iteration N" line at all (not a training log)."""
    lines = _read_lines(path)
    try:
        file_time = datetime.datetime.fromtimestamp(os.path.getmtime(path))
    except OSError:
        file_time = datetime.datetime.now()
    seconds = _seconds_since_start(lines, timestamps(lines, file_time))

    iteration, test_net = None, 0
    rates = []  # (iteration, rate) in log order
    train_rows, test_rows = [], []
    test_nets = set()

    def add_output(rows, net, match, line_seconds):
        key = (net, int(match.group(1)))
        # A new row at a new iteration, or when this output repeats (a new pass).
        if not rows or rows[-1].iteration != iteration or key in rows[-1].values:
            rows.append(_Row(iteration, line_seconds))
        rows[-1].values[key] = (match.group(2), float(match.group(3)))

    for line, line_seconds in zip(lines, seconds):
        message = line.message
        match = _ITERATION.search(message)
        if match:
            iteration = int(match.group(1))
        if iteration is None:
            continue  # Caffe's parser also starts at the first iteration
        match = _TESTING.search(message)
        if match:
            test_net = int(match.group(1))
            test_nets.add(test_net)
            continue
        match = _LEARNING_RATE.search(message)
        if match:
            rates.append((iteration, float(match.group(1))))
        match = _TRAIN_OUTPUT.search(message)
        if match:
            add_output(train_rows, None, match, line_seconds)
        match = _TEST_OUTPUT.search(message)
        if match:
            add_output(test_rows, test_net, match, line_seconds)
    if iteration is None:
        raise UserError("%s has no training iterations (no \"Iteration N\" line)" % path)
    return _table(train_rows, rates), _table(test_rows, rates, several_nets=len(test_nets) > 1)


def parse_log(path):
    """Caffe's interface: (train_dict_list, test_dict_list)."""
    train, test = parse_log_tables(path)
    return train.rows, test.rows


def write_csv(path, table, delimiter=",", verbose=False):
    def cell(value):
        return "" if value is None else value

    with open(path, "w", newline="") as f:
        writer = csv.writer(f, delimiter=delimiter, lineterminator="\n")
        writer.writerow(table.headers)
        for row in table.rows:
            writer.writerow([cell(row[h]) for h in table.headers])
    if verbose:
        print("Wrote %s" % path)


def save_csv_files(log_path, output_dir, train, test, delimiter=",", verbose=False):
    """Writes OUTDIR/<log name>.train and .test."""
    base = os.path.join(output_dir, os.path.basename(log_path))
    write_csv(base + ".train", train, delimiter, verbose)
    write_csv(base + ".test", test, delimiter, verbose)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("logfile_path", help="path to the training log")
    parser.add_argument("output_dir", help="directory for the CSV files")
    parser.add_argument("--verbose", action="store_true",
                        help="print some extra info (e.g. output file names)")
    parser.add_argument("--delimiter", default=",",
                        help="column delimiter in the output files (default: '%(default)s')")
    args = parser.parse_args()
    if len(args.delimiter) != 1:
        raise UserError("--delimiter must be one character, got '%s'" % args.delimiter)
    if not os.path.isdir(args.output_dir):
        raise UserError("output directory %s does not exist" % args.output_dir)
    train, test = parse_log_tables(args.logfile_path)
    save_csv_files(args.logfile_path, args.output_dir, train, test, args.delimiter, args.verbose)


if __name__ == "__main__":
    run_main(main)
