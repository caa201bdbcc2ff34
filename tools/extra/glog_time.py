"""Timestamps of glog lines, for Caffe-style training logs.

glog writes "I1124 10:00:00.123456  1234 solver.cpp:12] message" (0.5 and
older: no year) or "I20261124 10:00:00.123456 1234 solver.cpp:12] message"
(0.6 and newer). The thread id may be missing, padded or wide. Lines
without a year get one inferred: the first is in the year of glog's "Log file
created at: YYYY/MM/DD" header when the log has one; otherwise the last is in
the year of the file's modification time (the year before, if its date lies
after that day). Each December -> January step is a new year.
"""
import datetime
import re

_PREFIX = re.compile(
    r"^[IWEF](?P<year>\d{4})?(?P<month>\d{2})(?P<day>\d{2})\s+"
    r"(?P<hour>\d{1,2}):(?P<minute>\d{2}):(?P<second>\d{2})(?:\.(?P<fraction>\d{1,9}))?"
    # thread id and file:line, each optional, up to the closing bracket
    r"(?:(?:\s+[^\s\]]+){0,3}\]\s?|\s+)?")


class GlogLine:
    """One log line: its message (the text after the glog prefix, or the
    whole line when it has none) and the prefix's date fields (None if none)."""

    def __init__(self, text):
        match = _PREFIX.match(text)
        self.fields = match.groupdict() if match else None
        self.message = text[match.end():] if match else text


_CREATED = re.compile(r"^Log file created at: (\d{4})/(\d{2})/(\d{2})")


def _first_year(yearless, created, file_time):
    """The year of the first year-less line."""
    first = (int(yearless[0]["month"]), int(yearless[0]["day"]))
    if created is not None:
        year, month, day = created
        return year + 1 if first < (month, day) else year
    last = (int(yearless[-1]["month"]), int(yearless[-1]["day"]))
    rollovers = sum(1 for prev, cur in zip(yearless, yearless[1:])
                    if int(prev["month"]) == 12 and int(cur["month"]) == 1)
    year = file_time.year - 1 if last > (file_time.month, file_time.day) else file_time.year
    return year - rollovers


def _years(fields_list, created, file_time):
    """The year of each dated line: its own, or the inferred one."""
    yearless = [f for f in fields_list if f is not None and f["year"] is None]
    year = _first_year(yearless, created, file_time) if yearless else None
    years, prev_month = [], None
    for fields in fields_list:
        if fields is None:
            years.append(None)
        elif fields["year"] is not None:
            years.append(int(fields["year"]))
        else:
            month = int(fields["month"])
            if prev_month == 12 and month == 1:
                year += 1
            prev_month = month
            years.append(year)
    return years


def timestamps(lines, file_time):
    """The datetime of each GlogLine in `lines` (None for a line without a
    glog prefix); `file_time` (the file's modification time, a datetime)
    anchors year-less lines in a log without glog's header."""
    created = next((tuple(int(g) for g in m.groups()) for m in
                    (_CREATED.match(line.message) for line in lines) if m), None)
    fields_list = [line.fields for line in lines]
    years = _years(fields_list, created, file_time)
    result = []
    for fields, year in zip(fields_list, years):
        if fields is None:
            result.append(None)
            continue
        fraction = (fields["fraction"] or "0")[:6].ljust(6, "0")
        try:
            result.append(datetime.datetime(
                year, int(fields["month"]), int(fields["day"]), int(fields["hour"]),
                int(fields["minute"]), int(fields["second"]), int(fraction)))
        except ValueError:  # not a date after all (e.g. month 13): no timestamp
            result.append(None)
    return result
