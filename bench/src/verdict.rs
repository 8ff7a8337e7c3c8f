//! `compare`'s statistical quality (issue 42), measured:
//!
//! - false alarms: A/A pairs of synthetic traces whose durations are drawn
//!   from a real demo run's, name by name (written through the core's
//!   exporter), and A/A pairs of real demo runs;
//! - power: pairs of real 10 s demo runs, one with `--slow
//!   Sim.Physics=1.10`: how often Sim.Physics is found, and whether
//!   anything but it and what holds it (Tick, the ticks) is reported;
//! - the same, A/A and power, with sides of three 5 s runs each, made
//!   alternately: the bootstrap over runs, then ticks;
//! - speed: `typhon-live compare` of two 10 000-tick, ~300 k-event traces,
//!   the process timed whole.
//!
//! The real runs use `typhon-live` built beside this binary (`cargo build
//! --release -p typhon-live-cli`), one process at a time.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use typhon_live_verdict::compare::{self, Options, Verdict};
use typhon_live_verdict::samples::{Samples, Side, TICKS};

use crate::Row;

fn typhon_live() -> Option<Command> {
    crate::relay::built_beside("typhon-live", "cargo build --release -p typhon-live-cli")
}

/// A scratch folder of this run's traces.
fn scratch() -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("typhon-live-bench-verdict-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    dir
}

/// A demo run of `seconds` into `path`, as a user runs it.
fn demo(path: &Path, seconds: u32, seed: u64, extra: &[&str]) -> Option<()> {
    let status = typhon_live()?
        .args(["demo", "--no-view", "--live", "0"])
        .args([
            "--duration",
            &seconds.to_string(),
            "--seed",
            &seed.to_string(),
        ])
        .args(extra)
        .arg("--trace")
        .arg(path)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .ok()?;
    status.success().then_some(())
}

fn side(paths: &[&Path]) -> Side {
    let mut samples = Samples::new();
    for path in paths {
        let bytes = std::fs::read(path).unwrap_or_default();
        samples.read_trace(&path.display().to_string(), &bytes);
    }
    samples.finish()
}

/// What a comparison found.
struct Found {
    /// The names it reports: regressions, and improvements marked so
    /// (" improved"). An error is reported as one.
    names: Vec<String>,
    /// Sim.Physics's change.
    physics: f64,
    /// The largest change, either way, of a name that does not hold
    /// Sim.Physics: how near the threshold the rest came.
    largest_other: f64,
}

/// The new side's flags in the power rows: Sim.Physics 10 % slower.
const SLOW: [&str; 2] = ["--slow", "Sim.Physics=1.10"];

/// ` (a, b)` after a count, or nothing when there is nothing to list.
fn listed(items: &[String]) -> String {
    if items.is_empty() {
        String::new()
    } else {
        format!(" ({})", items.join(", "))
    }
}

/// Names that hold Sim.Physics, or are it: they may change with it.
const WITH_PHYSICS: [&str; 3] = ["Sim.Physics", "Tick", TICKS];

fn compared(base: &Side, new: &Side) -> Found {
    let c = match compare::compare(base, new, &Options::default()) {
        Ok(c) => c,
        Err(e) => {
            return Found {
                names: vec![format!("error: {e}")],
                physics: 0.0,
                largest_other: 0.0,
            }
        }
    };
    let change = |r: &compare::Row| r.change.unwrap_or(0.0);
    Found {
        names: (c.rows.iter())
            .filter_map(|r| match r.verdict {
                Verdict::Regression => Some(r.name.clone()),
                Verdict::Improvement => Some(format!("{} improved", r.name)),
                _ => None,
            })
            .collect(),
        physics: c
            .rows
            .iter()
            .find(|r| r.name == "Sim.Physics")
            .map_or(0.0, change),
        largest_other: (c.rows.iter())
            .filter(|r| !WITH_PHYSICS.contains(&r.name.as_str()))
            .map(|r| change(r).abs())
            .fold(0.0, f64::max),
    }
}

impl Found {
    /// Whether it reports a regression: an A/A pair's false alarm.
    fn alarmed(&self) -> bool {
        self.names.iter().any(|n| !n.ends_with(" improved"))
    }

    /// Whether Sim.Physics regressed.
    fn physics_found(&self) -> bool {
        self.names.iter().any(|n| n == "Sim.Physics")
    }

    /// What it reports besides Sim.Physics and what holds it.
    fn others(&self) -> Vec<&str> {
        (self.names.iter().map(String::as_str))
            .filter(|n| !WITH_PHYSICS.contains(n))
            .collect()
    }
}

/// Two real 10 s demo runs, one after the other, seeds `seed` and
/// `seed + 1`, the second with `slow` (its flags): what `compare`
/// finds. `None` when a run could not be made.
fn real_pair(dir: &Path, seed: u64, slow: &[&str]) -> Option<Found> {
    let (a, b) = (dir.join("pair-a.tlt"), dir.join("pair-b.tlt"));
    demo(&a, 10, seed, &[])?;
    demo(&b, 10, seed + 1, slow)?;
    Some(compared(&side(&[&a]), &side(&[&b])))
}

/// Two sides of `runs` real 5 s demo runs each, made alternately (base,
/// new, base, new, ...), seeds from `seed`, new's runs with `slow`: what
/// `compare` finds of the two folders' runs. `None` when a run could not
/// be made.
fn real_runs(dir: &Path, runs: u64, seed: u64, slow: &[&str]) -> Option<Found> {
    let (mut base, mut new) = (Vec::new(), Vec::new());
    for run in 0..runs {
        let (b, n) = (
            dir.join(format!("runs-a{run}.tlt")),
            dir.join(format!("runs-b{run}.tlt")),
        );
        demo(&b, 5, seed + 2 * run, &[])?;
        demo(&n, 5, seed + 2 * run + 1, slow)?;
        base.push(b);
        new.push(n);
    }
    let side = |paths: &[PathBuf]| side(&paths.iter().map(PathBuf::as_path).collect::<Vec<_>>());
    Some(compared(&side(&base), &side(&new)))
}

/// A trace of `ticks` ticks whose spans are drawn from `model`: each name
/// as often a tick as there, each duration one of its durations there,
/// drawn with `seed`.
fn synthetic(model: &Side, ticks: usize, seed: u64) -> Vec<u8> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let names: Vec<(&str, &[u64], usize)> = (model.series.iter())
        .filter(|s| s.name != TICKS)
        .map(|s| {
            let per_tick = (s.values.len() as f64 / model.clusters as f64)
                .round()
                .max(1.0);
            (s.name.as_str(), s.values.as_slice(), per_tick as usize)
        })
        .collect();
    let ticks: Vec<(bool, Vec<(&str, u64)>)> = (0..ticks)
        .map(|_| {
            let mut spans = Vec::new();
            for &(name, values, per_tick) in &names {
                for _ in 0..per_tick {
                    spans.push((name, values[rng.random_range(0..values.len())]));
                }
            }
            (false, spans)
        })
        .collect();
    typhon_live_tests::ticks_trace(&ticks)
}

/// The rows: A/A over synthetic and real pairs, power, both with sides
/// of several runs, speed.
pub fn rows(quick: bool) -> Vec<Row> {
    let row = Row::ours;
    let dir = scratch();
    let mut rows = Vec::new();
    let model_path = dir.join("model.tlt");
    if demo(&model_path, 10, 1, &[]).is_none() {
        rows.push(row(
            "compare",
            "- (`cargo build --release -p typhon-live-cli` first)".into(),
            "",
            None,
        ));
        return rows;
    }
    let model = side(&[&model_path]);

    // False alarms over synthetic pairs: 600 ticks a side, as a 10 s run.
    let pairs = if quick { 20 } else { 200 };
    let mut alarms = 0;
    for pair in 0..pairs {
        let a = synthetic(&model, 600, 2 * pair + 1);
        let b = synthetic(&model, 600, 2 * pair + 2);
        let read = |bytes: &[u8]| {
            let mut samples = Samples::new();
            samples.read_trace("synthetic", bytes);
            samples.finish()
        };
        alarms += usize::from(compared(&read(&a), &read(&b)).alarmed());
    }
    let rate = alarms as f64 / pairs as f64;
    rows.push(row(
        "compare: A/A false alarms, synthetic pairs (600 ticks, durations drawn from a 10 s demo run's)",
        format!("{alarms} of {pairs} pairs ({:.1} %)", rate * 100.0),
        "<= 1 %",
        Some(rate <= 0.01),
    ));

    // False alarms and power over real runs.
    let (aa_pairs, power_pairs) = if quick { (2, 2) } else { (10, 20) };
    let mut real_alarms = Vec::new();
    for pair in 0..aa_pairs {
        let Some(found) = real_pair(&dir, 1000 + 2 * pair, &[]) else {
            break;
        };
        if found.alarmed() {
            real_alarms.push(found.names.join("+"));
        }
    }
    rows.push(row(
        "compare: A/A false alarms, pairs of real 10 s demo runs",
        format!(
            "{} of {aa_pairs} pairs{}",
            real_alarms.len(),
            listed(&real_alarms)
        ),
        "<= 1 in 10 (the CI test's bound)",
        Some(real_alarms.len() * 10 <= aa_pairs as usize),
    ));
    let (mut found_in, mut others) = (0, Vec::new());
    let (mut physics, mut largest_other) = ((f64::MAX, f64::MIN), 0.0f64);
    for pair in 0..power_pairs {
        let Some(found) = real_pair(&dir, 2000 + 2 * pair, &SLOW) else {
            break;
        };
        found_in += usize::from(found.physics_found());
        physics = (physics.0.min(found.physics), physics.1.max(found.physics));
        largest_other = largest_other.max(found.largest_other);
        let other = found.others();
        if !other.is_empty() {
            others.push(format!("pair {pair}: {}", other.join("+")));
        }
    }
    let power = found_in as f64 / power_pairs as f64;
    rows.push(row(
        "compare: power, Sim.Physics 10 % slower (--slow), pairs of real 10 s runs",
        format!(
            "{found_in} of {power_pairs} pairs ({:.0} %), its change {:+.1} to {:+.1} %; another name reported in {} pairs{}, the largest other change {:.1} %",
            power * 100.0,
            physics.0 * 100.0,
            physics.1 * 100.0,
            others.len(),
            listed(&others),
            largest_other * 100.0
        ),
        ">= 95 %, nothing but Sim.Physics and Tick",
        Some(power >= 0.95 && others.is_empty()),
    ));

    // Several runs a side, alternated: the two-stage bootstrap's false
    // alarms and power.
    let pairs = if quick { 1 } else { 5 };
    let (mut alarms, mut found_in, mut others) = (Vec::new(), 0, Vec::new());
    for pair in 0..pairs {
        let Some(aa) = real_runs(&dir, 3, 3000 + 10 * pair, &[]) else {
            break;
        };
        if aa.alarmed() {
            alarms.push(aa.names.join("+"));
        }
        let Some(found) = real_runs(&dir, 3, 4000 + 10 * pair, &SLOW) else {
            break;
        };
        found_in += usize::from(found.physics_found());
        let other = found.others();
        if !other.is_empty() {
            others.push(other.join("+"));
        }
    }
    rows.push(row(
        "compare: sides of 3 real 5 s runs, alternated: A/A false alarms; Sim.Physics 10 % slower found",
        format!(
            "A/A: {} of {pairs} pairs{}; power: {found_in} of {pairs} pairs, another name reported in {}{}",
            alarms.len(),
            listed(&alarms),
            others.len(),
            listed(&others),
        ),
        "no target: the issue measures single runs",
        None,
    ));

    // Speed: two 10 000-tick traces (10 s at 1 kHz) of the demo's shape.
    let (a, b) = (dir.join("speed-a.tlt"), dir.join("speed-b.tlt"));
    let _ = std::fs::write(&a, synthetic(&model, 10_000, 7));
    let _ = std::fs::write(&b, synthetic(&model, 10_000, 8));
    let events = side(&[&a]).reading.events;
    let mut times = Vec::new();
    for _ in 0..if quick { 3 } else { 7 } {
        let Some(mut command) = typhon_live() else {
            break;
        };
        let started = Instant::now();
        let ok = command
            .args(["compare", "--json"])
            .arg(&a)
            .arg(&b)
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.code() == Some(0) || s.code() == Some(8));
        if ok {
            times.push(started.elapsed().as_secs_f64());
        }
    }
    times.sort_by(f64::total_cmp);
    if let Some(&median) = times.get(times.len() / 2) {
        rows.push(row(
            "compare: two 10 s, 1 kHz traces of the demo's shape, the whole process (median)",
            format!("{median:.2} s ({events} events a side)"),
            "<= 1 s",
            Some(median <= 1.0),
        ));
    }
    let _ = std::fs::remove_dir_all(&dir);
    rows
}
