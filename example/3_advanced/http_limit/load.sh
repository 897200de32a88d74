#!/usr/bin/env bash
# Copyright (c) 2026 The asio_sync authors
#
# Distributed under the Boost Software License, Version 1.0. (See accompanying
# file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

# Puts http_limit under load with wrk, once with its limits and once without (--no-limit), and
# prints wrk's throughput and latency for both, next to the server's own summary.
#
#   bash example/3_advanced/http_limit/load.sh [--duration SECONDS] [--connections N] [--threads N]
#
# Installs wrk (and the build tools) with apt-get if they are missing, builds the server in
# Release mode under build/load, and talks to it on 127.0.0.1 only.
#
# wrk's connections all come from 127.0.0.1, that is from one client, so the per-client limit is
# set out of the way here (64, no queue): the run measures the global limit and its bounded queue.
# The per-client limit is exercised by the server's --self-test, whose clients use several
# addresses. wrk does not back off on a 503: it sends the next request at once, so the refused
# requests are as many as the server can answer, and their cost shows in the served ones.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
duration=5
connections=64
wrk_threads=2
limits=(--global 8 --global-queue 8 --per-client 64 --client-queue 0 --queue-timeout 100)
backend=(--backend-slots 8 --work 2 --threads 2)

usage() {
    sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

while [[ $# -gt 0 ]]; do
    case "$1" in
    --duration) duration=$2; shift 2 ;;
    --connections) connections=$2; shift 2 ;;
    --threads) wrk_threads=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
    esac
done

as_root=()
if [[ $EUID -ne 0 ]]; then
    as_root=(sudo)
fi
if ! command -v wrk >/dev/null 2>&1; then
    echo "load.sh: installing wrk"
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
    "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y wrk
fi
bash "$root/scripts/deps" demo

cmake -S "$root" -B "$root/build/load" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DASIO_SYNC_BUILD_TESTS=OFF -DASIO_SYNC_BUILD_EXAMPLES=ON -DASIO_SYNC_BUILD_BENCHMARKS=OFF >/dev/null
cmake --build "$root/build/load" --target http_limit
server="$root/build/load/example/http_limit"

work_dir=$(mktemp -d)
server_pid=
cleanup() {
    if [[ -n "$server_pid" ]]; then
        kill "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work_dir"
}
trap cleanup EXIT

# Converts a wrk duration ("812.00us", "3.52ms", "1.02s") to milliseconds.
to_ms() {
    awk -v t="$1" 'BEGIN {
        if (t ~ /us$/) printf "%.2f", t / 1000; else if (t ~ /ms$/) printf "%.2f", t + 0;
        else if (t ~ /m$/) printf "%.2f", t * 60000; else printf "%.2f", t * 1000 }'
}

declare -A result
# run NAME [server options...]: starts the server, runs wrk against it, stops the server with
# SIGTERM and records the figures under NAME.
run() {
    local name=$1
    shift
    local log="$work_dir/$name.server" wrk_log="$work_dir/$name.wrk"
    "$server" --port 0 "${backend[@]}" "$@" >"$log" 2>&1 &
    server_pid=$!
    local port=
    for _ in $(seq 100); do
        port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\).*/\1/p' "$log")
        [[ -n "$port" ]] && break
        sleep 0.05
    done
    if [[ -z "$port" ]]; then
        echo "load.sh: the server did not start:" >&2
        cat "$log" >&2
        exit 1
    fi

    echo
    echo "=== $name: wrk -t$wrk_threads -c$connections -d${duration}s --latency http://127.0.0.1:$port/"
    wrk -t"$wrk_threads" -c"$connections" -d"${duration}s" --latency "http://127.0.0.1:$port/" | tee "$wrk_log"
    kill -TERM "$server_pid"
    local status=0
    wait "$server_pid" || status=$?
    server_pid=
    echo "--- the server's summary"
    sed -n '/^summary/,$p' "$log"
    if [[ $status -ne 0 ]]; then
        echo "load.sh: the server exited with status $status" >&2
        exit 1
    fi

    local requests rps non_2xx
    requests=$(awk '/requests in/ { print $1 }' "$wrk_log")
    rps=$(awk '/^Requests\/sec:/ { print $2 }' "$wrk_log")
    non_2xx=$(awk '/Non-2xx or 3xx responses:/ { print $5 }' "$wrk_log")
    non_2xx=${non_2xx:-0}
    result[$name.rps]=$rps
    result[$name.ok_rps]=$(awk -v r="$requests" -v n="$non_2xx" -v t="$rps" 'BEGIN { printf "%.0f", t * (r - n) / r }')
    result[$name.busy_rps]=$(awk -v r="$requests" -v n="$non_2xx" -v t="$rps" 'BEGIN { printf "%.0f", t * n / r }')
    result[$name.avg]=$(to_ms "$(awk '/^ *Latency / { print $2; exit }' "$wrk_log")")
    result[$name.p50]=$(to_ms "$(awk '$1 == "50%" { print $2 }' "$wrk_log")")
    result[$name.p99]=$(to_ms "$(awk '$1 == "99%" { print $2 }' "$wrk_log")")
    result[$name.ok_p99]=$(sed -n 's/.*server time, 200 .*p99 \([0-9.]*\) ms.*/\1/p' "$log")
    result[$name.peak]=$(sed -n 's/.*peak in flight *global \([0-9]*\).*/\1/p' "$log")
}

run limited "${limits[@]}"
run unlimited --no-limit

echo
echo "=== $connections connections for ${duration} s; backend: 8 slots, 2 ms per request, slower when overloaded"
printf '%-10s %12s %8s %8s %10s %10s %10s %14s %10s\n' "" "requests/s" "200/s" "503/s" "avg (ms)" \
    "p50 (ms)" "p99 (ms)" "200 p99 (ms)" "in flight"
for name in limited unlimited; do
    printf '%-10s %12s %8s %8s %10s %10s %10s %14s %10s\n' "$name" "${result[$name.rps]}" \
        "${result[$name.ok_rps]}" "${result[$name.busy_rps]}" "${result[$name.avg]}" "${result[$name.p50]}" \
        "${result[$name.p99]}" "${result[$name.ok_p99]}" "${result[$name.peak]}"
done
echo "(latencies from wrk cover every response, 503s included; \"200 p99\" is the server's own time"
echo " for the requests it served, from request read to response ready)"
