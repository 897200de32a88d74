#!/usr/bin/env python3
# Copyright (c) 2026 The asio_sync authors
#
# Distributed under the Boost Software License, Version 1.0. (See accompanying
# file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)
"""Turns the output of `bench_adaptive --simulate` into a Markdown table and an SVG chart.

Usage: adaptive_report.py RUN_DIR OUT.md OUT.svg [ALONE_DIR...]

Per configuration and phase: the median over the runs of goodput and p99. The oracle is the
fixed K with the best median goodput in each phase (ties broken by p99). For each algorithm, how
long the limit took to enter [0.8 C, 1.2 C] after each change of C, and the share of the rest of
the phase it spent there (medians over the runs). Each ALONE_DIR holds one configuration run by
itself (`--alone NAME --runs 1`), compared with the same configuration in run 0 of the pack.
"""
import csv
import statistics
import sys
from collections import defaultdict

ALGORITHMS = ["vegas", "gradient2", "aimd", "vegas_windowed", "vegas_windowed_p50", "gradient2_windowed",
              "aimd_windowed", "gradient2_windowed_tuned"]


def read(path):
    with open(path) as f:
        return list(csv.DictReader(f))


def medians(summary):
    cells = defaultdict(list)
    for row in summary:
        cells[(row["config"], int(row["phase"]))].append((float(row["goodput"]), float(row["p99_ms"])))
    return {key: (statistics.median(g for g, _ in v), statistics.median(p for _, p in v))
            for key, v in cells.items()}


def band_figures(trace, config, phase_seconds):
    """Per run and change of C (at 1 and 2 phases): seconds to enter the band, share in it after."""
    out = {1: [], 2: []}
    runs = defaultdict(list)
    for row in trace:
        if row["config"] == config:
            runs[row["run"]].append((float(row["t"]), int(row["limit"]), int(row["capacity"])))
    for points in runs.values():
        for phase in (1, 2):
            begin, end = phase * phase_seconds, (phase + 1) * phase_seconds
            inside = [(t, lo <= limit <= hi) for t, limit, c in points if begin <= t < end
                      for lo, hi in [(0.8 * c, 1.2 * c)]]
            entered = next((t for t, ok in inside if ok), None)
            if entered is None:
                out[phase].append((float("inf"), 0.0))
                continue
            rest = [ok for t, ok in inside if t >= entered]
            out[phase].append((entered - begin, sum(rest) / len(rest)))
    return {p: (statistics.median(e for e, _ in v), statistics.median(s for _, s in v)) for p, v in out.items()}


def svg(trace, med, oracle, phase_seconds, path):
    width, height, left, top = 900, 640, 60, 20
    plot_h = 300
    colours = {"vegas": "#aec7e8", "gradient2": "#98df8a", "aimd": "#ff9896", "vegas_windowed": "#1f77b4",
               "vegas_windowed_p50": "#17becf", "gradient2_windowed": "#bcbd22", "aimd_windowed": "#d62728",
               "gradient2_windowed_tuned": "#2ca02c", "C": "#000000"}
    total = 3 * phase_seconds
    ymax = 64
    x = lambda t: left + (width - left - 20) * t / total
    y = lambda v: top + plot_h - plot_h * min(v, ymax) / ymax
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">',
             f'<text x="{left}" y="{top - 5}">Limit over time (run 0; clipped at {ymax}) against C (dashed); goodput per phase (medians of the runs)</text>',
             f'<line x1="{left}" y1="{top + plot_h}" x2="{width - 20}" y2="{top + plot_h}" stroke="#888"/>',
             f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + plot_h}" stroke="#888"/>']
    for v in (0, 8, 16, 32, 48, 64):
        parts.append(f'<text x="{left - 30}" y="{y(v) + 4}">{v}</text>')
    for s in range(0, int(total) + 1, max(1, int(phase_seconds // 3))):
        parts.append(f'<text x="{x(s) - 8}" y="{top + plot_h + 15}">{s}s</text>')
    series = defaultdict(list)
    for row in trace:
        if row["run"] == "0" and row["config"] in ALGORITHMS:
            series[row["config"]].append((float(row["t"]), int(row["limit"])))
        if row["run"] == "0" and row["config"] == "none":
            series["C"].append((float(row["t"]), int(row["capacity"])))
    for name, points in sorted(series.items(), key=lambda item: item[0] not in ("vegas", "gradient2", "aimd")):
        d = " ".join(f"{x(t):.1f},{y(v):.1f}" for t, v in points)
        dash = ' stroke-dasharray="6,4"' if name == "C" else ""
        # The algorithms fed every request swing widely: drawn faint, under the windowed ones.
        faint = ' stroke-opacity="0.5"' if name in ("vegas", "gradient2", "aimd") else ""
        parts.append(f'<polyline fill="none" stroke="{colours[name]}" stroke-width="1.5"{dash}{faint} points="{d}"/>')
    for i, name in enumerate(["C"] + ALGORITHMS):
        parts.append(f'<text x="{left + 10 + 170 * (i % 5)}" y="{top + plot_h + 35 + 15 * (i // 5)}" fill="{colours[name]}">{name}</text>')
    # Goodput bars per phase: oracle, each algorithm, no limit.
    bars = ["oracle"] + ALGORITHMS + ["none"]
    bar_colours = {"oracle": "#777777", "none": "#bbbbbb", **colours}
    gmax = max(max(v[0] for v in med.values()), 1)
    base = height - 30
    for phase in range(3):
        for i, name in enumerate(bars):
            g = med[(oracle[phase], phase)][0] if name == "oracle" else med[(name, phase)][0]
            h = 140 * g / gmax
            bx = left + phase * 280 + i * 23
            parts.append(f'<rect x="{bx}" y="{base - h:.1f}" width="20" height="{h:.1f}" fill="{bar_colours[name]}"/>')
            parts.append(f'<text x="{bx}" y="{base - h - 3:.1f}" font-size="7">{g:.0f}</text>')
        parts.append(f'<text x="{left + phase * 280}" y="{base - 160}">phase {phase + 1}: goodput/s (oracle first, none last)</text>')
    parts.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(parts) + "\n")


def main():
    run_dir, out_md, out_svg = sys.argv[1:4]
    summary, trace = read(f"{run_dir}/summary.csv"), read(f"{run_dir}/trace.csv")
    runs = len({r["run"] for r in summary})
    phase_seconds = round(max(float(r["t"]) for r in trace) / 3)
    med = medians(summary)
    fixed = sorted({c for c, _ in med if c.startswith("fixed")}, key=lambda c: int(c[5:]))
    oracle = {p: max(fixed, key=lambda c: (med[(c, p)][0], -med[(c, p)][1])) for p in range(3)}

    lines = [f"Phases of {phase_seconds} s (C = 32, 8, 32), medians of {runs} runs. Goodput: requests completed "
             "within 20 ms (4x the mean service time) per second; p99: of the admitted requests.", "",
             "| configuration | phase 1 goodput | p99 ms | phase 2 goodput | p99 ms | phase 3 goodput | p99 ms |",
             "|---|---|---|---|---|---|---|"]
    def row(label, cell):
        return "| " + label + " | " + " | ".join(f"{cell(p)[0]:.0f} | {cell(p)[1]:.1f}" for p in range(3)) + " |"
    lines.append(row("best fixed K (" + ", ".join(oracle[p][5:] for p in range(3)) + ")", lambda p: med[(oracle[p], p)]))
    for name in ALGORITHMS + ["none"] + fixed:
        lines.append(row(name, lambda p, n=name: med[(n, p)]))
    lines += ["", "Against the goals (goodput >= 95% of the best fixed K's, p99 <= 1.25x):", "",
              "| algorithm | goodput / oracle per phase | p99 / oracle per phase | after 32 -> 8: enters band (s), share in band | after 8 -> 32: enters band (s), share in band |",
              "|---|---|---|---|---|"]
    for name in ALGORITHMS:
        g = ", ".join(f"{med[(name, p)][0] / max(med[(oracle[p], p)][0], 1e-9):.2f}" for p in range(3))
        l = ", ".join(f"{med[(name, p)][1] / max(med[(oracle[p], p)][1], 1e-9):.2f}" for p in range(3))
        b = band_figures(trace, name, phase_seconds)
        lines.append(f"| {name} | {g} | {l} | {b[1][0]:.1f}, {b[1][1]:.0%} | {b[2][0]:.1f}, {b[2][1]:.0%} |")
    if len(sys.argv) > 4:
        pack0 = medians([r for r in summary if r["run"] == "0"])
        lines += ["", f"Interference: each configuration alone (run 0's seed) against run 0 in the pack of {len(fixed) + len(ALGORITHMS) + 1} configurations:", "",
                  "| configuration | phase | goodput alone | goodput in pack | p99 alone | p99 in pack |", "|---|---|---|---|---|---|"]
        for alone_dir in sys.argv[4:]:
            alone_summary = read(f"{alone_dir}/summary.csv")
            name = alone_summary[0]["config"]
            alone = medians(alone_summary)
            for p in range(3):
                lines.append(f"| {name} | {p + 1} | {alone[(name, p)][0]:.0f} | {pack0[(name, p)][0]:.0f} | "
                             f"{alone[(name, p)][1]:.1f} | {pack0[(name, p)][1]:.1f} |")
    with open(out_md, "w") as f:
        f.write("\n".join(lines) + "\n")
    svg(trace, med, oracle, phase_seconds, out_svg)


if __name__ == "__main__":
    main()
