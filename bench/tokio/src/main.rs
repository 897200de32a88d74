// Copyright (c) 2026 The asio_sync authors
//
// Distributed under the Boost Software License, Version 1.0. (See accompanying
// file LICENSE_1_0.txt or copy at https://www.boost.org/LICENSE_1_0.txt)

//! The reference side of bench/uncontended.cpp, bench/contended.cpp, bench/locks.cpp and
//! bench/drain.cpp on Tokio: the same scenarios (task counts, permits, worker threads, operations
//! per task, queued waiters) with tokio::sync's Semaphore, Mutex, RwLock and Barrier, so that the C++
//! figures can be read as ratios against Tokio.
//!
//! Method, as close to the Google Benchmark runs as Tokio allows: one runtime per scenario that
//! lives across batches (so starting workers stays out of the timed region); a batch spawns every
//! task from inside the runtime and waits for all of them; the number of batches per repetition
//! is fixed by a calibration run of at least `--min-time` seconds; wall-clock time per operation;
//! the work is verified after every batch, outside the timed part. Prints the median and the
//! minimum over the repetitions, and with `--json FILE` writes every repetition to FILE.

use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::{Builder, Runtime};
use tokio::sync::{Barrier, Mutex, Notify, RwLock, Semaphore};

/// Counts heap allocations and bytes, for the memory per queued waiter of the drain scenario: the
/// counterpart of the malloc interposer in bench/support/heap_counter.hpp.
struct CountingAllocator;

static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);
static ALLOCATED_BYTES: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        ALLOCATED_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn heap_counts() -> (usize, usize) {
    (
        ALLOCATIONS.load(Ordering::Relaxed),
        ALLOCATED_BYTES.load(Ordering::Relaxed),
    )
}

/// Operations per task per batch, as `rounds` in the C++ benchmarks.
const ROUNDS: u64 = 10_000;

/// One thread means Tokio's current_thread runtime (everything on the thread that calls
/// block_on), the counterpart of an io_context run by one thread; otherwise a multi-thread
/// runtime with that many workers.
fn runtime(threads: usize) -> Runtime {
    let mut builder = if threads == 1 {
        Builder::new_current_thread()
    } else {
        let mut b = Builder::new_multi_thread();
        b.worker_threads(threads);
        b
    };
    builder.build().expect("cannot build the runtime")
}

/// Spawns the tasks from inside the runtime (in order, so that on one thread they all start
/// before the first one runs, as in the C++ side) and returns the sum of what they return.
fn run_tasks<F>(rt: &Runtime, tasks: Vec<F>) -> u64
where
    F: Future<Output = u64> + Send + 'static,
{
    rt.block_on(async move {
        let handles: Vec<_> = tasks.into_iter().map(tokio::spawn).collect();
        let mut total = 0;
        for handle in handles {
            total += handle.await.expect("a task panicked");
        }
        total
    })
}

/// Readers and writers are different futures; boxing lets one batch spawn both.
type BoxedTask = Pin<Box<dyn Future<Output = u64> + Send>>;

/// What one batch did: operations, and the time they took (the timed part of the batch).
struct Batch {
    operations: u64,
    elapsed: Duration,
}

/// Times `work`, which returns the number of operations it did.
fn timed(work: impl FnOnce() -> u64) -> Batch {
    let start = Instant::now();
    let operations = work();
    Batch {
        operations,
        elapsed: start.elapsed(),
    }
}

/// A scenario: a name, a batch that runs the tasks once and checks the work, and counters the
/// batches add to (name, total; divided by the operations when reported).
struct Scenario {
    name: String,
    batch: Box<dyn FnMut() -> Batch>,
    counters: Vec<(&'static str, Arc<AtomicUsize>)>,
}

impl Scenario {
    fn new(name: String, batch: impl FnMut() -> Batch + 'static) -> Scenario {
        Scenario {
            name,
            batch: Box::new(batch),
            counters: Vec::new(),
        }
    }
}

/// One task does ROUNDS try_acquire + drop pairs on a semaphore of one permit, nobody waits: the
/// counterpart of the uncontended try pair.
fn try_pair() -> Scenario {
    let sem = Semaphore::new(1);
    Scenario::new("uncontended try_acquire".to_string(), move || {
        let batch = timed(|| {
            let mut done = 0;
            for _ in 0..ROUNDS {
                let permit = sem.try_acquire();
                done += permit.is_ok() as u64;
                drop(permit);
            }
            done
        });
        assert_eq!(
            batch.operations, ROUNDS,
            "try_acquire failed with a permit free"
        );
        assert_eq!(sem.available_permits(), 1, "a permit went missing");
        batch
    })
}

/// One task on the current_thread runtime does ROUNDS acquire().await + drop pairs on a semaphore
/// of one permit: the counterpart of the uncontended coroutine acquire.
fn uncontended_acquire() -> Scenario {
    let rt = runtime(1);
    let sem = Arc::new(Semaphore::new(1));
    Scenario::new("uncontended acquire().await".to_string(), move || {
        let sem_in_task = sem.clone();
        let batch = timed(|| {
            run_tasks(
                &rt,
                vec![async move {
                    let mut done = 0;
                    for _ in 0..ROUNDS {
                        drop(sem_in_task.acquire().await.expect("semaphore closed"));
                        done += 1;
                    }
                    done
                }],
            )
        });
        assert_eq!(
            batch.operations, ROUNDS,
            "the task fell short of its rounds"
        );
        assert_eq!(sem.available_permits(), 1, "a permit went missing");
        batch
    })
}

/// Tasks share `permits` permits; task i takes `takes[i]` permits per pair and does ROUNDS
/// acquire+release pairs with nothing in between. An operation is one pair.
fn semaphore_scenario(name: String, takes: Vec<u32>, permits: usize, threads: usize) -> Scenario {
    let rt = runtime(threads);
    let sem = Arc::new(Semaphore::new(permits));
    Scenario::new(name, move || {
        let work = takes
            .iter()
            .map(|&n| {
                let sem = sem.clone();
                async move {
                    let mut done = 0;
                    for _ in 0..ROUNDS {
                        // Dropping the permits is the release.
                        drop(sem.acquire_many(n).await.expect("semaphore closed"));
                        done += 1;
                    }
                    done
                }
            })
            .collect();
        let batch = timed(|| run_tasks(&rt, work));
        assert_eq!(
            batch.operations,
            takes.len() as u64 * ROUNDS,
            "a task fell short of its rounds"
        );
        assert_eq!(sem.available_permits(), permits, "a permit went missing");
        batch
    })
}

/// `tasks` tasks share `permits` permits, one per pair.
fn semaphore(tasks: usize, permits: usize, threads: usize) -> Scenario {
    semaphore_scenario(
        format!("semaphore tasks:{tasks} permits:{permits} threads:{threads}"),
        vec![1; tasks],
        permits,
        threads,
    )
}

/// Three tasks take 4, 10 and 8 of 10 permits per pair, on two threads.
fn mixed() -> Scenario {
    semaphore_scenario(
        "semaphore mixed 4,10,8 of 10 permits threads:2".to_string(),
        vec![4, 10, 8],
        10,
        2,
    )
}

/// QUEUED_WAITERS tasks wait on a semaphore with no free permit, then one permit is added and
/// every woken task drops the permit it was given, handing it to the next: the counterpart of
/// bench/drain.cpp, on the current_thread runtime. An operation is one hand-off; queueing is
/// outside the timed part, and the allocations and bytes it took are counted per waiter.
fn drain() -> Scenario {
    const QUEUED_WAITERS: u64 = 1_000_000;
    let rt = runtime(1);
    let sem = Arc::new(Semaphore::new(0));
    let allocations = Arc::new(AtomicUsize::new(0));
    let bytes = Arc::new(AtomicUsize::new(0));
    let mut scenario = Scenario::new(format!("drain waiters:{QUEUED_WAITERS}"), {
        let allocations = allocations.clone();
        let bytes = bytes.clone();
        move || {
            let sem = sem.clone();
            let allocations = allocations.clone();
            let bytes = bytes.clone();
            rt.block_on(async move {
                let queued = Arc::new(AtomicU64::new(0));
                let woken = Arc::new(AtomicU64::new(0));
                let all_woken = Arc::new(Notify::new());
                let (allocations_before, bytes_before) = heap_counts();
                for _ in 0..QUEUED_WAITERS {
                    let sem = sem.clone();
                    let queued = queued.clone();
                    let woken = woken.clone();
                    let all_woken = all_woken.clone();
                    tokio::spawn(async move {
                        // The acquire joins the queue in this same poll, on this one thread.
                        queued.fetch_add(1, Ordering::Relaxed);
                        let permit = sem.acquire().await.expect("semaphore closed");
                        if woken.fetch_add(1, Ordering::Relaxed) + 1 == QUEUED_WAITERS {
                            all_woken.notify_one();
                        }
                        drop(permit);
                    });
                }
                while queued.load(Ordering::Relaxed) < QUEUED_WAITERS {
                    tokio::task::yield_now().await;
                }
                let (allocations_after, bytes_after) = heap_counts();
                allocations.fetch_add(allocations_after - allocations_before, Ordering::Relaxed);
                bytes.fetch_add(bytes_after - bytes_before, Ordering::Relaxed);

                let start = Instant::now();
                sem.add_permits(1);
                all_woken.notified().await;
                let elapsed = start.elapsed();

                // The last waiter has given its permit back; take it out of play again.
                sem.acquire().await.expect("semaphore closed").forget();
                assert_eq!(
                    woken.load(Ordering::Relaxed),
                    QUEUED_WAITERS,
                    "a waiter was not woken"
                );
                assert_eq!(sem.available_permits(), 0, "a permit went missing");
                Batch {
                    operations: QUEUED_WAITERS,
                    elapsed,
                }
            })
        }
    });
    scenario.counters = vec![
        ("allocs_per_waiter", allocations),
        ("bytes_per_waiter", bytes),
    ];
    scenario
}

/// `tasks` tasks each do ROUNDS lock/increment/unlock on a plain integer. An operation is one
/// lock+unlock.
fn mutex(tasks: usize, threads: usize) -> Scenario {
    let rt = runtime(threads);
    let counter = Arc::new(Mutex::new(0u64));
    Scenario::new(
        format!("mutex tasks:{tasks} threads:{threads}"),
        move || {
            *counter.try_lock().expect("mutex left locked") = 0;
            let work = (0..tasks)
                .map(|_| {
                    let counter = counter.clone();
                    async move {
                        for _ in 0..ROUNDS {
                            *counter.lock().await += 1;
                        }
                        ROUNDS
                    }
                })
                .collect();
            let batch = timed(|| run_tasks(&rt, work));
            let total = *counter.try_lock().expect("mutex left locked");
            assert_eq!(total, tasks as u64 * ROUNDS, "increments lost");
            batch
        },
    )
}

/// Two tasks take turns, each waking the other once per round: the counterpart of the notify
/// hand-off (bench/notify.cpp). The turn is guarded by a Mutex, as the C++ side's by its
/// asio_sync::mutex; `to[i]` wakes task i. Its `notified()` future is made before the turn is
/// checked, so a notify_one between the check and the await is kept, not lost. An operation is
/// one hand-off.
fn notify(threads: usize) -> Scenario {
    let rt = runtime(threads);
    let turn = Arc::new(Mutex::new(0usize));
    let to = Arc::new([Notify::new(), Notify::new()]);
    Scenario::new(format!("notify handoff threads:{threads}"), move || {
        *turn.try_lock().expect("mutex left locked") = 0;
        let work = (0..2usize)
            .map(|me| {
                let turn = turn.clone();
                let to = to.clone();
                async move {
                    for _ in 0..ROUNDS {
                        loop {
                            let notified = to[me].notified();
                            if *turn.lock().await == me {
                                break;
                            }
                            notified.await;
                        }
                        *turn.lock().await = 1 - me;
                        to[1 - me].notify_one();
                    }
                    ROUNDS
                }
            })
            .collect();
        let batch = timed(|| run_tasks(&rt, work));
        assert_eq!(batch.operations, 2 * ROUNDS, "hand-offs lost");
        batch
    })
}

/// `tasks` tasks each wait ROUNDS times on a barrier of `tasks` parties: the counterpart of
/// bench/barrier.cpp. An operation is one phase.
fn barrier(tasks: usize, threads: usize) -> Scenario {
    let rt = runtime(threads);
    Scenario::new(
        format!("barrier tasks:{tasks} threads:{threads}"),
        move || {
            let b = Arc::new(Barrier::new(tasks));
            let leaders = Arc::new(AtomicU64::new(0));
            let work = (0..tasks)
                .map(|_| {
                    let b = b.clone();
                    let leaders = leaders.clone();
                    async move {
                        for _ in 0..ROUNDS {
                            if b.wait().await.is_leader() {
                                leaders.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        ROUNDS
                    }
                })
                .collect();
            let batch = timed(|| run_tasks(&rt, work) / tasks as u64);
            assert_eq!(leaders.load(Ordering::Relaxed), ROUNDS, "a phase without exactly one leader");
            batch
        },
    )
}

/// Two fields a writer changes one after the other; a reader that sees them differ saw a
/// half-done write, which the lock must make impossible.
#[derive(Default)]
struct Pair {
    a: u64,
    b: u64,
}

/// `readers` tasks each do ROUNDS read-lock/read/unlock, `writers` tasks each do ROUNDS
/// write-lock/write/unlock. Readers are spawned first. An operation is one lock+unlock of
/// either kind.
fn rwlock(readers: usize, writers: usize, threads: usize) -> Scenario {
    let rt = runtime(threads);
    let data = Arc::new(RwLock::new(Pair::default()));
    let torn = Arc::new(AtomicU64::new(0));
    Scenario::new(
        format!("rwlock readers:{readers} writers:{writers} threads:{threads}"),
        move || {
            *data.try_write().expect("rwlock left locked") = Pair::default();
            let mut work: Vec<BoxedTask> = Vec::new();
            for _ in 0..readers {
                let data = data.clone();
                let torn = torn.clone();
                work.push(Box::pin(async move {
                    let mut bad = 0;
                    for _ in 0..ROUNDS {
                        let pair = data.read().await;
                        if pair.a != pair.b {
                            bad += 1;
                        }
                    }
                    torn.fetch_add(bad, Ordering::Relaxed);
                    ROUNDS
                }));
            }
            for _ in 0..writers {
                let data = data.clone();
                work.push(Box::pin(async move {
                    for _ in 0..ROUNDS {
                        let mut pair = data.write().await;
                        pair.a += 1;
                        pair.b += 1;
                    }
                    ROUNDS
                }));
            }
            let batch = timed(|| run_tasks(&rt, work));
            let pair = data.try_read().expect("rwlock left locked");
            assert_eq!(pair.a, writers as u64 * ROUNDS, "writes lost");
            assert_eq!(pair.b, pair.a, "writes lost");
            assert_eq!(
                torn.load(Ordering::Relaxed),
                0,
                "a reader saw a half-done write"
            );
            assert_eq!(
                batch.operations,
                (readers + writers) as u64 * ROUNDS,
                "a task fell short of its rounds"
            );
            batch
        },
    )
}

/// Nanoseconds per operation for each repetition, and the operations of all repetitions.
fn measure(scenario: &mut Scenario, repetitions: usize, min_time: Duration) -> (Vec<f64>, u64) {
    // Calibration, which doubles as the warm-up: how many batches fill `min_time` of timed work.
    let mut timed_so_far = Duration::ZERO;
    let mut batches = 0u32;
    while batches == 0 || timed_so_far < min_time {
        timed_so_far += (scenario.batch)().elapsed;
        batches += 1;
    }
    for (_, total) in &scenario.counters {
        total.store(0, Ordering::Relaxed);
    }
    let mut all_operations = 0;
    let times = (0..repetitions)
        .map(|_| {
            let mut elapsed = Duration::ZERO;
            let mut operations = 0;
            for _ in 0..batches {
                let batch = (scenario.batch)();
                elapsed += batch.elapsed;
                operations += batch.operations;
            }
            all_operations += operations;
            elapsed.as_nanos() as f64 / operations as f64
        })
        .collect();
    (times, all_operations)
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// A JSON string literal; scenario names hold no character that needs more than this.
fn json_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

fn main() {
    let mut repetitions = 5usize;
    let mut min_time = 0.5f64;
    let mut filter = String::new();
    let mut json_path: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |what: &str| {
            args.next()
                .unwrap_or_else(|| panic!("{what} needs a value"))
        };
        match arg.as_str() {
            "--repetitions" => {
                repetitions = value("--repetitions")
                    .parse()
                    .expect("--repetitions: a number")
            }
            "--min-time" => min_time = value("--min-time").parse().expect("--min-time: seconds"),
            "--filter" => filter = value("--filter"),
            "--json" => json_path = Some(value("--json")),
            _ => {
                eprintln!("usage: tokio_locks [--repetitions N] [--min-time SECONDS] [--filter SUBSTRING] [--json FILE]");
                std::process::exit(2);
            }
        }
    }
    assert!(repetitions > 0, "--repetitions must be positive");

    // Built one at a time, so that only the runtime being measured has worker threads.
    let scenarios: Vec<Box<dyn Fn() -> Scenario>> = vec![
        Box::new(try_pair),
        Box::new(uncontended_acquire),
        Box::new(|| semaphore(8, 2, 2)),
        Box::new(|| semaphore(16, 1, 2)),
        Box::new(|| semaphore(6, 10, 1)),
        Box::new(|| semaphore(6, 10, 2)),
        Box::new(|| semaphore(6, 5, 1)),
        Box::new(|| semaphore(6, 5, 2)),
        Box::new(mixed),
        Box::new(|| mutex(4, 2)),
        Box::new(|| rwlock(4, 2, 2)),
        Box::new(|| barrier(4, 2)),
        Box::new(|| notify(2)),
        Box::new(drain),
    ];

    println!("Tokio 1.24, {repetitions} repetitions, ns per operation");
    println!("{:<48} {:>10} {:>10}", "scenario", "median", "min");
    let mut json_results = Vec::new();
    for make in &scenarios {
        let mut scenario = make();
        if !scenario.name.contains(&filter) {
            continue;
        }
        let (mut times, operations) = measure(
            &mut scenario,
            repetitions,
            Duration::from_secs_f64(min_time),
        );
        let counters: Vec<(&str, f64)> = scenario
            .counters
            .iter()
            .map(|(name, total)| {
                (
                    *name,
                    total.load(Ordering::Relaxed) as f64 / operations as f64,
                )
            })
            .collect();
        let mut json = format!(
            "{{\"name\": {}, \"ns_per_op\": [",
            json_string(&scenario.name)
        );
        let samples: Vec<String> = times.iter().map(|t| format!("{t:.3}")).collect();
        json += &samples.join(", ");
        json += "], \"counters\": {";
        let fields: Vec<String> = counters
            .iter()
            .map(|(name, value)| format!("{}: {value:.3}", json_string(name)))
            .collect();
        json += &fields.join(", ");
        json += "}}";
        json_results.push(json);

        let min = times.iter().cloned().fold(f64::INFINITY, f64::min);
        let mut line = format!(
            "{:<48} {:>10.1} {:>10.1}",
            scenario.name,
            median(&mut times),
            min
        );
        for (name, value) in &counters {
            let _ = write!(line, " {name}={value:.1}");
        }
        println!("{line}");
    }
    if let Some(path) = json_path {
        let text = format!(
            "{{\"implementation\": \"tokio 1.24\", \"repetitions\": {repetitions}, \"results\": [\n  {}\n]}}\n",
            json_results.join(",\n  ")
        );
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("cannot write {path}: {e}"));
    }
}
