//! `compare`, `check` and `attach --assert` end to end, on real demo runs:
//! the same program twice is no regression (an A/A run, each side three
//! runs, one alarm in eight pairs allowed); a system made 10 % slower (`--slow`) is found, and
//! nothing else is; budgets pass and break with their exit codes; damage,
//! bad expressions and traces of other programs are told apart.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Mutex;

use common::{spawn_demo_with, temp, typhon};
use serde_json::Value;

/// One demo at a time: two at once on two cores would each be the
/// other's noise.
static ONE_DEMO: Mutex<()> = Mutex::new(());

fn one_demo() -> std::sync::MutexGuard<'static, ()> {
    ONE_DEMO.lock().unwrap_or_else(|p| p.into_inner())
}

/// The demo at its 60 ticks a second for `seconds`, written to `path`.
/// Its allocation sites are not sampled: in a debug build, their
/// symbolizer spends the run's first second loading the binary's debug
/// information, on the same two cores as the Sim thread, and that
/// second's spans are the machine's, not the program's.
fn demo_run(path: &Path, seconds: &str, seed: u64, slow: Option<&str>) {
    let mut command = typhon();
    command.args(["demo", "--no-view", "--live", "0"]);
    command.args(["--duration", seconds, "--seed", &seed.to_string()]);
    command.env("TYPHON__PROFILER__ALLOCATIONSAMPLEBYTES", "0");
    if let Some(slow) = slow {
        command.args(["--slow", slow]);
    }
    let status = command
        .arg("--trace")
        .arg(path)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("the demo runs");
    assert!(status.success(), "demo: {status}");
}

fn compare(base: &Path, new: &Path, more: &[&str]) -> Output {
    typhon()
        .arg("compare")
        .arg(base)
        .arg(new)
        .args(more)
        .output()
        .expect("compare runs")
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// The names a JSON comparison calls regressions.
fn regressions(verdict: &Value) -> Vec<String> {
    (verdict["rows"].as_array().into_iter().flatten())
        .filter(|r| r["verdict"] == "regression")
        .filter_map(|r| r["name"].as_str().map(str::to_owned))
        .collect()
}

/// Pair `pair`'s two traces in `dir`.
fn pair_paths(dir: &Path, pair: u64) -> (PathBuf, PathBuf) {
    (
        dir.join(format!("a{pair}.tlt")),
        dir.join(format!("b{pair}.tlt")),
    )
}

fn dir(name: &str) -> PathBuf {
    let dir = temp(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The rates are the machine's scheduler's as much as the statistics':
/// measured where CI measures them, on Linux, not under wine's.
fn statistics_measured_here() -> bool {
    if cfg!(target_os = "linux") {
        return true;
    }
    common::skipped("compare's false alarms and power are measured on Linux only");
    false
}

#[test]
fn the_same_program_twice_is_no_regression_in_seven_of_eight_pairs_of_three_runs_a_side() {
    if !statistics_measured_here() {
        return;
    }
    let _turn = one_demo();
    let dir = dir("aa");
    let mut alarms = Vec::new();
    for pair in 0..8u64 {
        // Each side a folder of three runs, the two sides' runs
        // alternated: a stretch the shared machine slowed lands on both,
        // and a whole run slower than its side's others is what
        // compare's interval over runs refuses to call a change.
        let sides = ["a", "b"].map(|side| dir.join(format!("{side}{pair}")));
        for side in &sides {
            std::fs::create_dir_all(side).unwrap();
        }
        for run in 0..3u64 {
            for (s, side) in sides.iter().enumerate() {
                let seed = 100 * pair + 10 * run + s as u64;
                demo_run(&side.join(format!("{run}.tlt")), "1.5", seed, None);
            }
        }
        let output = compare(&sides[0], &sides[1], &["--json"]);
        let verdict = json(&output);
        assert!(verdict["tested"].as_u64() >= Some(10), "{verdict}");
        assert_eq!(verdict["base"]["runs"], 3, "{verdict}");
        let found = regressions(&verdict);
        assert_eq!(
            output.status.code() == Some(8),
            !found.is_empty(),
            "{verdict}"
        );
        if !found.is_empty() {
            alarms.push((pair, found));
        }
    }
    eprintln!("A/A alarms: {alarms:?} in 8 pairs");
    assert!(alarms.len() <= 1, "{alarms:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_system_ten_percent_slower_is_found_and_only_what_holds_it_with_it() {
    if !statistics_measured_here() {
        return;
    }
    let _turn = one_demo();
    let dir = dir("power");
    let (mut found_in, mut others) = (0, Vec::new());
    for pair in 0..3u64 {
        let (a, b) = pair_paths(&dir, pair);
        demo_run(&a, "6", 100 + pair, None);
        demo_run(&b, "6", 200 + pair, Some("Sim.Physics=1.10"));
        let junit = dir.join(format!("report{pair}.xml"));
        let output = compare(&a, &b, &["--json", "--junit", junit.to_str().unwrap()]);
        let verdict = json(&output);
        let found = regressions(&verdict);
        let other: Vec<&String> = (found.iter())
            .filter(|n| !["Sim.Physics", "Tick", "ticks"].contains(&n.as_str()))
            .collect();
        if !other.is_empty() {
            others.push((pair, format!("{other:?}")));
        }
        // Whatever else moved with the run, Sim.Physics moved most.
        let largest = (verdict["rows"].as_array().into_iter().flatten())
            .max_by(|x, y| {
                let change = |r: &Value| r["change"].as_f64().unwrap_or(f64::MIN);
                change(x).total_cmp(&change(y))
            })
            .map(|r| r["name"].clone());
        assert_eq!(largest, Some(Value::from("Sim.Physics")), "{verdict}");
        if found.contains(&"Sim.Physics".to_owned()) {
            found_in += 1;
            assert_eq!(output.status.code(), Some(8));
            let xml = std::fs::read_to_string(&junit).unwrap();
            let failed = "<testcase classname=\"typhon-live compare\" name=\"Sim.Physics\"><failure message=\"regression: p50";
            assert!(xml.contains(failed), "{xml}");
            // A name that did not change passes, its figures beside it.
            // Which one is the run's: a whole run can be a few % slower.
            let unchanged = (verdict["rows"].as_array().into_iter().flatten())
                .find(|r| r["verdict"] == "unchanged")
                .and_then(|r| r["name"].as_str())
                .expect("a name unchanged");
            let escaped = unchanged.replace('<', "&lt;").replace('>', "&gt;");
            let passed = format!("name=\"{escaped}\"><system-out>");
            assert!(xml.contains(&passed), "{passed}: {xml}");
        }
    }
    eprintln!("Sim.Physics found in {found_in} of 3 pairs; other names: {others:?}");
    // At least two of three: one miss in three is far from the 95 % that
    // 10 s runs give (bench's --compare), and keeps this test steady.
    // Other names may pass the threshold when a whole run is slower than
    // the other (PERFORMANCE.md, "compare's false alarms and power"): the
    // bench counts them; here, Sim.Physics must lead.
    assert!(found_in >= 2, "found in {found_in} of 3 pairs");

    // The same, as the table and as Markdown.
    let (a, b) = (dir.join("a0.tlt"), dir.join("b0.tlt"));
    let table = compare(&a, &b, &[]);
    let text = String::from_utf8_lossy(&table.stdout);
    assert!(
        text.contains("Sim.Physics") && text.contains("p50 change"),
        "{text}"
    );
    let markdown = compare(&a, &b, &["--markdown", "--stat", "mean"]);
    let text = String::from_utf8_lossy(&markdown.stdout);
    assert!(text.starts_with("### "), "{text}");
    assert!(text.contains("| name | base mean | new mean |"), "{text}");
    assert!(text.contains("<details><summary>All "), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn budgets_pass_and_break_with_their_exit_codes() {
    let _turn = one_demo();
    let dir = dir("check");
    let trace = dir.join("run.tlt");
    demo_run(&trace, "2", 7, None);
    let check = |asserts: &[&str], more: &[&str]| {
        let mut command = typhon();
        command.arg("check").arg(&trace).args(more);
        for a in asserts {
            command.args(["--assert", a]);
        }
        command.output().expect("check runs")
    };
    let held = check(
        &[
            "p99(Sim.Physics) < 1h",
            "max(Tick) < 1h",
            "dropped == 0",
            "count(Sim.AI) > 60",
        ],
        &[],
    );
    let text = String::from_utf8_lossy(&held.stdout);
    assert_eq!(held.status.code(), Some(0), "{text}");
    assert!(text.contains("all 4 assertions hold"), "{text}");

    let broken = check(
        &["p50(Sim.Physics) < 1us", "max(Nothing) < 1h"],
        &["--json"],
    );
    assert_eq!(broken.status.code(), Some(8));
    let verdict = json(&broken);
    assert_eq!(verdict["failed"], 2, "{verdict}");
    assert_eq!(verdict["outcomes"][1]["value"], Value::Null, "{verdict}");
    let stderr = String::from_utf8_lossy(&broken.stderr);
    assert!(
        stderr.contains("broken: p50(Sim.Physics) < 1us"),
        "{stderr}"
    );

    // A warm-up is not counted: the first of the run's 2 s holds about
    // 60 of its Sim.AI spans.
    let count = |more: &[&str]| {
        let mut flags = vec!["--json"];
        flags.extend_from_slice(more);
        let verdict = json(&check(&["count(Sim.AI) > 0"], &flags));
        verdict["outcomes"][0]["value"].as_f64().unwrap()
    };
    let (whole, warmed) = (count(&[]), count(&["--warm-up", "1"]));
    assert!(
        warmed > 20.0 && warmed < whole - 40.0,
        "{warmed} of {whole}"
    );

    // A bad expression is a usage error, pointing at where.
    let bad = check(&["p99(Sim.Physics) < 2 parsecs"], &[]);
    assert_eq!(bad.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(stderr.contains("p99(Sim.Physics) < 2 parsecs"), "{stderr}");
    assert!(stderr.contains("^ unknown unit \"parsecs\""), "{stderr}");

    // A cut trace is judged as far as it reads; damage wins over the
    // verdict unless allowed.
    let bytes = std::fs::read(&trace).unwrap();
    let cut = dir.join("cut.tlt");
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3 + 7]).unwrap();
    let mut command = typhon();
    let damaged = command
        .args([
            "check",
            cut.to_str().unwrap(),
            "--assert",
            "p50(Sim.Physics) < 1us",
        ])
        .output()
        .unwrap();
    assert_eq!(damaged.status.code(), Some(4));
    let text = String::from_utf8_lossy(&damaged.stdout);
    assert!(text.contains("DAMAGED: read as far as it goes"), "{text}");
    let allowed = typhon()
        .args([
            "check",
            cut.to_str().unwrap(),
            "--allow-damage",
            "--assert",
            "p50(Sim.Physics) < 1us",
        ])
        .output()
        .unwrap();
    assert_eq!(allowed.status.code(), Some(8));

    // compare reads the cut side as far as it goes, and says so.
    let output = compare(&trace, &cut, &["--json", "--allow-damage"]);
    let verdict = json(&output);
    assert!(
        verdict["new"]["reading"]["frames_damaged"].as_u64() > Some(0),
        "{verdict}"
    );
    assert_eq!(output.status.code(), Some(0), "{verdict}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn traces_of_different_programs_are_an_error_not_a_wall_of_one_sided_names() {
    let _turn = one_demo();
    let dir = dir("other");
    let (demo, other) = (dir.join("demo.tlt"), dir.join("other.tlt"));
    demo_run(&demo, "1", 1, None);
    let ticks: Vec<_> = (0..50)
        .map(|_| (false, vec![("Audio.Mix", 50_000)]))
        .collect();
    std::fs::write(&other, typhon_live_tests::ticks_trace(&ticks)).unwrap();
    let output = compare(&demo, &other, &[]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("share no span name"), "{stderr}");
    assert!(stderr.contains("new has Audio.Mix"), "{stderr}");
    // A folder is a side of several runs; a file that is no trace is an
    // error naming it.
    let runs = dir.join("runs");
    std::fs::create_dir_all(&runs).unwrap();
    std::fs::copy(&demo, runs.join("1.tlt")).unwrap();
    std::fs::copy(&demo, runs.join("2.tlt")).unwrap();
    let output = compare(&runs, &demo, &["--json", "--warm-up", "0.2"]);
    let verdict = json(&output);
    assert_eq!(
        verdict["base"]["reading"]["sources"]
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    // Its runs are resampled as runs; each run's warm-up is left out.
    assert_eq!(
        (
            verdict["base"]["runs"].as_u64(),
            verdict["new"]["runs"].as_u64()
        ),
        (Some(2), Some(1))
    );
    let warm_up = |side: &str| verdict[side]["reading"]["warm_up"].as_u64().unwrap();
    assert!(
        warm_up("base") > 0 && warm_up("base") == 2 * warm_up("new"),
        "{verdict}"
    );
    std::fs::write(runs.join("3.tlt"), b"not a trace at all").unwrap();
    let output = compare(&runs, &demo, &[]);
    assert_eq!(output.status.code(), Some(4));
    assert!(String::from_utf8_lossy(&output.stderr).contains("3.tlt"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_live_stream_is_judged_when_its_duration_ends_with_no_file_written() {
    let _turn = one_demo();
    let (mut demo, addr) = spawn_demo_with(&["--duration", "30"]);
    let dir = dir("live");
    let output = typhon()
        .current_dir(&dir)
        .args(["attach", &addr, "--duration", "2", "--json"])
        .args([
            "--assert",
            "count(Sim.Physics) > 50",
            "--assert",
            "overruns >= 0",
        ])
        .output()
        .unwrap();
    let verdict = json(&output);
    assert_eq!(output.status.code(), Some(0), "{verdict}");
    assert_eq!(verdict["failed"], 0, "{verdict}");
    let broken = typhon()
        .current_dir(&dir)
        .args([
            "attach",
            &addr,
            "--duration",
            "1",
            "--assert",
            "max(Sim.Physics) < 1ns",
        ])
        .output()
        .unwrap();
    assert_eq!(broken.status.code(), Some(8));
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "no file written"
    );
    // --assert on a live stream needs its end.
    let endless = typhon()
        .args(["attach", &addr, "--assert", "dropped == 0"])
        .output()
        .unwrap();
    assert_eq!(endless.status.code(), Some(2));
    let _ = demo.kill();
    let _ = demo.wait();
    let _ = std::fs::remove_dir_all(&dir);
}
