//! `typhon-live demo`: an instrumented sample runtime. A "Sim" thread runs
//! the Tick system at a fixed rate: each of its systems fans its queries
//! out to worker threads, then does its own work; a memory gauge climbs
//! like a soak test, and every ten seconds the AI system stalls on purpose
//! for 1.2 s: it sleeps, spins, or waits for a lock another thread holds
//! (`--stall-kind`). Its random draws are seeded (`--seed`), and a
//! system's own work can be made slower (`--slow`): runs to `compare`.

use std::hint::black_box;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use typhon_live_core::{Compression, LaneKind, Level};
use typhon_live_std::config::{
    ConfigError, ConfigLayer, ProfilerConfig, CONFIG_FILE, DEFAULT_LIVE_PORT,
};
use typhon_live_std::metadata::{OwnedComponent, OwnedMetadata};
use typhon_live_std::{runtime, texts, Profiler};

use crate::cmd::remote::RemoteOptions;
use crate::cmd::{attach, web};
use crate::error::CliError;

/// What the demo runs: the `demo` subcommand's arguments. The profiler's
/// settings are layered as for any instrumented process:
/// `typhon.telemetry.json` in the working directory < `TYPHON__PROFILER__*`
/// variables < these flags; the demo only adds a default port, 9100.
#[derive(clap::Args)]
pub struct DemoOptions {
    /// Port to export on; 0 picks a free one [default: the configuration's
    /// `Live`, else 9100].
    #[arg(long)]
    pub live: Option<u16>,
    /// Address to listen on (loopback unless you mean otherwise)
    /// [default: the configuration's `BindAddress`, else 127.0.0.1].
    #[arg(long)]
    pub bind_address: Option<IpAddr>,
    /// Wait at most this many milliseconds for a viewer before running
    /// [default: the configuration's `LiveWaitMs`, else 0].
    #[arg(long, value_name = "MS")]
    pub live_wait: Option<u64>,
    /// Also write the stream to this trace file [default: the
    /// configuration's `Trace`].
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// LZ4 over each Block: off, lz4 (always) or auto (when it saves at
    /// least 1/16) [default: the configuration's `Compression`, else auto].
    #[arg(long, value_name = "off|lz4|auto")]
    pub compression: Option<Compression>,
    /// Events each recording thread's ring holds between drains: a power
    /// of two from 1024 to 65536 [default: the configuration's
    /// `RingEvents`, else 16384].
    #[arg(long, value_name = "N")]
    pub ring_events: Option<usize>,
    /// Each thread's call stack sampled this often a second of its time
    /// on a CPU, where the system allows it (Linux); 0: never [default:
    /// the configuration's `StackSampleHz`, else 1000 for the demo].
    #[arg(long, value_name = "HZ", value_parser = clap::value_parser!(u32).range(0..=10_000))]
    pub stack_sample_hz: Option<u32>,
    /// Worker threads.
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Simulation ticks per second.
    #[arg(long, default_value_t = 60.0, value_parser = crate::positive)]
    pub tick_rate: f64,
    /// Stop after this many seconds.
    #[arg(long, value_parser = crate::seconds)]
    pub duration: Option<Duration>,
    /// Do not attach the live view; just export.
    #[arg(long)]
    pub no_view: bool,
    /// Serve the browser viewer instead of the terminal view, on this
    /// port of loopback (`--web` alone picks one); the URL to open is
    /// printed.
    #[arg(long, value_name = "PORT", num_args = 0..=1, default_missing_value = "0")]
    pub web: Option<u16>,
    /// Record the spans and events through `tracing` and the typhon-live
    /// layer (typhon-live-tracing) instead of the direct API.
    #[arg(long)]
    pub via_tracing: bool,
    /// How the AI system stalls every 10 s: it sleeps, spins on a CPU,
    /// or waits for a lock another thread holds.
    #[arg(long, value_enum, default_value_t = StallKind::Sleep)]
    pub stall_kind: StallKind,
    /// Leak this many bytes a second on purpose, from one function
    /// (`cache_replay_frame`): a soak test's leak to find by its site.
    #[arg(long, value_name = "BYTES_PER_S", default_value_t = 0)]
    pub leak: u64,
    /// Seed of the demo's random draws (each query's entities, each
    /// system's own work): two runs with one seed draw the same.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Multiply the time system NAME spends in its own work (its self
    /// time, beside the queries every system shares) by F; repeatable:
    /// `--slow Sim.Physics=1.10` is a 10 % regression to find.
    #[arg(long, value_name = "NAME=F", value_parser = slowdown)]
    pub slow: Vec<(usize, f64)>,
}

/// `--slow`'s `NAME=F`: the system's index, and the factor.
fn slowdown(text: &str) -> Result<(usize, f64), String> {
    let (name, factor) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?} is not NAME=F (e.g. Sim.Physics=1.10)"))?;
    let system = SYSTEMS
        .iter()
        .position(|s| *s == name.trim())
        .ok_or_else(|| {
            format!(
                "{name:?} is not a system of the demo: {}",
                SYSTEMS.join(", ")
            )
        })?;
    let factor = crate::positive(factor.trim())?;
    Ok((system, factor))
}

/// How often the demo samples each thread's stack, unless configured.
const DEMO_STACK_HZ: u32 = 1000;

/// What the Sim thread runs: the demo's options that shape its work.
struct Workload {
    threads: usize,
    tick_rate: f64,
    via_tracing: bool,
    stall_kind: StallKind,
    leak: u64,
    seed: u64,
    /// Each system's own work, multiplied by this.
    slow: [f64; SYSTEMS.len()],
}

impl Workload {
    fn of(opts: &DemoOptions) -> Workload {
        let mut slow = [1.0; SYSTEMS.len()];
        for &(system, factor) in &opts.slow {
            slow[system] *= factor;
        }
        Workload {
            threads: opts.threads,
            tick_rate: opts.tick_rate,
            via_tracing: opts.via_tracing,
            stall_kind: opts.stall_kind,
            leak: opts.leak,
            seed: opts.seed,
            slow,
        }
    }
}

/// The demo's random draws, seeded (`--seed`).
struct Draws(SmallRng);

impl Draws {
    fn new(seed: u64) -> Draws {
        Draws(SmallRng::seed_from_u64(seed))
    }

    /// Uniform below `max`.
    fn below(&mut self, max: u64) -> u64 {
        self.0.random_range(0..max.max(1))
    }

    /// A system's own work this tick, around `median` ns: from 0.8 to 1.2
    /// of it, most often near it (the sum of two uniform draws), and one
    /// tick in 50 three times as long (a cache gone cold), as measured
    /// work is skewed with a heavy tail.
    fn own_work(&mut self, median: u64) -> f64 {
        let spread = 0.8 + 0.2 * (self.0.random::<f64>() + self.0.random::<f64>());
        let tail = if self.below(50) == 0 { 3.0 } else { 1.0 };
        median as f64 * spread * tail
    }
}

/// The demo's leak: each tick, its share of the bytes a second is kept
/// for good, in blocks of [`LEAK_BLOCK`] bytes.
struct Leak {
    per_tick: f64,
    owed: f64,
    kept: Vec<Box<[u8]>>,
}

/// The leak's blocks: a replay frame's worth.
const LEAK_BLOCK: usize = 16 << 10;

impl Leak {
    fn new(per_second: u64, tick_rate: f64) -> Leak {
        Leak {
            per_tick: per_second as f64 / tick_rate,
            owed: 0.0,
            kept: Vec::new(),
        }
    }

    /// Whether it leaks at all.
    fn leaks(&self) -> bool {
        self.per_tick > 0.0
    }

    fn tick(&mut self) {
        self.owed += self.per_tick;
        while self.owed >= LEAK_BLOCK as f64 {
            self.owed -= LEAK_BLOCK as f64;
            cache_replay_frame(&mut self.kept);
        }
    }
}

/// The spin stall's code: path planning gone quadratic, three calls
/// deep, each a frame of its own, so that its sampled stacks name where
/// the second went (`evaluate_route`, under `score_candidates`, under
/// `plan_paths`).
#[inline(never)]
fn plan_paths(until: Instant) -> u64 {
    let mut best = 0;
    while Instant::now() < until {
        best = best.max(score_candidates(best));
    }
    best
}

#[inline(never)]
fn score_candidates(seed: u64) -> u64 {
    (0..64).map(|c| evaluate_route(seed ^ c)).max().unwrap_or(0)
}

#[inline(never)]
fn evaluate_route(route: u64) -> u64 {
    let mut x = route;
    for _ in 0..256 {
        x = black_box(
            x.wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407),
        );
    }
    x
}

/// Where the demo leaks (`--leak`): a frame kept "for a replay" that
/// nothing ever plays or frees. Not inlined, so that its site names it.
#[inline(never)]
fn cache_replay_frame(cache: &mut Vec<Box<[u8]>>) {
    cache.push(vec![0x5a; LEAK_BLOCK].into_boxed_slice());
}

/// How the AI system stalls: the ground truth of each lane's CPU
/// (docs/FORMAT.md, "Samples"): the three look alike as spans, and apart
/// on a CPU.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum StallKind {
    /// It sleeps: off a CPU, of its own accord.
    #[default]
    Sleep,
    /// It spins: on a CPU throughout.
    Spin,
    /// It waits for a lock that the `lock-holder` thread holds for the
    /// stall's length (a span `lock held` there).
    Contended,
}

/// Stalls as its kind says; a contended stall's lock and its holder.
struct Staller {
    kind: StallKind,
    holder: Option<Holder>,
}

/// The `lock-holder` thread's end of a contended stall.
struct Holder {
    /// Asks it to take the lock.
    ask: mpsc::Sender<()>,
    /// It says it holds it.
    told: mpsc::Receiver<()>,
    lock: Arc<Mutex<()>>,
}

impl Staller {
    fn new(kind: StallKind) -> Staller {
        let holder = (kind == StallKind::Contended).then(|| {
            let lock = Arc::new(Mutex::new(()));
            let (ask, asked) = mpsc::channel::<()>();
            let (held, told) = mpsc::channel::<()>();
            let lock_there = Arc::clone(&lock);
            let spawned = std::thread::Builder::new()
                .name("lock-holder".into())
                .spawn(move || {
                    runtime::register_thread("lock-holder", LaneKind::Worker);
                    let held_name = intern("lock held");
                    while asked.recv().is_ok() {
                        let guard = lock_there.lock().unwrap_or_else(|p| p.into_inner());
                        let span = runtime::span(held_name);
                        let _ = held.send(());
                        std::thread::sleep(STALL);
                        drop(span);
                        drop(guard);
                    }
                });
            if let Err(e) = spawned {
                eprintln!("typhon-live demo: no lock-holder thread ({e}): the stalls sleep");
            }
            Holder { ask, told, lock }
        });
        Staller { kind, holder }
    }

    /// What the stall does, for the log line.
    fn says(&self) -> &'static str {
        match self.kind {
            StallKind::Sleep => "sleeps",
            StallKind::Spin => "spins on a CPU",
            StallKind::Contended => "waits for a lock another thread holds",
        }
    }

    fn stall(&self) {
        match (self.kind, &self.holder) {
            (StallKind::Spin, _) => {
                black_box(plan_paths(Instant::now() + STALL));
            }
            (StallKind::Contended, Some(holder)) if holder.ask.send(()).is_ok() => {
                if holder.told.recv().is_ok() {
                    drop(holder.lock.lock().unwrap_or_else(|p| p.into_inner()));
                }
            }
            _ => std::thread::sleep(STALL),
        }
    }
}

const SYSTEMS: [&str; 5] = [
    "Sim.Input",
    "Sim.Physics",
    "Sim.AI",
    "Sim.Animation",
    "Sim.Render",
];
/// Each system's own work a tick, its median in ns: done on the Sim
/// thread once the workers ran its queries (`--slow` multiplies it).
/// Longer than its queries' round trip, so that a system's span is its
/// own work more than the wake-ups of the threads it waits for.
const OWN_WORK_NS: [u64; SYSTEMS.len()] = [800_000, 2_000_000, 1_000_000, 800_000, 900_000];
const QUERIES: [&str; 4] = [
    "Query<Transform, Velocity>",
    "Query<Collider>",
    "Query<Brain, Transform>",
    "Query<Skeleton>",
];
/// Every this many seconds the AI system stalls, longer than the catch-up
/// period, so that the view shows it open while it happens.
const STALL_EVERY_SECONDS: f64 = 10.0;
const STALL: Duration = Duration::from_millis(1200);

/// A system's queries still running: the last to finish wakes the Sim
/// thread, once (a wake-up per query made the systems' spans mostly the
/// scheduler's latency).
struct Pending {
    left: AtomicUsize,
    sim: std::thread::Thread,
}

impl Pending {
    fn new(queries: usize) -> Pending {
        Pending {
            left: AtomicUsize::new(queries),
            sim: std::thread::current(),
        }
    }

    /// A query is done.
    fn done(&self) {
        if self.left.fetch_sub(1, Ordering::AcqRel) == 1 {
            self.sim.unpark();
        }
    }

    /// Waits until every query is done.
    fn wait(&self) {
        while self.left.load(Ordering::Acquire) > 0 {
            std::thread::park();
        }
    }
}

struct Job {
    /// Index into QUERIES, and its interned name.
    index: usize,
    query: u32,
    entities: u64,
    done: Arc<Pending>,
}

/// A span of the demo, recorded directly or through `tracing`; it ends
/// when dropped.
enum Scope {
    Direct { _span: runtime::SpanGuard },
    Tracing { _span: tracing::span::EnteredSpan },
}

impl Scope {
    fn direct(name: u32, arg: Option<u64>) -> Scope {
        let mut span = runtime::span(name);
        if let Some(arg) = arg {
            span.set_arg(arg);
        }
        Scope::Direct { _span: span }
    }

    fn tracing(span: tracing::Span) -> Scope {
        Scope::Tracing {
            _span: span.entered(),
        }
    }
}

/// System `s`'s `tracing` span. A `tracing` span's name is fixed at its call
/// site, so each system needs its own; a test keeps them equal to SYSTEMS.
fn system_span(s: usize) -> tracing::Span {
    match s {
        0 => tracing::info_span!("Sim.Input"),
        1 => tracing::info_span!("Sim.Physics"),
        2 => tracing::info_span!("Sim.AI"),
        3 => tracing::info_span!("Sim.Animation"),
        _ => tracing::info_span!("Sim.Render"),
    }
}

/// Query `q`'s `tracing` span, with its entity count as the argument.
fn query_span(q: usize, entities: u64) -> tracing::Span {
    match q {
        0 => tracing::info_span!("Query<Transform, Velocity>", entities),
        1 => tracing::info_span!("Query<Collider>", entities),
        2 => tracing::info_span!("Query<Brain, Transform>", entities),
        _ => tracing::info_span!("Query<Skeleton>", entities),
    }
}

/// Spins for about `nanos` nanoseconds: stands in for real work.
fn work(nanos: u64) {
    let until = Instant::now() + Duration::from_nanos(nanos);
    let mut x = 0u64;
    while Instant::now() < until {
        for i in 0..64 {
            x = black_box(x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(i));
        }
    }
}

/// What the demo's Init says about it: a small ECS-shaped runtime.
fn metadata(threads: usize, tick_rate: f64) -> OwnedMetadata {
    let text = |s: &str| s.to_owned();
    let component = |id, name: &str, size, fields: &[(&str, &str, u32, u32)]| OwnedComponent {
        id,
        name: name.into(),
        size,
        fields: fields
            .iter()
            .map(|&(n, t, o, s)| (n.into(), t.into(), o, s))
            .collect(),
    };
    OwnedMetadata {
        process_name: text("typhon-live demo"),
        components: vec![
            component(
                1,
                "Transform",
                28,
                &[("position", "Vec3", 0, 12), ("rotation", "Quat", 12, 16)],
            ),
            component(2, "Velocity", 12, &[("linear", "Vec3", 0, 12)]),
            component(3, "Collider", 16, &[]),
            component(4, "Brain", 64, &[]),
        ],
        archetypes: vec![
            (1, text("Mover"), vec![1, 2]),
            (2, text("Agent"), vec![1, 2, 3, 4]),
        ],
        indexes: vec![(1, text("position"), text("spatial"))],
        config: vec![
            (text("workers"), threads.to_string()),
            (text("tick_rate_hz"), tick_rate.to_string()),
        ],
        queues: vec![(1, text("collisions"), 4096)],
        resources: vec![
            (1, None, text("heap"), text("pool")),
            (2, Some(1), text("entities"), text("buffer")),
        ],
        ..OwnedMetadata::default()
    }
}

fn intern(name: &str) -> u32 {
    runtime::intern(name).unwrap_or(u32::MAX)
}

fn simulate(workload: &Workload, stop: &AtomicBool) {
    let &Workload {
        threads,
        tick_rate,
        via_tracing,
        stall_kind,
        leak,
        seed,
        slow,
    } = workload;
    runtime::register_thread("Sim", LaneKind::Main);
    let mut leak = Leak::new(leak, tick_rate);
    let staller = Staller::new(stall_kind);
    let systems: Vec<u32> = SYSTEMS.iter().map(|s| intern(s)).collect();
    let queries: Vec<u32> = QUERIES.iter().map(|q| intern(q)).collect();
    let (tick_name, memory, entities_gauge, checkpoint, stall, replay) = (
        intern("Tick"),
        intern("memory.bytes"),
        intern("entities"),
        intern("checkpoint"),
        intern("stall"),
        intern("Replay.Cache"),
    );
    let mut workers = Vec::new();
    for i in 0..threads.max(1) {
        let (tx, rx) = mpsc::channel::<Job>();
        let handle = std::thread::Builder::new()
            .name(format!("worker-{i}"))
            .spawn(move || {
                runtime::register_thread(&format!("worker-{i}"), LaneKind::Worker);
                while let Ok(job) = rx.recv() {
                    let span = if via_tracing {
                        Scope::tracing(query_span(job.index, job.entities))
                    } else {
                        Scope::direct(job.query, Some(job.entities))
                    };
                    work(job.entities * 40);
                    drop(span);
                    job.done.done();
                }
            })
            .expect("worker thread");
        workers.push((tx, handle));
    }
    let period = Duration::from_secs_f64(1.0 / tick_rate.max(0.1));
    let stall_every = (STALL_EVERY_SECONDS * tick_rate).max(1.0) as u64;
    let mut next = Instant::now();
    let mut bytes: i64 = 256 << 20;
    let mut draws = Draws::new(seed);
    let mut tick = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let started = Instant::now();
        runtime::tick_start(tick);
        {
            let _tick = if via_tracing {
                Scope::tracing(tracing::info_span!("Tick"))
            } else {
                Scope::direct(tick_name, None)
            };
            for (s, &system) in systems.iter().enumerate() {
                let _system = if via_tracing {
                    Scope::tracing(system_span(s))
                } else {
                    Scope::direct(system, None)
                };
                let pending = Arc::new(Pending::new(workers.len()));
                for (w, (tx, _)) in workers.iter().enumerate() {
                    let index = (s + w) % queries.len();
                    let job = Job {
                        index,
                        query: queries[index],
                        entities: 200 + draws.below(800),
                        done: Arc::clone(&pending),
                    };
                    if let Err(mpsc::SendError(job)) = tx.send(job) {
                        job.done.done();
                    }
                }
                pending.wait();
                // Its own work, on what its queries found.
                work((draws.own_work(OWN_WORK_NS[s]) * slow[s]) as u64);
                if SYSTEMS[s] == "Sim.AI" && tick > 0 && tick.is_multiple_of(stall_every) {
                    if via_tracing {
                        tracing::warn!(tick, "stall");
                    } else {
                        runtime::instant(stall, tick);
                        texts::record(
                            stall,
                            Level::Warn,
                            &format!(
                                "the AI system {} for {} ms on purpose: a stall to find (tick {tick})",
                                staller.says(),
                                STALL.as_millis()
                            ),
                        );
                    }
                    staller.stall();
                }
            }
        }
        if leak.leaks() {
            // In a span of its own: the span list says which code
            // allocates, as the sites say which code holds.
            let _replay = if via_tracing {
                Scope::tracing(tracing::info_span!("Replay.Cache"))
            } else {
                Scope::direct(replay, None)
            };
            leak.tick();
        }
        bytes += 4096 + draws.below(64 << 10) as i64;
        if tick % 600 == 599 {
            bytes -= bytes / 5; // a partial free: the soak's sawtooth
        }
        runtime::gauge(memory, bytes);
        runtime::gauge(entities_gauge, 10_000 + (tick % 1000) as i64);
        if tick.is_multiple_of(60) {
            let entities = 10_000 + tick % 1000;
            if via_tracing {
                tracing::info!(tick, entities, "checkpoint");
            } else {
                runtime::instant(checkpoint, tick);
                texts::record(
                    checkpoint,
                    Level::Info,
                    &format!(
                        "checkpoint at tick {tick}: {entities} entities, {} MiB",
                        bytes >> 20
                    ),
                );
            }
        }
        runtime::tick_end(tick, started.elapsed() > period);
        tick += 1;
        next += period;
        let now = Instant::now();
        if next > now {
            std::thread::sleep(next - now);
        } else {
            next = now; // overran: do not try to catch up
        }
    }
    for (tx, handle) in workers {
        drop(tx);
        let _ = handle.join();
    }
}

/// The demo's profiler settings: its default port, then the zero-code
/// configuration's layers, then its own flags.
fn config(opts: &DemoOptions) -> Result<ProfilerConfig, CliError> {
    let invalid = |e: ConfigError| CliError::Profiler(e.to_string());
    // The demo's own defaults: port 9100, and its stacks sampled (the
    // library samples none unless asked).
    let demo = ConfigLayer {
        live: Some(Some(DEFAULT_LIVE_PORT)),
        stack_sample_hz: Some(DEMO_STACK_HZ),
        ..ConfigLayer::default()
    };
    let file = ConfigLayer::from_file(Path::new(CONFIG_FILE)).map_err(invalid)?;
    let env = ConfigLayer::from_env(std::env::vars()).map_err(invalid)?;
    let flags = ConfigLayer {
        live: opts.live.map(Some),
        live_wait_ms: opts.live_wait,
        bind_address: opts.bind_address,
        trace: opts.trace.clone(),
        compression: opts.compression,
        ring_events: opts.ring_events,
        stack_sample_hz: opts.stack_sample_hz,
        ..ConfigLayer::default()
    };
    let config = ProfilerConfig::layered([&demo, &file, &env, &flags]);
    if !config.enabled || config.live.is_none() {
        return Err(CliError::Profiler(
            "the configuration turns the profiler or its live port off; the demo needs both".into(),
        ));
    }
    Ok(config)
}

/// Runs the demo.
pub fn run(opts: DemoOptions) -> Result<(), CliError> {
    let config = config(&opts)?;
    // Waited for below, once the port (maybe picked by the system) is told.
    let live_wait = config.live_wait;
    let config = ProfilerConfig {
        live_wait: Duration::ZERO,
        ..config
    };
    let profiler = metadata(opts.threads, opts.tick_rate)
        .with(|meta| Profiler::start(&config, &meta))
        .map_err(|e| CliError::Profiler(e.to_string()))?;
    let addr = profiler
        .live_addr()
        .ok_or_else(|| CliError::Profiler("no live address".into()))?;
    if opts.via_tracing {
        use tracing_subscriber::layer::SubscriberExt;
        use tracing_subscriber::util::SubscriberInitExt;
        tracing_subscriber::registry()
            .with(typhon_live_tracing::TyphonLayer::new())
            .try_init()
            .map_err(|e| CliError::Profiler(format!("cannot install the tracing layer: {e}")))?;
    }
    println!("typhon-live demo: listening on {addr}");
    let mut stdout = std::io::stdout();
    if !live_wait.is_zero() {
        // Whoever read the address may have closed the pipe since.
        let _ = writeln!(
            stdout,
            "typhon-live demo: waiting up to {} ms for a viewer",
            live_wait.as_millis()
        );
    }
    let _ = stdout.flush();
    if !live_wait.is_zero() {
        profiler.wait_for_viewer(live_wait);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let sim = {
        let stop = Arc::clone(&stop);
        let workload = Workload::of(&opts);
        std::thread::Builder::new()
            .name("Sim".into())
            .spawn(move || simulate(&workload, &stop))
            .map_err(|e| CliError::Profiler(e.to_string()))?
    };
    let viewed = if let Some(port) = opts.web {
        web::serve(&addr.to_string(), port, None, opts.duration)
    } else if opts.no_view {
        match opts.duration {
            Some(d) => std::thread::sleep(d),
            None => loop {
                std::thread::park();
            },
        }
        Ok(())
    } else {
        attach::run(
            &addr.to_string(),
            &RemoteOptions::default(),
            false,
            opts.duration,
            typhon_live_model::history::DEFAULT_HISTORY_SECONDS,
            // The c key's captures, as `attach` writes them.
            std::path::Path::new("captures"),
        )
    };
    stop.store(true, Ordering::Relaxed);
    let _ = sim.join();
    profiler.stop().map_err(|e| CliError::File {
        path: config.trace.unwrap_or_default(),
        reason: e.to_string(),
    })?;
    viewed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracing_span_names_are_the_systems_and_queries() {
        let subscriber = tracing_subscriber::registry();
        tracing::subscriber::with_default(subscriber, || {
            let name = |span: tracing::Span| span.metadata().map(|m| m.name());
            for (s, system) in SYSTEMS.iter().enumerate() {
                assert_eq!(name(system_span(s)), Some(*system));
            }
            for (q, query) in QUERIES.iter().enumerate() {
                assert_eq!(name(query_span(q, 1)), Some(*query));
            }
        });
    }
}
