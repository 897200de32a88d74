//! The reference side of bench/contended.cpp and bench/locks.cpp on Tokio: the same scenarios
//! (task counts, permits, worker threads, operations per task) with tokio::sync's Semaphore,
//! Mutex and RwLock, so that the C++ figures can be read as ratios against Tokio.
//!
//! Method, as close to the Google Benchmark runs as Tokio allows: one runtime per scenario that
//! lives across batches (so starting workers stays out of the timed region); a batch spawns every
//! task from inside the runtime and waits for all of them; the number of batches per repetition
//! is fixed by a calibration run of at least `--min-time` seconds; wall-clock time per operation;
//! the work is verified after every batch. Prints the median and the minimum over the repetitions.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::runtime::{Builder, Runtime};
use tokio::sync::{Mutex, RwLock, Semaphore};

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

/// A scenario: a name, and a batch that runs the tasks once, checks the work and returns the
/// number of operations it did.
struct Scenario {
    name: String,
    batch: Box<dyn FnMut() -> u64>,
}

/// `tasks` tasks share `permits` permits; each does ROUNDS acquire+release pairs with nothing in
/// between. An operation is one pair.
fn semaphore(tasks: usize, permits: usize, threads: usize) -> Scenario {
    let rt = runtime(threads);
    let sem = Arc::new(Semaphore::new(permits));
    Scenario {
        name: format!("semaphore tasks:{tasks} permits:{permits} threads:{threads}"),
        batch: Box::new(move || {
            let work = (0..tasks)
                .map(|_| {
                    let sem = sem.clone();
                    async move {
                        let mut done = 0;
                        for _ in 0..ROUNDS {
                            // Dropping the permit is the release.
                            drop(sem.acquire().await.expect("semaphore closed"));
                            done += 1;
                        }
                        done
                    }
                })
                .collect();
            let done = run_tasks(&rt, work);
            assert_eq!(
                done,
                tasks as u64 * ROUNDS,
                "a task fell short of its rounds"
            );
            assert_eq!(sem.available_permits(), permits, "a permit went missing");
            done
        }),
    }
}

/// `tasks` tasks each do ROUNDS lock/increment/unlock on a plain integer. An operation is one
/// lock+unlock.
fn mutex(tasks: usize, threads: usize) -> Scenario {
    let rt = runtime(threads);
    let counter = Arc::new(Mutex::new(0u64));
    Scenario {
        name: format!("mutex tasks:{tasks} threads:{threads}"),
        batch: Box::new(move || {
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
            let done = run_tasks(&rt, work);
            let total = *counter.try_lock().expect("mutex left locked");
            assert_eq!(total, tasks as u64 * ROUNDS, "increments lost");
            done
        }),
    }
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
    Scenario {
        name: format!("rwlock readers:{readers} writers:{writers} threads:{threads}"),
        batch: Box::new(move || {
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
            let done = run_tasks(&rt, work);
            let pair = data.try_read().expect("rwlock left locked");
            assert_eq!(pair.a, writers as u64 * ROUNDS, "writes lost");
            assert_eq!(pair.b, pair.a, "writes lost");
            assert_eq!(
                torn.load(Ordering::Relaxed),
                0,
                "a reader saw a half-done write"
            );
            assert_eq!(
                done,
                (readers + writers) as u64 * ROUNDS,
                "a task fell short of its rounds"
            );
            done
        }),
    }
}

/// Nanoseconds per operation for each repetition.
fn measure(scenario: &mut Scenario, repetitions: usize, min_time: Duration) -> Vec<f64> {
    // Calibration, which doubles as the warm-up: how many batches fill `min_time`.
    let start = Instant::now();
    let mut batches = 0u32;
    while batches == 0 || start.elapsed() < min_time {
        (scenario.batch)();
        batches += 1;
    }
    (0..repetitions)
        .map(|_| {
            let start = Instant::now();
            let mut ops = 0;
            for _ in 0..batches {
                ops += (scenario.batch)();
            }
            start.elapsed().as_nanos() as f64 / ops as f64
        })
        .collect()
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

fn main() {
    let mut repetitions = 5usize;
    let mut min_time = 0.5f64;
    let mut filter = String::new();
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
            _ => {
                eprintln!("usage: tokio_locks [--repetitions N] [--min-time SECONDS] [--filter SUBSTRING]");
                std::process::exit(2);
            }
        }
    }
    assert!(repetitions > 0, "--repetitions must be positive");

    // Built one at a time, so that only the runtime being measured has worker threads.
    let scenarios: Vec<Box<dyn Fn() -> Scenario>> = vec![
        Box::new(|| semaphore(8, 2, 2)),
        Box::new(|| semaphore(16, 1, 2)),
        Box::new(|| semaphore(6, 10, 1)),
        Box::new(|| semaphore(6, 5, 2)),
        Box::new(|| mutex(4, 2)),
        Box::new(|| rwlock(4, 2, 2)),
    ];

    println!("Tokio 1.24, {repetitions} repetitions, ns per operation");
    println!("{:<44} {:>10} {:>10}", "scenario", "median", "min");
    for make in &scenarios {
        let mut scenario = make();
        if !scenario.name.contains(&filter) {
            continue;
        }
        let mut times = measure(
            &mut scenario,
            repetitions,
            Duration::from_secs_f64(min_time),
        );
        let min = times.iter().cloned().fold(f64::INFINITY, f64::min);
        println!(
            "{:<44} {:>10.1} {:>10.1}",
            scenario.name,
            median(&mut times),
            min
        );
    }
}
