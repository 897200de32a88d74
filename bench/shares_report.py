#!/usr/bin/env python3
# Copyright (c) 2026 The asio_sync authors
#
# Distributed under the Boost Software License, Version 1.0. (See accompanying
# file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

"""Turns the output of one bench_shares run (bench/shares.cpp) into a report and a chart.

Reads the Google Benchmark JSON file of the run and writes the goals of the leased share, each
met or missed against references of the same run, the tables of every fleet, and a chart of fleet
throughput against the number of processes (drawn by gnuplot).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

KINDS = {0: "local asio_sync::semaphore (each process its own, 32 / processes)",
         1: "redis::share_semaphore (leased share)",
         2: "redis::semaphore (a call per acquire and per release)"}
PROCESSES = [1, 2, 4, 8]
LATENCY = [("try_acquire + release", "BM_try_pair"),
           ("async_acquire + release, callback chain", "BM_callback_pair"),
           ("async_acquire + release, coroutine loop", "BM_coroutine_pair")]
LATENCY_PREFIXES = tuple(function + "<" for _, function in LATENCY)
REFRESH_MS = 200


def load(path):
    """(medians of the latency rows in ns, counters of the fleet rows by name prefix)."""
    with open(path) as f:
        data = json.load(f)
    latency, fleets, rounds = {}, {}, {}
    for entry in data["benchmarks"]:
        name = entry["run_name"]
        if entry.get("error_occurred"):
            fleets[name.split("/iterations")[0]] = {"error": entry.get("error_message", "error")}
            continue
        if name.startswith(LATENCY_PREFIXES):
            latency.setdefault(name.split("/round:")[0], []).append(entry["cpu_time"])  # ns
        elif entry.get("run_type") == "iteration" and "/round:" in name:
            rounds.setdefault(name.split("/round:")[0], []).append(entry)
        elif entry.get("run_type") == "iteration" and "/iterations:1" in name:
            fleets[name.split("/iterations")[0]] = entry
        elif name.startswith("BM_ping"):
            latency["BM_ping"] = entry["real_time"] * 1e3  # us -> ns
    for name, values in latency.items():
        if isinstance(values, list):
            latency[name] = statistics.median(values)
    # The round with the median throughput stands for its row; the others give its spread.
    for name, entries in rounds.items():
        done = sorted((e for e in entries if not e.get("error_occurred")), key=lambda e: e["pairs_per_s"])
        if not done:
            fleets[name] = {"error": entries[0].get("error_message", "error")}
            continue
        fleets[name] = dict(done[len(done) // 2], spread=f"{done[0]['pairs_per_s']:,.0f} to {done[-1]['pairs_per_s']:,.0f}")
    return latency, fleets


def number(value, form="{:,.0f}"):
    return "n/a" if value is None else form.format(value)


def verdict(met):
    return "n/a" if met is None else ("met" if met else "missed")


def counter(fleets, name, key):
    entry = fleets.get(name)
    return None if entry is None or "error" in entry else entry.get(key)


def goals(latency, fleets):
    fast = counter(fleets, "BM_contended/share", "pairs_per_s")
    holders = counter(fleets, "BM_contended/share", "max_holders")
    per_1000 = counter(fleets, "BM_contended/share", "redis_commands_per_1000")
    usec_fast = counter(fleets, "BM_contended/share", "redis_usec_per_s")
    usec_slow = counter(fleets, "BM_contended/share_slow", "redis_usec_per_s")
    slow_rate = counter(fleets, "BM_contended/share_slow", "pairs_per_s")
    load_ratio = usec_fast / usec_slow if usec_fast is not None and usec_slow else None
    ping_ms = latency.get("BM_ping", 0) / 1e6
    rows = [
        ("fleet pairs/s, 8 processes, 64 coroutines against 32, holds of 20 µs: ≥ 1,000,000",
         number(fast), None if fast is None else fast >= 1e6),
        ("fleet-wide holders, the most counted at a grant: ≤ 32", number(holders),
         None if holders is None else holders <= 32),
        ("Redis commands per 1,000 acquires over that run: ≤ 1", number(per_1000, "{:.3f}"),
         None if per_1000 is None else per_1000 <= 1),
        (f"Redis µs per s at {number(fast)} vs at {number(slow_rate)} pairs/s: within ±25%",
         f"{number(usec_fast, '{:.0f}')} vs {number(usec_slow, '{:.0f}')} µs/s = {number(load_ratio, '{:.2f}')}",
         None if load_ratio is None else 0.75 <= load_ratio <= 1.25),
    ]
    for label, function in LATENCY:
        share, local = latency.get(f"{function}<share_fixture>"), latency.get(f"{function}<local_io_fixture>")
        met = None if share is None or local is None else share <= 1.2 * local or share <= local + 25
        text = "n/a" if met is None else f"{share:.1f} vs {local:.1f} ns = {share / local:.2f}x, {share - local:+.1f} ns"
        rows.append((f"latency, {label}: share ≤ 1.2 × local or + 25 ns (same context)", text, met))
    fair = [("4 busy processes from idle: all at 8 ± 1 within two refresh intervals (≤ 400 ms)",
             "all_fair_ms", 2 * REFRESH_MS),
            (f"a process becoming busy: at its fair share within one refresh interval plus a round trip "
             f"(≤ {REFRESH_MS + ping_ms:.2f} ms)", "busy_fair_ms", REFRESH_MS + ping_ms),
            ("a process whose demand drops to 2: its share at ≤ 2 within one refresh interval (≤ 200 ms)",
             "drop_given_back_ms", REFRESH_MS)]
    for label, key, bound in fair:
        value = counter(fleets, "BM_fairness", key)
        met = None if value is None or value < 0 else value <= bound
        rows.append((label, "never" if value is not None and value < 0 else number(value, "{:.0f} ms"), met))
    lines = ["| goal | this run | verdict |", "|---|---:|---|"]
    lines += [f"| {label} | {text} | {verdict(met)} |" for label, text, met in rows]
    return lines


FLEET_COLUMNS = [("pairs/s", "pairs_per_s", "{:,.0f}"), ("most holders", "max_holders", "{:.0f}"),
                 ("mean holders", "mean_holders", "{:.1f}"), ("mean hold µs", "hold_us", "{:.1f}"),
                 ("fleet CPU s/s", "fleet_cpu_per_s", "{:.2f}"), ("fleet CPU ns/pair", "fleet_cpu_ns_per_pair", "{:,.0f}"),
                 ("Redis commands", "redis_commands", "{:,.0f}"),
                 ("per 1,000 pairs", "redis_commands_per_1000", "{:.3f}"),
                 ("Redis µs/s (commandstats)", "redis_usec_per_s", "{:,.0f}"),
                 ("Redis µs per command", "redis_usec_per_command", "{:.1f}"),
                 ("run inside functions (PUBLISH)", None, None),
                 ("redis-server CPU ms/s", "redis_cpu_ms_per_s", "{:.1f}")]


def fleet_row(label, entry):
    if entry is None:
        return f"| {label} | not run |" + " |" * (len(FLEET_COLUMNS) - 1)
    if "error" in entry:
        return f"| {label} | failed: {entry['error']} |" + " |" * (len(FLEET_COLUMNS) - 1)
    return f"| {label} | " + " | ".join(cell(entry, key, form) for _, key, form in FLEET_COLUMNS) + " |"


def cell(entry, key, form):
    if key is None:
        inner, publishes = entry.get("redis_inner_commands"), entry.get("redis_publishes")
        return "" if inner is None else f"{inner:,.0f} ({publishes:,.0f})"
    return number(entry.get(key), form)


def fleet_header(first):
    return [f"| {first} | " + " | ".join(title for title, _, _ in FLEET_COLUMNS) + " |",
            "|---|" + "---:|" * len(FLEET_COLUMNS)]


def contended_table(fleets):
    lines = fleet_header("fleet of 8 processes, demands 16 16 8 8 4 4 4 4, capacity 32")
    lines.append(fleet_row("share, holds of 20 µs on average", fleets.get("BM_contended/share")))
    lines.append(fleet_row("share, holds of 3.2 ms on average (about 10,000 pairs/s)",
                           fleets.get("BM_contended/share_slow")))
    lines.append(fleet_row("local semaphores, static division of 4 each, holds of 20 µs",
                           fleets.get("BM_contended/static")))
    return lines


def scaling_name(kind, processes):
    return f"BM_scaling/kind:{kind}/processes:{processes}"


def scaling_table(fleets):
    lines = fleet_header("capacity 32, 64 coroutines in all, holds of 20 µs (the median round)")
    lines[0] += " pairs/s, all rounds |"
    lines[1] += "---:|"
    for kind, label in KINDS.items():
        for processes in PROCESSES:
            entry = fleets.get(scaling_name(kind, processes))
            spread = entry.get("spread", "") if entry else ""
            lines.append(fleet_row(f"{label}, {processes} process{'es' if processes > 1 else ''}", entry) +
                         f" {spread} |")
    return lines


def latency_table(latency):
    lines = ["| operation | local, bare io_context | local, io_context with a connection | share | "
             "share / local (same context) |", "|---|---:|---:|---:|---:|"]
    for label, function in LATENCY:
        bare, local, share = (latency.get(f"{function}<{f}>") for f in ("local_fixture", "local_io_fixture",
                                                                        "share_fixture"))
        ratio = share / local if share and local else None
        lines.append(f"| {label} | {number(bare, '{:.1f}')} | {number(local, '{:.1f}')} | "
                     f"{number(share, '{:.1f}')} | {number(ratio, '{:.2f}')} |")
    return lines


def fairness_table(latency, fleets):
    rows = [("from the start (all four busy): every share at 8 ± 1", "all_fair_ms"),
            ("the last process' demand drops to 2: its share at ≤ 2", "drop_given_back_ms"),
            ("... and the three others at 10 ± 1", "drop_others_fair_ms"),
            ("the last process busy again: its share at 8 ± 1", "busy_fair_ms"),
            ("... and every share at 8 ± 1", "busy_all_fair_ms")]
    lines = ["| event | time to it (ms) |", "|---|---:|"]
    for label, key in rows:
        value = counter(fleets, "BM_fairness", key)
        lines.append(f"| {label} | {'never' if value is not None and value < 0 else number(value, '{:.1f}')} |")
    ping = latency.get("BM_ping")
    lines += ["", f"A round trip (PING on loopback, same run): {number(ping and ping / 1e3, '{:.0f}')} µs."]
    return lines


def write_chart(fleets, path):
    data_path = path + ".dat"
    with open(data_path, "w") as f:
        f.write("processes\t" + "\t".join(f'"{label}"' for label in KINDS.values()) + "\n")
        for processes in PROCESSES:
            cells = []
            for kind in KINDS:
                value = counter(fleets, scaling_name(kind, processes), "pairs_per_s")
                cells.append("?" if value is None else f"{value:.0f}")
            f.write(f"{processes}\t" + "\t".join(cells) + "\n")
    script = f"""
set terminal pngcairo size 1100,650 font "sans,10" noenhanced
set output "{path}"
set title "Fleet throughput: capacity 32, 64 coroutines in all, holds of 20 us (exponential), one run"
set datafile separator "\\t"
set datafile missing "?"
set logscale y
set xrange [0.8:9]
set logscale x 2
set xtics ("1" 1, "2" 2, "4" 4, "8" 8)
set xlabel "processes (forked, one thread each, on this machine's cores)"
set ylabel "acquire + release pairs / s, fleet-wide (log scale)"
set grid
set key outside bottom center vertical
set bmargin 9
set format y "%.0f"
plot for [column=2:{len(KINDS) + 1}] "{data_path}" using 1:column with linespoints linewidth 2 pointsize 1.5 \\
    title columnheader(column)
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    os.remove(data_path)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", required=True, help="the JSON output of bench_shares")
    parser.add_argument("--markdown", required=True, help="the Markdown report to write")
    parser.add_argument("--chart", required=True, help="the PNG chart to write")
    parser.add_argument("--header", required=True, help="a Markdown file put at the top of the report")
    args = parser.parse_args()
    latency, fleets = load(args.results)
    with open(args.header) as f:
        header = f.read().rstrip("\n").split("\n")
    report = header + [
        "",
        "## Goals",
        "",
        "Every verdict compares figures of this run. Latency: medians of 5 rounds; the share "
        "against the local semaphore on an io_context that also carries a connection, as the "
        "share's does (the bare context's figures are in the latency table).",
        "",
        *goals(latency, fleets),
        "",
        "## The contended fleet",
        "",
        "Forked processes, one io_context thread each; the first and the last process swap their "
        "demands (16 and 4 coroutines) every 5 s of the run (scaled with --quick). A hold is a "
        "steady_timer wait of an exponential duration. Every fleet runs 2 s before its measured "
        "window starts, so that the shares have settled. Fleet CPU: the CPU time of all the "
        "processes within the window (CLOCK_PROCESS_CPUTIME_ID), per second and per pair; 2.00 s/s "
        "is both cores. Redis: every command the fleet sent during the window (INFO commandstats "
        "after CONFIG RESETSTAT; the commands run inside functions are not counted apart) and the "
        "µs Redis spent executing them, and the CPU time of the redis-server process (from procfs). Mean "
        "hold: from the grant to the release as measured (the timer's wake-up included); mean "
        "holders: the holds' total over the window's length (Little's law), at most the capacity.",
        "",
        *contended_table(fleets),
        "",
        "## Latency of an acquire that fits the share",
        "",
        "CPU ns per acquire + release pair, one thread, a limit of 4 nobody else uses; the median "
        "of 5 rounds, each round over every row in turn.",
        "",
        *latency_table(latency),
        "",
        "## Fairness",
        "",
        "4 processes of 16 coroutines (holds of 1 ms on average) on a capacity of 32, lease 2 s, "
        f"refresh interval {REFRESH_MS} ms. Each process logs every change of its share (the "
        "share's listener) on CLOCK_MONOTONIC; each time runs from the event (the start, the demand "
        "change) to the first instant the condition holds for every process.",
        "",
        *fairness_table(latency, fleets),
        "",
        "## Throughput against the number of processes",
        "",
        "Three rounds, each over every process count and every kind in turn; each point is the "
        "round with the median throughput.",
        "",
        f"![fleet throughput against the number of processes]({os.path.basename(args.chart)})",
        "",
        *scaling_table(fleets),
        "",
    ]
    text = "\n".join(report)
    with open(args.markdown, "w") as f:
        f.write(text)
    sys.stdout.write(text)
    write_chart(fleets, args.chart)


if __name__ == "__main__":
    main()
