#!/usr/bin/env python3
# Copyright (c) 2026 The asio_sync authors
#
# Distributed under the Boost Software License, Version 1.0. (See accompanying
# file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

"""Turns the output of one bench/compare run into a table and a chart.

Reads every Google Benchmark JSON file (cpp-*.json) and every Tokio JSON file (tokio-*.json) in
the results folder, pools the repetitions of all rounds per benchmark, and writes the median and
minimum ns/op of every implementation in every scenario, the ratio of ours to each peer, the
targets met or missed, and the allocation counters: as Markdown (to stdout and a file) and as a
grouped bar chart drawn by gnuplot. With --section redis it writes only the section of the
fleet-wide semaphore (bench/redis.cpp) into an existing report, in place of the previous one.
"""

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass, field

OURS = "ours"
# Columns of the chart, in order; every peer of a scenario is one of these kinds.
KINDS = [OURS, "bare reference", "Asio channel", "strand + deque", "Asio timer", "std:: blocking", "Tokio 1.24"]


@dataclass
class Implementation:
    kind: str
    label: str
    source: str  # "cpp" or "tokio"
    name: str  # the benchmark's run_name, or the Tokio scenario's name


@dataclass
class Scenario:
    title: str
    implementations: list = field(default_factory=list)

    def ours(self):
        return next(i for i in self.implementations if i.kind == OURS)


def cpp(kind, label, name):
    return Implementation(kind, label, "cpp", name)


def tokio(name, label="tokio::sync"):
    return Implementation("Tokio 1.24", label, "tokio", name)


def floor(tasks, threads, per_round=False):
    """The co_await post floor of a scenario of `tasks` coroutines on `threads` threads (bench/floor.cpp)."""
    if per_round:
        return cpp("bare reference", "co_await post, once per task and round (the floor)",
                   f"BM_co_await_post_floor_per_round/tasks:{tasks}/threads:{threads}/real_time")
    return cpp("bare reference", "co_await post per operation (the floor)",
               f"BM_co_await_post_floor/tasks:{tasks}/threads:{threads}/real_time")


def contended_scenario(tasks, permits, threads, headline=False):
    title = f"semaphore {tasks} tasks / {permits} permits, {threads} thread{'s' if threads > 1 else ''}"
    if headline:
        title += " (headline)"
    args = f"tasks:{tasks}/permits:{permits}"
    return Scenario(
        title,
        [
            cpp(OURS, "asio_sync::semaphore", f"BM_semaphore/{args}/threads:{threads}/real_time"),
            floor(tasks, threads),
            cpp("Asio channel", "concurrent_channel", f"BM_channel/{args}/threads:{threads}/real_time"),
            cpp("strand + deque", "strand semaphore", f"BM_strand_semaphore/{args}/threads:{threads}/real_time"),
            cpp("std:: blocking", f"std::counting_semaphore, {tasks} threads",
                f"BM_std_counting_semaphore/{args}/real_time"),
            tokio(f"semaphore tasks:{tasks} permits:{permits} threads:{threads}", "Semaphore"),
        ],
    )


def callback_scenario(executor, semaphore_type):
    """Our semaphore `semaphore_type`, on `executor`, in the uncontended callback chain."""
    benchmark = "BM_async_acquire_release_callback"
    return Scenario(
        f"uncontended callback acquire, {executor}",
        [
            cpp(OURS, "async_acquire + release", f"{benchmark}<{semaphore_type}>"),
            cpp("bare reference", "post round trip", "BM_post_round_trip"),
            cpp("Asio channel", "concurrent_channel", f"{benchmark}<channel_semaphore>"),
            cpp("strand + deque", "strand semaphore", f"{benchmark}<strand_semaphore>"),
        ],
    )


def mutex_scenario(title, label, benchmark):
    """Ours as `label` (the Google Benchmark function `benchmark`), against the mutex peers."""
    args = "tasks:4/threads:2/real_time"
    return Scenario(
        title,
        [
            cpp(OURS, label, f"{benchmark}/{args}"),
            floor(4, 2),
            cpp("Asio channel", "concurrent_channel of 1", f"BM_channel_mutex/{args}"),
            cpp("strand + deque", "strand semaphore of 1", f"BM_strand_semaphore_mutex/{args}"),
            cpp("std:: blocking", "std::mutex, 4 threads", "BM_std_mutex/threads:4/real_time"),
            tokio("mutex tasks:4 threads:2", "Mutex"),
        ],
    )


SCENARIOS = [
    Scenario("uncontended try pair", [
        cpp(OURS, "try_acquire + release", "BM_try_acquire_release<asio_sync::semaphore>"),
        cpp("bare reference", "atomic fetch_sub + fetch_add", "BM_atomic_pair"),
        cpp("std:: blocking", "std::counting_semaphore try_acquire + release", "BM_std_counting_semaphore_try_pair"),
        tokio("uncontended try_acquire", "Semaphore::try_acquire + drop"),
    ]),
    callback_scenario("any_io_executor", "asio_sync::semaphore"),
    callback_scenario("io_context executor", "io_semaphore"),
    Scenario("uncontended coroutine acquire", [
        cpp(OURS, "co_await async_acquire + release", "BM_async_acquire_release_coroutine<asio_sync::semaphore>"),
        cpp("bare reference", "co_await post", "BM_co_await_post"),
        cpp("Asio channel", "concurrent_channel", "BM_async_acquire_release_coroutine<channel_semaphore>"),
        cpp("strand + deque", "strand semaphore", "BM_async_acquire_release_coroutine<strand_semaphore>"),
        tokio("uncontended acquire().await", "acquire().await + drop"),
    ]),
    contended_scenario(8, 2, 2, headline=True),
    contended_scenario(16, 1, 2),
    contended_scenario(6, 10, 1),
    contended_scenario(6, 10, 2),
    contended_scenario(6, 5, 1),
    contended_scenario(6, 5, 2),
    Scenario("mixed acquires 4, 10, 8 of 10 permits, 2 threads", [
        cpp(OURS, "async_acquire(n)", "BM_semaphore_mixed/real_time"),
        floor(3, 2),
        cpp("strand + deque", "strand semaphore", "BM_strand_semaphore_mixed/real_time"),
        tokio("semaphore mixed 4,10,8 of 10 permits threads:2", "acquire_many"),
    ]),
    mutex_scenario("mutex 4 tasks, 2 threads", "async_lock + unlock", "BM_mutex_async_lock"),
    mutex_scenario("mutex 4 tasks, 2 threads, scoped lock", "async_scoped_lock", "BM_mutex_async_scoped_lock"),
    Scenario("rwlock 4 readers + 2 writers, 2 threads", [
        cpp(OURS, "shared_mutex", "BM_shared_mutex/readers:4/writers:2/threads:2/real_time"),
        floor(6, 2),
        cpp("strand + deque", "strand semaphore of 4", "BM_strand_semaphore_rwlock/readers:4/writers:2/threads:2/real_time"),
        cpp("std:: blocking", "std::shared_mutex, 6 threads", "BM_std_shared_mutex/readers:4/writers:2/real_time"),
        tokio("rwlock readers:4 writers:2 threads:2", "RwLock"),
    ]),
    Scenario("barrier 4 tasks, 2 threads, per phase", [
        cpp(OURS, "async_arrive_and_wait", "BM_barrier_round<ours>/tasks:4/threads:2/real_time"),
        floor(4, 2, per_round=True),
        cpp("Asio channel", "atomic count + 2 concurrent_channels",
            "BM_barrier_round<channel_barrier>/tasks:4/threads:2/real_time"),
        cpp("Asio timer", "strand + steady_timer cancelled to wake",
            "BM_barrier_round<timer_barrier>/tasks:4/threads:2/real_time"),
        tokio("barrier tasks:4 threads:2", "Barrier"),
    ]),
    Scenario("drain 1,000,000 queued waiters, per hand-off", [
        cpp(OURS, "asio_sync::semaphore", "BM_drain<asio_sync::semaphore>"),
        cpp("Asio channel", "concurrent_channel", "BM_drain<channel_semaphore>"),
        cpp("strand + deque", "strand semaphore", "BM_drain<strand_semaphore>"),
        tokio("drain waiters:1000000", "Semaphore, 1,000,000 tasks"),
    ]),
    Scenario("notify hand-off between 2 coroutines, 2 threads", [
        cpp(OURS, "condition_variable + mutex", "BM_condition_variable_notify_one/threads:2/real_time"),
        floor(2, 2),
        cpp("Asio timer", "steady_timer cancelled to wake, on a strand", "BM_timer_cancel_handoff/threads:2/real_time"),
        cpp("Asio channel", "concurrent_channel per direction", "BM_channel_handoff/threads:2/real_time"),
        tokio("notify handoff threads:2", "Notify per direction + Mutex"),
    ]),
]

ALLOCATION_BENCHMARKS = [
    ("async_acquire, permit free, any_io_executor", "BM_acquire_free_permit<asio_sync::semaphore>"),
    ("async_acquire, permit free, io_context executor", "BM_acquire_free_permit<io_semaphore>"),
    ("async_acquire that waits, any_io_executor", "BM_acquire_wait<asio_sync::semaphore>"),
    ("async_acquire that waits, io_context executor", "BM_acquire_wait<io_semaphore>"),
    ("async_acquire that waits, any_io_executor, inside run()", "BM_acquire_wait_in_run<asio_sync::semaphore>"),
    ("async_acquire that waits, io_context executor, inside run()", "BM_acquire_wait_in_run<io_semaphore>"),
    ("async_acquire_permit that waits", "BM_acquire_permit_wait"),
    ("async_acquire_for that waits (timer)", "BM_acquire_for_wait"),
    ("mutex async_lock that waits", "BM_mutex_lock_wait"),
    ("mutex async_lock that waits, inside run()", "BM_mutex_lock_wait_in_run"),
    ("shared_mutex async_lock_shared that waits", "BM_shared_mutex_lock_shared_wait"),
    ("shared_mutex async_lock that waits", "BM_shared_mutex_lock_wait"),
]

REDIS_TITLE = "Fleet-wide semaphore (Redis)"
REDIS_PING = "BM_redis_ping/real_time"
REDIS_PAIR = "BM_redis_acquire_release/real_time"
REDIS_ONE = "BM_redis_fleet_throughput/processes:1/iterations:2000/real_time"
REDIS_FOUR = "BM_redis_fleet_throughput/processes:4/iterations:2000/real_time"
REDIS_HANDOFF = "BM_redis_handoff/iterations:1/manual_time"
# (label, benchmark, its rate's name)
REDIS_ROWS = [
    ("bare PING round trip (the floor)", REDIS_PING, "PINGs/s"),
    ("uncontended async_acquire_permit(1) + async_release, one connection", REDIS_PAIR, "pairs/s"),
    ("throughput, 1 process, capacity 4", REDIS_ONE, "pairs/s in total"),
    ("throughput, 4 processes, capacity 4", REDIS_FOUR, "pairs/s in total"),
    ("hand-off, capacity 1: release in one process to grant heard in the other", REDIS_HANDOFF, "hand-offs/s"),
]
# The engines measured: this tree's (cpp-redis-*.json) and, with bench/compare --baseline REV, the
# same benchmark built against REV's headers (baseline-redis-*.json).
REDIS_ENGINES = [("cpp", "this tree"), ("baseline", "baseline")]

TIME_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


@dataclass
class Measurement:
    samples: list = field(default_factory=list)  # ns per operation, one per repetition
    counters: dict = field(default_factory=dict)  # counter name -> values, one per repetition
    error: str = ""

    def median(self):
        return statistics.median(self.samples) if self.samples else None

    def minimum(self):
        return min(self.samples) if self.samples else None

    def counter(self, name):
        values = self.counters.get(name)
        return statistics.median(values) if values else None


GOOGLE_BENCHMARK_FIELDS = {
    "name", "family_index", "per_family_instance_index", "run_name", "run_type", "repetitions",
    "repetition_index", "threads", "iterations", "real_time", "cpu_time", "time_unit",
    "aggregate_name", "aggregate_unit", "error_occurred", "error_message", "label",
}


def load_google_benchmark(path, source, measurements):
    """Adds the repetitions of one Google Benchmark JSON file, as `source`."""
    with open(path) as f:
        data = json.load(f)
    for entry in data.get("benchmarks", []):
        if entry.get("run_type") != "iteration":
            continue
        m = measurements.setdefault((source, entry["run_name"]), Measurement())
        if entry.get("error_occurred"):
            m.error = entry.get("error_message", "error")
            continue
        m.samples.append(entry["real_time"] * TIME_UNIT_NS[entry["time_unit"]])
        for key, value in entry.items():
            if key not in GOOGLE_BENCHMARK_FIELDS and isinstance(value, (int, float)):
                m.counters.setdefault(key, []).append(value)


def load_measurements(folder):
    """Pools the repetitions of every round: (source, name) -> Measurement."""
    measurements = {}
    for source in ("cpp", "baseline"):
        for path in sorted(glob.glob(os.path.join(folder, f"{source}-*.json"))):
            load_google_benchmark(path, source, measurements)
    for path in sorted(glob.glob(os.path.join(folder, "tokio-*.json"))):
        with open(path) as f:
            data = json.load(f)
        for entry in data["results"]:
            m = measurements.setdefault(("tokio", entry["name"]), Measurement())
            m.samples.extend(entry["ns_per_op"])
            for key, value in entry["counters"].items():
                m.counters.setdefault(key, []).append(value)
    return measurements


def ns(value):
    if value is None:
        return "n/a"
    return f"{value:.3g}" if value < 100 else f"{value:.0f}"


def ratio_text(ours, peer):
    if ours is None or peer is None:
        return "n/a"
    return f"{ours / peer:.2f}"


def measurement_of(measurements, implementation):
    return measurements.get((implementation.source, implementation.name), Measurement(error="not run"))


def scenario_table(measurements):
    lines = [
        "| scenario | implementation | median ns/op | min ns/op | ours / this (median) |",
        "|---|---|---:|---:|---:|",
    ]
    for scenario in SCENARIOS:
        ours = measurement_of(measurements, scenario.ours()).median()
        for implementation in scenario.implementations:
            m = measurement_of(measurements, implementation)
            who = f"**ours**: {implementation.label}" if implementation.kind == OURS else \
                f"{implementation.kind}: {implementation.label}"
            median = m.median()
            if m.error and median is None:
                lines.append(f"| {scenario.title} | {who} | failed: {m.error} | | |")
                continue
            ratio = "1" if implementation.kind == OURS else ratio_text(ours, median)
            lines.append(f"| {scenario.title} | {who} | {ns(median)} | {ns(m.minimum())} | {ratio} |")
    return lines


def is_contended(scenario):
    return any(i.name.startswith("BM_co_await_post_floor") for i in scenario.implementations)


def find_scenario(prefix):
    return next(s for s in SCENARIOS if s.title.startswith(prefix))


def peer_ratio(measurements, scenario, kind):
    ours = measurement_of(measurements, scenario.ours()).median()
    peer = next((i for i in scenario.implementations if i.kind == kind), None)
    if peer is None or ours is None:
        return None
    median = measurement_of(measurements, peer).median()
    return None if median is None else ours / median


def target_row(description, value, bound, strict=False):
    if value is None:
        return f"| {description} | n/a | not measured |"
    met = value < bound if strict else value <= bound
    return f"| {description} | {value:.2f} | {'met' if met else '**missed**'} |"


def targets_table(measurements):
    lines = ["| target | ratio (ours / peer, medians) | verdict |", "|---|---:|---|"]
    lines.append(target_row("try pair within 1.5x of the atomic pair",
                            peer_ratio(measurements, find_scenario("uncontended try pair"), "bare reference"), 1.5))
    for suffix in ("any_io_executor", "io_context executor"):
        scenario = find_scenario(f"uncontended callback acquire, {suffix}")
        lines.append(target_row(f"callback async_acquire + release within 1.3x of a post round trip ({suffix})",
                                peer_ratio(measurements, scenario, "bare reference"), 1.3))
    lines.append(target_row("coroutine acquire of a free permit cheaper than co_await post",
                            peer_ratio(measurements, find_scenario("uncontended coroutine acquire"), "bare reference"),
                            1.0, strict=True))
    # Every contended scenario (those with a floor): at most Tokio's time, at most 1.2x one bare hop
    # per operation.
    for scenario in SCENARIOS:
        if not is_contended(scenario):
            continue
        name = scenario.title.replace(" (headline)", "")
        if any(i.kind == "Tokio 1.24" for i in scenario.implementations):
            lines.append(target_row(f"{name}: at most Tokio's time",
                                    peer_ratio(measurements, scenario, "Tokio 1.24"), 1.0))
        lines.append(target_row(f"{name}: within 1.2x of the co_await post floor",
                                peer_ratio(measurements, scenario, "bare reference"), 1.2))
    notify = measurement_of(measurements, find_scenario("notify hand-off").ours()).median()
    mutex = measurement_of(measurements, find_scenario("mutex 4 tasks, 2 threads").ours()).median()
    lines.append(target_row("notify hand-off within 1.2x of the mutex 4 tasks row",
                            None if notify is None or mutex is None else notify / mutex, 1.2))
    for prefix, name in (("semaphore 8 tasks / 2 permits", "8 tasks / 2 permits"),
                         ("mutex 4 tasks, 2 threads", "mutex 4 tasks"),
                         ("rwlock", "rwlock 4 readers + 2 writers")):
        scenario = find_scenario(prefix)
        for kind in ("Asio channel", "strand + deque"):
            if any(i.kind == kind for i in scenario.implementations):
                lines.append(target_row(f"{name} at least 2x faster than the {kind} semaphore",
                                        peer_ratio(measurements, scenario, kind), 0.5))
            else:
                lines.append(f"| {name} at least 2x faster than the {kind} semaphore | n/a | "
                             f"no such peer for this scenario |")
    for label, name in ALLOCATION_BENCHMARKS:
        if "waits" not in label:
            continue
        other = measurements.get(("cpp", name), Measurement()).counter("other_allocs")
        description = f"0 heap allocations beyond the handler's allocator: {label}"
        if other is None:
            lines.append(f"| {description} | n/a | not measured |")
        else:
            # Inside run() the first operation of each chain starts outside it: 0.0001 per op.
            met = round(other, 3) == 0
            lines.append(f"| {description} | {other:.4f} allocs/op | {'met' if met else '**missed**'} |")
    return lines


def allocation_table(measurements):
    lines = [
        "| operation | through the handler's allocator: allocs / bytes per op | elsewhere: allocs / bytes per op |",
        "|---|---:|---:|",
    ]
    for label, name in ALLOCATION_BENCHMARKS:
        m = measurements.get(("cpp", name), Measurement(error="not run"))
        if m.error:
            lines.append(f"| {label} | failed: {m.error} | |")
            continue
        cells = []
        for prefix in ("handler", "other"):
            allocs, size = m.counter(f"{prefix}_allocs"), m.counter(f"{prefix}_bytes")
            cells.append("n/a" if allocs is None else f"{allocs:.4g} / {size:.4g}")
        lines.append(f"| {label} | {cells[0]} | {cells[1]} |")
    return lines


def drain_memory_table(measurements):
    lines = ["| implementation | heap allocations per queued waiter | bytes per queued waiter |", "|---|---:|---:|"]
    for implementation in find_scenario("drain").implementations:
        m = measurement_of(measurements, implementation)
        allocs, size = m.counter("allocs_per_waiter"), m.counter("bytes_per_waiter")
        if allocs is None:
            lines.append(f"| {implementation.kind}: {implementation.label} | n/a | n/a |")
        else:
            lines.append(f"| {implementation.kind}: {implementation.label} | {allocs:.2f} | {size:.0f} |")
    return lines


def redis_section(measurements, preamble):
    """The Markdown section of bench/redis.cpp, `preamble` (lines) after its title."""
    engines = [(source, name) for source, name in REDIS_ENGINES if (source, REDIS_PING) in measurements]
    lines = [f"## {REDIS_TITLE}", "", *preamble, "",
             "Each operation is timed in chains on a running io_context against a redis-server on loopback "
             "that the benchmark starts; the floor is a bare `PING` on the same connection in the same run "
             "(ratios are to the PING of the same engine's run). Commands per operation are those the client "
             "sent (FCALL, FCALL_RO, PING), counted by Redis in an untimed pass (`INFO commandstats` after "
             "`CONFIG RESETSTAT`; the commands run inside functions are counted apart), with the time Redis "
             "spent executing them, a function's including the commands it runs. Redis runs functions on "
             "one thread, so `1e6 / server µs per pair` bounds the pairs per second of one Redis server, "
             "across every semaphore on it. Throughput: forked processes, each with its own connection, one "
             "acquire + release chain each, wall time of the whole fleet divided by all their operations. "
             "Hand-off: two processes take turns on a semaphore of 1, each releasing as soon as it is "
             "granted and queueing again; one hand-off runs from the release in one process to the grant "
             "heard in the other, both read on CLOCK_MONOTONIC; one repetition is the mean of a batch.",
             "",
             "| measurement | engine | median µs/op | min µs/op | rate (median) | / PING (median) | "
             "commands sent per op | server µs per op | ceiling: 1e6 / server µs per pair |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for label, name, rate_name in REDIS_ROWS:
        for source, engine in engines:
            m = measurements.get((source, name), Measurement(error="not run"))
            median = m.median()
            if median is None:
                lines.append(f"| {label} | {engine} | failed: {m.error} | | | | | | |")
                continue
            commands, server_us = m.counter("commands_per_op"), m.counter("server_us_per_op")
            cost_cells = " | ".join("" if value is None else f"{value:.2f}" for value in (commands, server_us))
            ceiling = f"{1e6 / server_us:,.0f} pairs/s" if name == REDIS_PAIR and server_us else ""
            ping = measurements.get((source, REDIS_PING), Measurement()).median()
            lines.append(f"| {label} | {engine} | {median / 1e3:.1f} | {m.minimum() / 1e3:.1f} | "
                         f"{1e9 / median:,.0f} {rate_name} | {ratio_text(median, ping)} | {cost_cells} | "
                         f"{ceiling} |")
    for source, engine in engines:
        one, four = (measurements.get((source, name), Measurement()).median() for name in (REDIS_ONE, REDIS_FOUR))
        if one is not None and four is not None:
            lines += ["", f"Total throughput of 4 processes / 1 process, {engine}: {one / four:.2f}."]
    return lines + redis_goals(measurements)


def redis_goals(measurements):
    """The speed goals of the fleet-wide semaphore, each met or missed in this run (medians)."""
    def median(source, name):
        return measurements.get((source, name), Measurement()).median()

    def verdict(met):
        return "n/a" if met is None else ("met" if met else "missed")

    ping = median("cpp", REDIS_PING)
    pair, handoff = median("cpp", REDIS_PAIR), median("cpp", REDIS_HANDOFF)
    server_us = measurements.get(("cpp", REDIS_PAIR), Measurement()).counter("server_us_per_op")
    four, baseline_four = median("cpp", REDIS_FOUR), median("baseline", REDIS_FOUR)
    pair_pings = pair / ping if pair and ping else None
    handoff_pings = handoff / ping if handoff and ping else None
    speedup = baseline_four / four if four and baseline_four else None
    goals = [
        ("server µs per acquire + release ≤ 20", server_us, "{:.2f} µs", server_us is not None and server_us <= 20),
        ("uncontended pair ≤ 2.5 PINGs", pair_pings, "{:.2f} PINGs", pair_pings is not None and pair_pings <= 2.5),
        ("hand-off ≤ 2 PINGs", handoff_pings, "{:.2f} PINGs", handoff_pings is not None and handoff_pings <= 2),
        ("4 processes ≥ 4 × the baseline's 4-process pairs/s", speedup, "{:.2f} ×",
         speedup is not None and speedup >= 4),
    ]
    lines = ["", "| goal | this run | verdict |", "|---|---:|---|"]
    for goal, value, form, met in goals:
        lines.append(f"| {goal} | {'n/a' if value is None else form.format(value)} | "
                     f"{verdict(None if value is None else met)} |")
    return lines


def splice_section(path, section):
    """Replaces the section titled like `section` in the report at `path`, or appends it."""
    with open(path) as f:
        lines = f.read().rstrip("\n").split("\n")
    start = next((i for i, line in enumerate(lines) if line == section[0]), None)
    if start is None:
        lines += [""] + section
    else:
        end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("## ")), len(lines))
        lines[start:end] = section + ([""] if end < len(lines) else [])
    return "\n".join(lines) + "\n"


def write_chart(measurements, path):
    """Grouped bars, one group per scenario and one bar per kind of implementation, log scale."""
    data_path = path + ".dat"
    with open(data_path, "w") as f:
        f.write("scenario\t" + "\t".join(f'"{k}"' for k in KINDS) + "\n")
        for scenario in SCENARIOS:
            cells = []
            for kind in KINDS:
                implementation = next((i for i in scenario.implementations if i.kind == kind), None)
                median = measurement_of(measurements, implementation).median() if implementation else None
                cells.append("?" if median is None else f"{median:.3f}")
            title = scenario.title.replace(" (headline)", "*").replace('"', "")
            f.write(f'"{title}"\t' + "\t".join(cells) + "\n")
    script = f"""
set terminal pngcairo size 1800,950 font "sans,10" noenhanced
set output "{path}"
set title "ns per operation, median (lower is better; log scale; * the headline scenario)"
set datafile separator "\\t"
set datafile missing "?"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.9 border -1
set boxwidth 0.9
set logscale y
set yrange [1:*]
set ylabel "ns / op"
set grid ytics
set key outside top center horizontal
set xtics rotate by 30 right
set bmargin 12
plot for [column=2:{len(KINDS) + 1}] "{data_path}" using column:xtic(1) title columnheader(column)
"""
    subprocess.run(["gnuplot"], input=script, text=True, check=True)
    os.remove(data_path)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--results", required=True, help="folder holding cpp-*.json and tokio-*.json")
    parser.add_argument("--markdown", required=True, help="the Markdown report to write")
    parser.add_argument("--chart", help="the PNG chart to write (not with --section)")
    parser.add_argument("--header", required=True,
                        help="a Markdown file put at the top of the report (with --section: of the section)")
    parser.add_argument("--section", choices=["redis"],
                        help="write only this section into the existing report, in place of the previous one")
    args = parser.parse_args()
    if args.section is None and args.chart is None:
        parser.error("--chart is needed unless --section is given")

    measurements = load_measurements(args.results)
    with open(args.header) as f:
        header = f.read().rstrip("\n").split("\n")
    if args.section == "redis":
        text = splice_section(args.markdown, redis_section(measurements, header))
        with open(args.markdown, "w") as f:
            f.write(text)
        sys.stdout.write(text)
        return
    chart_link = os.path.basename(args.chart)
    report = header + [
        "",
        "## Targets",
        "",
        "A ratio below 1 means ours is faster. Each verdict compares medians from this run.",
        "",
        *targets_table(measurements),
        "",
        "## Every scenario",
        "",
        "Median and minimum over every repetition of every round; the last column is ours divided by "
        "this implementation (below 1: ours is faster). The std:: blocking rows run one OS thread per "
        "task, whatever the thread count of the scenario (the try pair: one thread).",
        "",
        *scenario_table(measurements),
        "",
        f"![ns per operation, grouped by scenario]({chart_link})",
        "",
        "## Memory per queued waiter (drain scenario)",
        "",
        "Heap allocations and bytes while queueing the waiters, divided by their number: C++ through a "
        "malloc interposer (bench/support/heap_counter.hpp), Tokio through a counting global allocator. "
        "A C++ waiter is a callback of two pointers, so its figure is the operation the primitive "
        "keeps for it; a Tokio waiter is a spawned task, whose one allocation holds the task and its "
        "future (with the semaphore's wait node inside).",
        "",
        *drain_memory_table(measurements),
        "",
        "## Heap allocations per operation (bench/allocation.cpp)",
        "",
        "One thread; the handler carries a counting allocator. Operations are started from outside "
        "`run()`, where Asio's per-thread recycling cache is not in play, or, in the rows that say so, "
        "from the previous operation's handler, where it is (one chain of 10000 operations per batch, "
        "the first started from outside). Medians over the rounds.",
        "",
        *allocation_table(measurements),
        "",
    ]
    if ("cpp", REDIS_PING) in measurements:  # bench_redis is built only where asio_sync::redis is
        report += [*redis_section(measurements, ["Measured in this run, by bench/redis.cpp."]), ""]
    text = "\n".join(report)
    with open(args.markdown, "w") as f:
        f.write(text)
    sys.stdout.write(text)
    write_chart(measurements, args.chart)


if __name__ == "__main__":
    main()
