#!/usr/bin/env python3
"""check_tensorboard.py — reads a TensorBoard log dir written by ctorch's
ct_summary_writer with the tensorboard package itself and checks its scalars.

ctorch writes event files without a protobuf library (src/io/tensorboard*.c),
so this is the independent check that TensorBoard really reads them. It runs
three readers over every events file in LOGDIR:
  1. tensorboard's own TFRecord reader (PyRecordReader_New), strictly: any
     length or data CRC mismatch or truncated record fails (TensorBoard's
     loaders would silently stop at such a record);
  2. the Event protobuf parser (tensorboard.compat.proto.event_pb2): the first
     event must be file_version "brain.Event:2", every later one a summary of
     simple_value scalars;
  3. EventAccumulator, the loader behind TensorBoard's scalar dashboard.
and compares the scalars with the expectations:

  check_tensorboard.py LOGDIR --expect 'Loss/train,10,0.25' [--expect ...]
  check_tensorboard.py LOGDIR --expect-file expected.tsv   (tag<TAB>step<TAB>value lines)

Values are compared after rounding the expected value to float32 (what the
file stores), so they must match exactly (NaN matches NaN). With --exact
(the default when expectations are given) the file must hold no other
scalars. Exit status: 0 ok, 1 mismatch, 2 usage error, 77 when tensorboard
is not importable (a skip for ctest: ctorch does not depend on it).
"""
import argparse
import glob
import math
import os
import struct
import sys

try:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.compat.proto import event_pb2
    from tensorboard.compat.tensorflow_stub import errors as tb_errors
    from tensorboard.compat.tensorflow_stub import pywrap_tensorflow
except Exception as exc:  # noqa: BLE001 - any import failure means "not available"
    print(f"SKIP: tensorboard is not importable ({exc})")
    sys.exit(77)


def as_float32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def same_value(got, expected):
    if math.isnan(expected):
        return math.isnan(got)
    return got == as_float32(expected)


def parse_expectation(text, where):
    parts = text.rsplit("\t" if "\t" in text else ",", 2)
    if len(parts) != 3:
        raise ValueError(f"{where}: expected 'tag,step,value', got {text!r}")
    tag, step, value = parts
    return tag, int(step), float(value)


def read_records_strictly(path):
    """Every record's bytes, checking both CRCs of each (raises on damage)."""
    reader = pywrap_tensorflow.PyRecordReader_New(path)
    records = []
    while True:
        try:
            reader.GetNext()
        except tb_errors.OutOfRangeError:
            return records
        records.append(reader.record())


def check_events(path, problems):
    """Parses the events of one file; returns {(tag, step): [values]}."""
    try:
        records = read_records_strictly(path)
    except tb_errors.DataLossError as exc:
        problems.append(f"{path}: {exc.message if hasattr(exc, 'message') else exc}")
        return {}
    scalars = {}
    for i, data in enumerate(records):
        event = event_pb2.Event.FromString(data)
        if event.wall_time <= 0:
            problems.append(f"{path}: event {i} has wall_time {event.wall_time}")
        if i == 0:
            if event.WhichOneof("what") != "file_version" or event.file_version != "brain.Event:2":
                problems.append(f"{path}: the first event is not file_version 'brain.Event:2': {event}")
            continue
        if event.WhichOneof("what") != "summary":
            problems.append(f"{path}: event {i} is not a summary: {event}")
            continue
        for value in event.summary.value:
            if value.WhichOneof("value") != "simple_value":
                problems.append(f"{path}: event {i} tag {value.tag!r} is not a simple_value")
                continue
            scalars.setdefault((value.tag, event.step), []).append(value.simple_value)
    print(f"{path}: {len(records)} records, CRCs ok, {sum(map(len, scalars.values()))} scalars")
    return scalars


def check_accumulator(logdir, expected, problems):
    acc = EventAccumulator(logdir, size_guidance={"scalars": 0})
    acc.Reload()
    tags = set(acc.Tags().get("scalars", []))
    for tag, step, value in expected:
        if tag not in tags:
            problems.append(f"EventAccumulator: no scalar tag {tag!r} (has {sorted(tags)})")
            continue
        found = [e.value for e in acc.Scalars(tag) if e.step == step]
        if not any(same_value(v, value) for v in found):
            problems.append(f"EventAccumulator: {tag!r} step {step}: expected {value!r}, found {found}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logdir")
    ap.add_argument("--expect", action="append", default=[], metavar="TAG,STEP,VALUE")
    ap.add_argument("--expect-file", metavar="TSV")
    ap.add_argument("--allow-extra", action="store_true", help="other scalars may be present")
    args = ap.parse_args()

    try:
        expected = [parse_expectation(e, "--expect") for e in args.expect]
        if args.expect_file:
            with open(args.expect_file, encoding="utf-8") as f:
                expected += [parse_expectation(line.rstrip("\n"), f"{args.expect_file}:{n}")
                             for n, line in enumerate(f, 1) if line.strip()]
    except (OSError, ValueError) as exc:
        print(f"usage error: {exc}")
        return 2

    files = sorted(glob.glob(os.path.join(args.logdir, "*tfevents*")))
    if not files:
        print(f"FAIL: no event files in {args.logdir}")
        return 1
    problems = []
    found = {}
    for path in files:
        for key, values in check_events(path, problems).items():
            found.setdefault(key, []).extend(values)

    for tag, step, value in expected:
        values = found.get((tag, step), [])
        if not any(same_value(v, value) for v in values):
            problems.append(f"{tag!r} step {step}: expected {value!r} (float32 "
                            f"{as_float32(value)!r}), found {values}")
    if expected and not args.allow_extra:
        wanted = {(tag, step) for tag, step, _ in expected}
        extra = sorted(k for k in found if k not in wanted)
        if extra:
            problems.append(f"unexpected scalars: {extra[:10]}")
        dupes = sorted(k for k, v in found.items() if len(v) > 1)
        if dupes:
            problems.append(f"scalars written more than once: {dupes[:10]}")
    check_accumulator(args.logdir, expected, problems)

    for p in problems:
        print("FAIL:", p)
    if problems:
        return 1
    print(f"OK: {len(expected)} expected scalars found in {len(files)} file(s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
