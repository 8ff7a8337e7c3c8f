//! What the `tracing` layer's tests share: a profiler writing a trace
//! file with the layer as the process's subscriber (one test a binary:
//! both are one per process), and the file read back as a viewer reads
//! it (which the tokio runtime's test shares too).

use std::path::PathBuf;
use std::time::Duration;

use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use typhon_live_core::Metadata;
use typhon_live_model::Model;
use typhon_live_std::config::ProfilerConfig;
use typhon_live_std::Profiler;
use typhon_live_tracing::TyphonLayer;

/// A profiler writing the trace file `typhon-live-NAME-PID.tlt` in the
/// temporary folder, and `tracing` recording through the layer.
#[allow(dead_code)] // Not every test records through the layer.
pub fn record(name: &str) -> (Profiler, PathBuf) {
    record_with(name, TyphonLayer::new())
}

/// [`record`] through `layer`.
#[allow(dead_code)] // Not every test records through the layer.
pub fn record_with(name: &str, layer: TyphonLayer) -> (Profiler, PathBuf) {
    let path = std::env::temp_dir().join(format!("typhon-live-{name}-{}.tlt", std::process::id()));
    let config = ProfilerConfig {
        trace: Some(path.clone()),
        ..ProfilerConfig::default()
    };
    let profiler = Profiler::start(&config, &Metadata::default()).expect("profiler");
    tracing_subscriber::registry().with(layer).init();
    (profiler, path)
}

/// The trace file at `path` (then removed), read by the view model, as
/// a viewer reads it; it must be undamaged.
#[allow(dead_code)] // Not every test reads it so.
pub fn read(path: &PathBuf) -> Model {
    let file = std::fs::read(path).expect("trace file");
    std::fs::remove_file(path).expect("remove");
    let mut model = Model::default();
    let damage = typhon_live_reader::frames(&file, |frame| model.on_frame(frame, Duration::ZERO));
    assert!(damage.is_empty(), "{damage:?}");
    model.flush_history();
    model
}
