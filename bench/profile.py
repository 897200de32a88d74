#!/usr/bin/env python3
# Copyright (c) 2026 The asio_sync authors
#
# Distributed under the Boost Software License, Version 1.0. (See accompanying
# file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

"""Where the time of one benchmark goes: a profile bucketed by what the code does.

Runs one Google Benchmark (a binary of bench/, built with -g so that every sample maps to a source
line, inlined code included) and puts each sample in one bucket by the innermost source line it
hit (see BUCKETS): the executor hop, outstanding-work counting, type-erased executor calls, the
primitive's internal lock, its cancellation slot, allocation, coroutine resumption, the
primitive's own algorithm and operation object, the benchmark's task body.

By default the samples are time: `perf record -e cpu-clock` on the machine's threads, and the
figures are CPU ns per operation (the share of samples times the benchmark's wall-clock ns/op
times the CPU time the process used per second of its life). With --instructions they are the
instructions executed, counted by `valgrind --tool=callgrind` over one batch (valgrind runs one
thread at a time, so two threads behave as on one loaded core), divided by the operations of the
batch, process start-up included: repeatable on a loaded machine, but blind to what an atomic
operation or a cache miss costs.

Usage: bench/profile.py BINARY FILTER [--instructions] [--runs N] [--min-time SECONDS]
                        [--frequency HZ] [--lines N] [--markdown]
"""

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

# (bucket, pattern on "file:line" or, for code without line information, "dso symbol"), first
# match wins. Lines of Asio's executor and scheduler that only count outstanding work are their
# own bucket: copies of work-tracking executors touch a counter every thread of the context shares.
# The line ranges (Boost 1.81's, and those of the cancellation handler in start_acquire.hpp and
# completion.hpp) follow the sources they name.
BUCKETS = [
    ("work count", r"^scheduler\.hpp:(9[0-9]|10[0-9])$|^io_context\.hpp:(66[6-9]|67[0-4]|68[8-9]|69[0-3]|110[0-9]|111[0-3])$"),
    ("internal lock", r"^adaptive_mutex\.hpp:"),
    ("cancellation slot", r"^cancellation_(signal|state)\.hpp:|^start_acquire\.hpp:([4-7][0-9])$|^completion\.hpp:3[89]$"),
    ("allocation", r"^(thread_info_base|recycling_allocator|handler_alloc_helpers|new_allocator)\.h(pp)?:|"
                   r"^(malloc|arena)\.c:|malloc|_int_free|cfree|operator new|operator delete"),
    ("type-erased executor", r"^(any_executor|execute|prefer|require|query|any_io_executor)\.hpp:|strcmp|type_info"),
    ("hop: executor queue, wake-up", r"^(scheduler|scheduler_operation|executor_op|op_queue|conditionally_enabled_\w+|"
                                     r"posix_\w+|eventfd_select_interrupter|epoll_reactor|io_context|executor_function|"
                                     r"call_stack|thread_context|scheduler_thread_info|work_dispatcher|"
                                     r"bind_handler)\.(hpp|ipp):|"
                                     r"pthread_|futex|\[kernel|syscall|lll_"),
    ("resumption: coroutine", r"^(awaitable|co_spawn|use_awaitable|async_result|deferred|this_coro|coroutine|"
                              r"acquire_awaitable|barrier_arrival)(\.hpp)?:"),
    ("algorithm: core", r"^(semaphore_core|waiter_list|event_core|barrier_core|latch_count|gate_count)\.hpp:"),
    ("operation: ours", r"^(acquire_op|submit|handler_work|completion|start_acquire|grant|plain_grant|semaphore|"
                        r"mutex|shared_mutex|condition_variable|condition_wait|event_wait|barrier|timed_acquire_op)"
                        r"\.hpp:"),
    ("task body", r"\.cpp:"),
]
OTHER = "other (std::, unresolved)"


def bucket_of(srcline, dso, symbol):
    for name, pattern in BUCKETS:
        if re.search(pattern, srcline) or (srcline.startswith("??") and re.search(pattern, f"{dso} {symbol}")):
            return name
    if "kernel" in dso:
        return "hop: executor queue, wake-up"
    return OTHER


def run(binary, benchmark_filter, min_time, frequency, data):
    command = ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(frequency), "-o", data, "--", binary,
               f"--benchmark_filter={benchmark_filter}", f"--benchmark_min_time={min_time}",
               "--benchmark_format=json"]
    started = time.monotonic()
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    wall = time.monotonic() - started
    runs = [b for b in json.loads(output)["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    if len(runs) != 1:
        sys.exit(f"profile: the filter must select exactly one benchmark, it selected {len(runs)}")
    unit = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}[runs[0]["time_unit"]]
    return runs[0]["name"], runs[0]["real_time"] * unit, wall


def run_callgrind(binary, benchmark_filter, data):
    """One batch under callgrind: (name, operations)."""
    command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={data}", binary,
               f"--benchmark_filter={benchmark_filter}", "--benchmark_min_time=0.000001",
               "--benchmark_format=json"]
    output = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    runs = [b for b in json.loads(output)["benchmarks"] if b.get("run_type", "iteration") == "iteration"]
    if len(runs) != 1:
        sys.exit(f"profile: the filter must select exactly one benchmark, it selected {len(runs)}")
    return runs[0]["name"], runs[0]["iterations"]


def callgrind_lines(data):
    """Self instructions per (file:line, object, function), inlined code at its own file."""
    names = {}

    def name(value):
        # "(id) name" defines a compressed name, "(id)" refers to one.
        match = re.match(r"\((\d+)\)\s*(.*)", value)
        if not match:
            return value
        if match.group(2):
            names[match.group(1)] = match.group(2)
        return names.get(match.group(1), "?")

    costs = {}
    obj = fn = file = ""
    skip_next = False
    with open(data) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line[0].isalpha():
                key, _, value = line.partition("=")
                if key == "ob":
                    obj = name(value)
                elif key == "fn":
                    fn = name(value)
                elif key in ("fl", "fi", "fe"):
                    file = name(value)
                elif key in ("cob", "cfi", "cfl", "cfn"):
                    name(value)
                elif key == "calls":
                    skip_next = True  # the next cost line is the call's inclusive cost
                continue
            if skip_next:
                skip_next = False
                continue
            fields = line.split()
            if len(fields) < 2 or not fields[0].isdigit():
                continue
            where = f"{os.path.basename(file)}:{fields[0]}" if file != "???" else "??:0"
            key = (where, os.path.basename(obj), fn)
            costs[key] = costs.get(key, 0) + int(fields[1])
    return [(count, where, obj, fn) for (where, obj, fn), count in costs.items()]


def samples(data):
    report = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "srcline,dso,sym",
                             "--stdio", "-g", "none", "-n", "-t", "|"],
                            check=True, capture_output=True, text=True).stdout
    for line in report.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        fields = [f.strip() for f in line.split("|")]
        if len(fields) < 5:
            continue
        yield int(fields[1]), fields[2], fields[3], fields[4]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("binary")
    parser.add_argument("filter", help="a --benchmark_filter that selects one benchmark")
    parser.add_argument("--instructions", action="store_true", help="count instructions with callgrind")
    parser.add_argument("--min-time", type=float, default=2.0)
    parser.add_argument("--frequency", type=int, default=2000)
    parser.add_argument("--lines", type=int, default=0, help="also list the N source lines with most samples")
    parser.add_argument("--runs", type=int, default=1, help="profile N times; print the median of each figure")
    parser.add_argument("--markdown", action="store_true", help="one table row: name, ns/op, then the buckets")
    args = parser.parse_args()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)

    order = [name for name, _ in BUCKETS] + [OTHER]
    figures = []  # per run: wall ns/op (or None), per-op total, {bucket: per op}
    lines = {}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as folder:
            data = os.path.join(folder, "profile.data")
            if args.instructions:
                name, operations = run_callgrind(args.binary, args.filter, data)
                rows = callgrind_lines(data)
            else:
                name, wall_ns_per_op, wall = run(args.binary, args.filter, args.min_time, args.frequency, data)
                rows = list(samples(data))
        total = sum(count for count, *_ in rows)
        if args.instructions:
            wall_ns_per_op, per_op = None, total / operations
        else:
            per_op = wall_ns_per_op * total / args.frequency / wall
        buckets = {}
        for count, srcline, dso, symbol in rows:
            key = bucket_of(srcline, dso, symbol)
            buckets[key] = buckets.get(key, 0) + count * per_op / total
            lines[srcline] = lines.get(srcline, 0) + count * per_op / total / args.runs
        figures.append((wall_ns_per_op, per_op, buckets))

    def median(values):
        return statistics.median(values)

    per_op = median([f[1] for f in figures])
    cells = {b: median([f[2].get(b, 0) for f in figures]) for b in order}
    unit = "instructions/op" if args.instructions else "CPU ns/op"
    if args.markdown:
        first = f"{per_op:.0f}" if args.instructions else f"{median([f[0] for f in figures]):.0f} | {per_op:.0f}"
        print(f"| {name} | {first} | " + " | ".join(f"{cells[b]:.0f}" for b in order) + " |")
        return
    if args.instructions:
        print(f"{name}: {per_op:.0f} instructions/op (median of {args.runs})")
    else:
        print(f"{name}: {median([f[0] for f in figures]):.1f} ns/op wall clock, {per_op:.1f} CPU ns/op "
              f"(medians of {args.runs})")
    for b in order:
        print(f"  {b:32} {100 * cells[b] / per_op:5.1f}%  {cells[b]:7.1f} {unit}")
    for srcline, value in sorted(lines.items(), key=lambda item: -item[1])[:args.lines]:
        print(f"    {srcline:40} {value:7.1f} {unit}")


if __name__ == "__main__":
    main()
