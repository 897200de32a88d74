#!/usr/bin/env python3
# Copyright (c) 2026 The asio_sync authors
#
# Distributed under the Boost Software License, Version 1.0. (See accompanying
# file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

"""Runs two builds of one Google Benchmark program side by side and compares them row by row.

Usage: bench/side_by_side.py BEFORE AFTER [--rounds N] [--repetitions N] [--filter REGEX]

BEFORE and AFTER are the same benchmark built from two commits (say, bench_uncontended of the main
branch and of a change). The rounds alternate their order (A B, B A, ...) so that a drift of the
machine's load weighs on both alike. For each row it prints the median and the fastest sample of
each side and the change of the fastest: on a machine shared with other work, the load only ever
slows a sample down, so the fastest samples are the ones to compare, and the rows that run no code
of the project (an atomic pair, a post round trip) show how far the noise goes.
"""

import argparse
import json
import statistics
import subprocess

DEFAULT_FILTER = ("BM_atomic_pair|BM_try_acquire_release|BM_try_acquire_permit|BM_post_round_trip|"
                  "BM_async_acquire_release_callback<asio_sync|BM_async_acquire_release_coroutine<asio_sync")


def run(binary, args):
    out = subprocess.run([binary, f"--benchmark_filter={args.filter}",
                          f"--benchmark_repetitions={args.repetitions}", "--benchmark_min_time=0.2",
                          "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    samples = {}
    for row in json.loads(out)["benchmarks"]:
        if row.get("run_type") == "iteration":
            samples.setdefault(row["run_name"], []).append(row["cpu_time"])
    return samples


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--filter", default=DEFAULT_FILTER)
    args = parser.parse_args()

    sides = {args.before: {}, args.after: {}}
    for r in range(args.rounds):
        order = (args.before, args.after) if r % 2 == 0 else (args.after, args.before)
        for binary in order:
            for name, samples in run(binary, args).items():
                sides[binary].setdefault(name, []).extend(samples)

    before, after = sides[args.before], sides[args.after]
    print(f"{'row':58} {'before med':>10} {'min':>7} {'after med':>10} {'min':>7} {'change':>7}")
    for name in before:
        b, a = before[name], after.get(name, [])
        if not a:
            continue
        change = (min(a) / min(b) - 1) * 100
        print(f"{name:58} {statistics.median(b):10.2f} {min(b):7.2f} {statistics.median(a):10.2f} "
              f"{min(a):7.2f} {change:+6.1f}%")


if __name__ == "__main__":
    main()
