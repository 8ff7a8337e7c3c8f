//! The flight recorder in the process, with no viewer at all: configured
//! like any other key, it writes a capture of a stall, and one when asked
//! (`Profiler::capture`, as SIGUSR1 does).

use std::path::Path;
use std::time::Duration;

use typhon_live_core::{Event, Metadata};
use typhon_live_reader::{frames, Reader, Update};
use typhon_live_std::config::{ConfigLayer, ProfilerConfig};
use typhon_live_std::{runtime, Profiler};

/// Each capture's marks' labels, and its longest tick in ms.
fn read(dir: &Path) -> Vec<(Vec<String>, u64)> {
    let mut paths: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    paths.sort();
    paths
        .iter()
        .map(|path| {
            let bytes = std::fs::read(path).unwrap();
            let mut reader = Reader::new();
            let (mut marks, mut longest, mut start) = (Vec::new(), 0, 0);
            let damage = frames(&bytes, |frame| {
                reader.read(frame, |state, update| match update {
                    Update::Event {
                        event: Event::Mark { label, .. },
                        ..
                    } => marks.push(state.names().show(label).into_owned()),
                    Update::Event {
                        event: Event::TickStart { time, .. },
                        ..
                    } => start = time,
                    Update::Event {
                        event: Event::TickEnd { time, .. },
                        ..
                    } => longest = longest.max((time - start) / 1_000_000),
                    _ => {}
                })
            });
            assert!(damage.is_empty(), "{path:?}: {damage:?}");
            assert_eq!(reader.state().tally().frames_missed, 0, "{path:?}");
            (marks, longest)
        })
        .collect()
}

#[test]
fn a_stall_and_a_demand_each_make_a_capture_in_the_configured_directory() {
    let dir = std::env::temp_dir().join(format!("typhon-live-flight-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    // The layers as a user writes them: the file names the directory and
    // the trigger, the command line the windows.
    let file = ConfigLayer::from_json(&serde_json::json!({
        "Typhon": { "Telemetry": { "Profiler": { "Recorder": {
            "Dir": dir.to_str().unwrap(),
            "On": ["tick > 100ms"],
            "Before": "1s",
        } } } }
    }))
    .unwrap();
    let args =
        ConfigLayer::from_args(["--capture-after", "300ms", "--capture-spacing", "0s"]).unwrap();
    let config = ProfilerConfig::layered([&file, &args]);
    let profiler = Profiler::start(&config, &Metadata::default()).unwrap();
    for tick in 0..120u64 {
        runtime::tick_start(tick);
        {
            let _span = typhon_live_std::span!("Work");
            // Tick 60 stalls 250 ms; the others take 2 ms.
            let ms = if tick == 60 { 250 } else { 2 };
            std::thread::sleep(Duration::from_millis(ms));
        }
        runtime::tick_end(tick, false);
    }
    // Past the stall's window: then asked for one at once.
    std::thread::sleep(Duration::from_millis(400));
    profiler.capture();
    std::thread::sleep(Duration::from_millis(100));
    let stats = profiler.stop().unwrap();
    assert_eq!(
        (stats.captures_written, stats.captures_failed),
        (2, 0),
        "{stats:?}"
    );
    let captures = read(&dir);
    assert_eq!(captures.len(), 2, "{captures:?}");
    assert_eq!(captures[0].0, ["tick > 100ms"]);
    // A 250 ms sleep, a few ms short under wine's clock.
    assert!(captures[0].1 >= 240, "the stall, whole: {captures:?}");
    assert_eq!(
        captures[1].0,
        ["on demand: asked (SIGUSR1 or Profiler::capture)"]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn recorder_options_layer_and_a_bad_one_names_its_key_and_position() {
    let env = ConfigLayer::from_env([
        ("TYPHON__PROFILER__RECORDER__DIR", "caps"),
        ("TYPHON__PROFILER__RECORDER__ON", "tick > 50ms; loss"),
        ("TYPHON__PROFILER__RECORDER__KEEPBYTES", "8MiB"),
    ])
    .unwrap();
    let args =
        ConfigLayer::from_args(["--capture-on", "overrun", "--capture-keep", "20s"]).unwrap();
    let config = ProfilerConfig::layered([&env, &args]);
    let (dir, options) = config.recorder_options().unwrap().unwrap();
    assert_eq!(dir, Path::new("caps"));
    // The command line's triggers replace the environment's.
    let triggers: Vec<String> = options.triggers.iter().map(ToString::to_string).collect();
    assert_eq!(triggers, ["overrun"]);
    assert_eq!(options.settings.keep_bytes, 8 << 20);
    assert_eq!(options.settings.keep_ns, 20_000_000_000);

    let error =
        ConfigLayer::from_env([("TYPHON__PROFILER__RECORDER__BEFORE", "2 parsecs")]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "TYPHON__PROFILER__RECORDER__BEFORE: recorder option before:\n2 parsecs\n  ^ unknown unit \"parsecs\""
    );
    let error = ConfigLayer::from_json(&serde_json::json!({
        "Typhon": { "Telemetry": { "Profiler": { "Recorder": { "On": "tick >" } } } }
    }))
    .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("Typhon.Telemetry.Profiler.Recorder.On: "),
        "{error}"
    );
    // Options that contradict each other refuse to start.
    let args =
        ConfigLayer::from_args(["--capture-dir", "caps", "--capture-before", "1min"]).unwrap();
    let config = ProfilerConfig::layered([&args]);
    assert!(config.recorder_options().is_err());
}
