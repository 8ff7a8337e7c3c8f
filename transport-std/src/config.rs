//! The zero-code launch configuration: `typhon.telemetry.json`, environment
//! variables and command-line flags, layered defaults < file < environment
//! < command line. A layer that omits a key keeps the lower layer's value.
//!
//! | key (file: `Typhon.Telemetry.Profiler.*`) | environment | flag | default | effect |
//! |---|---|---|---|---|
//! | `Enabled` (also `Typhon.Telemetry.Enabled`) | `TYPHON__PROFILER__ENABLED` | — | `true` | profiler on or off |
//! | `Live` | `TYPHON__PROFILER__LIVE` | `--live [port]` | off | listen for a viewer on this port (0: any free port; not a number: 9100) |
//! | `LiveWaitMs` | `TYPHON__PROFILER__LIVEWAITMS` | `--live-wait <ms>` | `0` | block `Profiler::start` until the first viewer connects, at most this long |
//! | `BindAddress` | `TYPHON__PROFILER__BINDADDRESS` | `--bind-address <addr>` | `127.0.0.1` | address to listen on |
//! | `Trace` | `TYPHON__PROFILER__TRACE` | `--trace <path>` | none | also write the stream to this file |
//! | `Compression` | `TYPHON__PROFILER__COMPRESSION` | `--compression <off\|lz4\|auto>` | `auto` | LZ4 over each Block: never, always, or when it saves at least 1/16 |
//! | `RingEvents` | `TYPHON__PROFILER__RINGEVENTS` | `--ring-events <n>` | `16384` | events each recording thread's ring holds between drains: a power of two from 1024 to 65536, 40 bytes each |
//! | `CpuSampleMs` | `TYPHON__PROFILER__CPUSAMPLEMS` | `--cpu-sample-ms <ms>` | `10` | how often the exporter thread reads each lane's thread's CPU time and switches (Samples frames; Linux and Windows); 0: never |
//! | `CpuSwitches` | `TYPHON__PROFILER__CPUSWITCHES` | `--cpu-switches <on\|off>` | `true` | each lane's thread's context switches traced one by one, where the system allows it (Linux `perf_event_open`), sent with the samples |
//! | `StackSampleHz` | `TYPHON__PROFILER__STACKSAMPLEHZ` | `--stack-sample-hz <hz>` | `0` | how often each lane's thread's call stack is sampled, per second of its time on a CPU (Linux `perf_event_open`; up to 10 000); 0: never |
//! | `StackCopies` | `TYPHON__PROFILER__STACKCOPIES` | `--stack-copies <on\|off>` | `true` | each stack sample copies 8 KiB of its thread's stack, walked with the modules' unwind tables (code built without frame pointers needs it); off: the kernel's frame-pointer chains alone, cheaper, whole only where every frame keeps its pointer |
//! | `AllocationSampleBytes` | `TYPHON__PROFILER__ALLOCATIONSAMPLEBYTES` | `--allocation-sample-bytes <n>` | `524288` | with [`Tracking`](crate::Tracking) as the global allocator, one allocation in this many bytes (on average) is sampled with its stack, for the sites that hold memory; 0: none |
//! | `Recorder.Dir` | `TYPHON__PROFILER__RECORDER__DIR` | `--capture-dir <dir>` | off | the flight recorder on: captures go to this directory (docs/RECORDER.md) |
//! | `Recorder.On` (a string or a list) | `TYPHON__PROFILER__RECORDER__ON` (`;` between triggers) | `--capture-on <trigger>` (repeated) | none | the triggers; SIGUSR1 and `Profiler::capture` ask for a capture at once |
//! | `Recorder.Keep`, `KeepBytes`, `Before`, `After`, `Cooldown`, `Spacing`, `MaxCapture`, `MaxCaptureBytes`, `MaxFiles`, `MaxBytes` | `TYPHON__PROFILER__RECORDER__KEEP`, `..._KEEPBYTES`, ... | `--capture-keep <d>`, `--capture-keep-bytes <size>`, ... | see docs/RECORDER.md | what the recorder keeps and writes (`typhon_live_recorder::options`) |

use std::fmt;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use typhon_live_core::Compression;
use typhon_live_recorder::{OptionError, Options};

use crate::runtime::{valid_ring_events, DEFAULT_RING_EVENTS};

/// Parsed JSON, as [`ConfigLayer::from_json`] takes it.
pub type Json = Value;

/// The port `Live` falls back to when its value is not a number.
pub const DEFAULT_LIVE_PORT: u16 = 9100;
/// The configuration file looked for in the working directory.
pub const CONFIG_FILE: &str = "typhon.telemetry.json";

/// The resolved profiler configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProfilerConfig {
    /// Whether the profiler runs at all.
    pub enabled: bool,
    /// Port to listen on for a live viewer; `Some(0)` picks a free port.
    pub live: Option<u16>,
    /// How long `Profiler::start` waits for the first viewer (0: not at all).
    pub live_wait: Duration,
    /// Address the live listener binds.
    pub bind_address: IpAddr,
    /// Trace file to write the same stream to.
    pub trace: Option<PathBuf>,
    /// How often the exporter drains the lanes.
    pub drain_interval: Duration,
    /// How long a Block may collect drains before it is sent: larger Blocks
    /// compress better, at this much extra latency.
    pub block_max_age: Duration,
    /// When Blocks are LZ4-compressed.
    pub compression: Compression,
    /// Events each lane's ring holds: a power of two from 1024 to
    /// [`MAX_RING_EVENTS`](crate::runtime::MAX_RING_EVENTS).
    pub ring_events: usize,
    /// How often each lane's thread's CPU time is sampled (FORMAT.md,
    /// "Samples"); `None`: never.
    pub cpu_samples: Option<Duration>,
    /// Each lane's thread's switches are traced one by one, where the
    /// system allows it (with the samples only).
    pub cpu_switches: bool,
    /// Each lane's thread's call stack is sampled this many times a
    /// second of its time on a CPU (FORMAT.md, "Stacks"); 0: never.
    pub stack_sample_hz: u32,
    /// Each stack sample copies the top of its thread's stack, walked
    /// with the unwind tables; off: frame-pointer chains alone.
    pub stack_copies: bool,
    /// With [`Tracking`](crate::Tracking) as the global allocator: the
    /// mean bytes between two sampled allocations; 0: none sampled.
    pub allocation_sample_bytes: u64,
    /// The flight recorder's directory: set, the recorder runs.
    pub capture_dir: Option<PathBuf>,
    /// The flight recorder's options by key (`on` once per trigger), each
    /// checked as it was read (see [`ProfilerConfig::recorder_options`]).
    pub recorder: Vec<(String, String)>,
}

impl Default for ProfilerConfig {
    fn default() -> Self {
        ProfilerConfig {
            enabled: true,
            live: None,
            live_wait: Duration::ZERO,
            bind_address: IpAddr::from([127, 0, 0, 1]),
            trace: None,
            drain_interval: Duration::from_millis(1),
            block_max_age: Duration::from_millis(1),
            compression: Compression::Auto,
            ring_events: DEFAULT_RING_EVENTS,
            cpu_samples: Some(crate::cpu_samples::DEFAULT_EVERY),
            cpu_switches: true,
            stack_sample_hz: 0,
            stack_copies: true,
            allocation_sample_bytes: crate::allocation_sites::DEFAULT_MEAN,
            capture_dir: None,
            recorder: Vec::new(),
        }
    }
}

/// Why a configuration could not be used.
#[derive(Debug)]
#[non_exhaustive]
pub enum ConfigError {
    /// The configuration file exists but could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The configuration file is not valid JSON.
    Json {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// A value has the wrong form; `key` names where it came from.
    Invalid {
        /// Key, variable or flag.
        key: String,
        /// The value given.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
    /// A flight recorder option that does not read; `key` names where
    /// it came from.
    Recorder {
        /// Key, variable or flag.
        key: String,
        /// What was wrong, and where in the value.
        error: Box<OptionError>,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigError::Read { path, source } => {
                write!(f, "cannot read {}: {source}", path.display())
            }
            ConfigError::Json { path, source } => {
                write!(f, "{} is not valid JSON: {source}", path.display())
            }
            ConfigError::Invalid {
                key,
                value,
                expected,
            } => {
                write!(f, "{key} = {value:?} is invalid: expected {expected}")
            }
            ConfigError::Recorder { key, error } => write!(f, "{key}: {error}"),
        }
    }
}

impl std::error::Error for ConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            ConfigError::Read { source, .. } => Some(source),
            ConfigError::Json { source, .. } => Some(source),
            ConfigError::Invalid { .. } => None,
            ConfigError::Recorder { error, .. } => Some(&**error),
        }
    }
}

/// One layer of settings: what a file, the environment or the command line
/// says; `None` leaves the lower layer's value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ConfigLayer {
    /// `Enabled`.
    pub enabled: Option<bool>,
    /// `Live`: `Some(None)` turns it off.
    pub live: Option<Option<u16>>,
    /// `LiveWaitMs`.
    pub live_wait_ms: Option<u64>,
    /// `BindAddress`.
    pub bind_address: Option<IpAddr>,
    /// `Trace`.
    pub trace: Option<PathBuf>,
    /// `Compression`.
    pub compression: Option<Compression>,
    /// `RingEvents`.
    pub ring_events: Option<usize>,
    /// `CpuSampleMs` (0: never).
    pub cpu_sample_ms: Option<u64>,
    /// `CpuSwitches`.
    pub cpu_switches: Option<bool>,
    /// `StackSampleHz` (0: never).
    pub stack_sample_hz: Option<u32>,
    /// `StackCopies`.
    pub stack_copies: Option<bool>,
    /// `AllocationSampleBytes` (0: none).
    pub allocation_sample_bytes: Option<u64>,
    /// `Recorder.Dir`.
    pub capture_dir: Option<PathBuf>,
    /// The other `Recorder.*` keys, as recorder options (`on` once per
    /// trigger), in the order given.
    pub recorder: Vec<(String, String)>,
    /// Keys the layer did not know, for a warning.
    pub unknown_keys: Vec<String>,
}

impl ConfigLayer {
    /// Reads `path`; a missing file is an empty layer.
    pub fn from_file(path: &Path) -> Result<Self, ConfigError> {
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Self::default()),
            Err(source) => {
                return Err(ConfigError::Read {
                    path: path.into(),
                    source,
                })
            }
        };
        let json: Value = serde_json::from_str(&text).map_err(|source| ConfigError::Json {
            path: path.into(),
            source,
        })?;
        Self::from_json(&json)
    }

    /// Reads the `Typhon.Telemetry` object of a parsed configuration.
    pub fn from_json(json: &Value) -> Result<Self, ConfigError> {
        let mut layer = ConfigLayer::default();
        let Some(root) = json.as_object() else {
            return Err(invalid("configuration", json, "a JSON object"));
        };
        for (key, value) in root {
            if key != "Typhon" {
                layer.unknown_keys.push(key.clone());
                continue;
            }
            for (key, value) in value.as_object().into_iter().flatten() {
                if key != "Telemetry" {
                    layer.unknown_keys.push(format!("Typhon.{key}"));
                    continue;
                }
                layer.read_telemetry(value)?;
            }
        }
        Ok(layer)
    }

    fn read_telemetry(&mut self, telemetry: &Value) -> Result<(), ConfigError> {
        let mut telemetry_enabled = None;
        let mut profiler_enabled = None;
        for (key, value) in telemetry.as_object().into_iter().flatten() {
            match key.as_str() {
                "Enabled" => {
                    telemetry_enabled = Some(bool_value("Typhon.Telemetry.Enabled", value)?)
                }
                "Profiler" => {
                    for (key, value) in value.as_object().into_iter().flatten() {
                        let name = format!("Typhon.Telemetry.Profiler.{key}");
                        match key.as_str() {
                            "Enabled" => profiler_enabled = Some(bool_value(&name, value)?),
                            "Live" => self.live = Some(live_value(value)),
                            "LiveWaitMs" => {
                                self.live_wait_ms = Some(wait_value(&name, &json_text(value))?)
                            }
                            "CpuSampleMs" => {
                                self.cpu_sample_ms = Some(wait_value(&name, &json_text(value))?)
                            }
                            "CpuSwitches" => self.cpu_switches = Some(bool_value(&name, value)?),
                            "StackSampleHz" => {
                                self.stack_sample_hz = Some(hz_value(&name, &json_text(value))?)
                            }
                            "StackCopies" => self.stack_copies = Some(bool_value(&name, value)?),
                            "AllocationSampleBytes" => {
                                self.allocation_sample_bytes =
                                    Some(bytes_value(&name, &json_text(value))?)
                            }
                            "BindAddress" => {
                                self.bind_address = Some(address_value(&name, &json_text(value))?)
                            }
                            "Trace" => self.trace = trace_value(value),
                            "Compression" => {
                                self.compression =
                                    Some(compression_value(&name, &json_text(value))?)
                            }
                            "RingEvents" => {
                                self.ring_events = Some(ring_value(&name, &json_text(value))?)
                            }
                            "Recorder" => self.read_recorder(value)?,
                            _ => self.unknown_keys.push(name),
                        }
                    }
                }
                _ => self.unknown_keys.push(format!("Typhon.Telemetry.{key}")),
            }
        }
        if telemetry_enabled.is_some() || profiler_enabled.is_some() {
            self.enabled =
                Some(telemetry_enabled.unwrap_or(true) && profiler_enabled.unwrap_or(true));
        }
        Ok(())
    }

    /// `Typhon.Telemetry.Profiler.Recorder`: `Dir`, `On` (a trigger or a
    /// list), and the recorder's options in PascalCase.
    fn read_recorder(&mut self, recorder: &Value) -> Result<(), ConfigError> {
        for (key, value) in recorder.as_object().into_iter().flatten() {
            let name = format!("Typhon.Telemetry.Profiler.Recorder.{key}");
            match (key.as_str(), value) {
                ("Dir", value) => self.capture_dir = trace_value(value),
                ("On", Value::Array(triggers)) => {
                    for trigger in triggers {
                        self.recorder_option(&name, "on", &json_text(trigger))?;
                    }
                }
                ("On", trigger) => self.recorder_option(&name, "on", &json_text(trigger))?,
                (key, value) => match recorder_key(|k| pascal(k) == key) {
                    Some(option) => self.recorder_option(&name, option, &json_text(value))?,
                    None => self.unknown_keys.push(name),
                },
            }
        }
        Ok(())
    }

    /// Keeps recorder option `option` = `value`, read from `name`, once it
    /// reads.
    fn recorder_option(
        &mut self,
        name: &str,
        option: &str,
        value: &str,
    ) -> Result<(), ConfigError> {
        Options::default()
            .set(option, value)
            .map_err(|error| ConfigError::Recorder {
                key: name.into(),
                error: Box::new(error),
            })?;
        self.recorder.push((option.into(), value.into()));
        Ok(())
    }

    /// Reads `TYPHON__PROFILER__*` variables from `vars`.
    pub fn from_env<K: AsRef<str>, V: AsRef<str>>(
        vars: impl IntoIterator<Item = (K, V)>,
    ) -> Result<Self, ConfigError> {
        let mut layer = ConfigLayer::default();
        for (key, value) in vars {
            let (key, value) = (key.as_ref(), value.as_ref());
            let Some(setting) = key.strip_prefix("TYPHON__PROFILER__") else {
                continue;
            };
            match setting.to_ascii_uppercase().as_str() {
                "ENABLED" => layer.enabled = Some(bool_text(key, value)?),
                "LIVE" => layer.live = Some(live_text(value)),
                "LIVEWAITMS" => layer.live_wait_ms = Some(wait_value(key, value)?),
                "CPUSAMPLEMS" => layer.cpu_sample_ms = Some(wait_value(key, value)?),
                "CPUSWITCHES" => layer.cpu_switches = Some(bool_text(key, value)?),
                "STACKSAMPLEHZ" => layer.stack_sample_hz = Some(hz_value(key, value)?),
                "STACKCOPIES" => layer.stack_copies = Some(bool_text(key, value)?),
                "ALLOCATIONSAMPLEBYTES" => {
                    layer.allocation_sample_bytes = Some(bytes_value(key, value)?)
                }
                "BINDADDRESS" => layer.bind_address = Some(address_value(key, value)?),
                "TRACE" => layer.trace = (!value.is_empty()).then(|| value.into()),
                "COMPRESSION" => layer.compression = Some(compression_value(key, value)?),
                "RINGEVENTS" => layer.ring_events = Some(ring_value(key, value)?),
                "RECORDER__DIR" => layer.capture_dir = (!value.is_empty()).then(|| value.into()),
                "RECORDER__ON" => {
                    for trigger in value.split(';').filter(|t| !t.trim().is_empty()) {
                        layer.recorder_option(key, "on", trigger)?;
                    }
                }
                other => match other.strip_prefix("RECORDER__").and_then(|rest| {
                    recorder_key(|k| k.replace('_', "").to_ascii_uppercase() == rest)
                }) {
                    Some(option) => layer.recorder_option(key, option, value)?,
                    None => layer.unknown_keys.push(key.into()),
                },
            }
        }
        Ok(layer)
    }

    /// Reads the profiler's flags from a host program's arguments; every
    /// other argument is left for the host.
    pub fn from_args<S: AsRef<str>>(
        args: impl IntoIterator<Item = S>,
    ) -> Result<Self, ConfigError> {
        let args: Vec<String> = args.into_iter().map(|a| a.as_ref().to_owned()).collect();
        let mut layer = ConfigLayer::default();
        let mut i = 0;
        while i < args.len() {
            let (flag, inline) = match args[i].split_once('=') {
                Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
                _ => (args[i].as_str(), None),
            };
            let next_value = |i: &mut usize| -> Option<String> {
                if inline.is_some() {
                    return inline.clone();
                }
                let value = args.get(*i + 1).filter(|v| !v.starts_with("--")).cloned();
                if value.is_some() {
                    *i += 1;
                }
                value
            };
            match flag {
                "--live" => {
                    // The port is optional: `--live` alone listens on 9100.
                    let port = match inline.clone() {
                        Some(v) => Some(v),
                        None => args
                            .get(i + 1)
                            .filter(|v| v.parse::<u16>().is_ok())
                            .cloned()
                            .inspect(|_| i += 1),
                    };
                    layer.live = Some(Some(port.map_or(DEFAULT_LIVE_PORT, |p| {
                        p.parse().unwrap_or(DEFAULT_LIVE_PORT)
                    })));
                }
                "--live-wait" => {
                    let value =
                        next_value(&mut i).ok_or_else(|| missing("--live-wait", "milliseconds"))?;
                    layer.live_wait_ms = Some(wait_value("--live-wait", &value)?);
                }
                "--cpu-sample-ms" => {
                    let value = next_value(&mut i)
                        .ok_or_else(|| missing("--cpu-sample-ms", "milliseconds"))?;
                    layer.cpu_sample_ms = Some(wait_value("--cpu-sample-ms", &value)?);
                }
                "--cpu-switches" => {
                    let value =
                        next_value(&mut i).ok_or_else(|| missing("--cpu-switches", "on or off"))?;
                    layer.cpu_switches = Some(bool_text("--cpu-switches", &value)?);
                }
                "--stack-sample-hz" => {
                    let value = next_value(&mut i)
                        .ok_or_else(|| missing("--stack-sample-hz", "samples a second"))?;
                    layer.stack_sample_hz = Some(hz_value("--stack-sample-hz", &value)?);
                }
                "--stack-copies" => {
                    let value =
                        next_value(&mut i).ok_or_else(|| missing("--stack-copies", "on or off"))?;
                    layer.stack_copies = Some(bool_text("--stack-copies", &value)?);
                }
                "--allocation-sample-bytes" => {
                    let value = next_value(&mut i)
                        .ok_or_else(|| missing("--allocation-sample-bytes", "bytes"))?;
                    layer.allocation_sample_bytes =
                        Some(bytes_value("--allocation-sample-bytes", &value)?);
                }
                "--bind-address" => {
                    let value = next_value(&mut i)
                        .ok_or_else(|| missing("--bind-address", "an IP address"))?;
                    layer.bind_address = Some(address_value("--bind-address", &value)?);
                }
                "--trace" => {
                    let value =
                        next_value(&mut i).ok_or_else(|| missing("--trace", "a file path"))?;
                    layer.trace = Some(value.into());
                }
                "--compression" => {
                    let value = next_value(&mut i)
                        .ok_or_else(|| missing("--compression", "off, lz4 or auto"))?;
                    layer.compression = Some(compression_value("--compression", &value)?);
                }
                "--ring-events" => {
                    let value = next_value(&mut i)
                        .ok_or_else(|| missing("--ring-events", "a number of events"))?;
                    layer.ring_events = Some(ring_value("--ring-events", &value)?);
                }
                "--capture-dir" => {
                    let value = next_value(&mut i)
                        .ok_or_else(|| missing("--capture-dir", "a directory"))?;
                    layer.capture_dir = Some(value.into());
                }
                flag => {
                    let option = flag.strip_prefix("--capture-").and_then(|rest| {
                        recorder_key(|k| k.replace('_', "-") == rest)
                            .or((rest == "on").then_some("on"))
                    });
                    if let Some(option) = option {
                        // A trigger holds spaces and `>`: its value is the
                        // next argument whatever it starts with.
                        let value = inline.clone().or_else(|| {
                            let value = args.get(i + 1).cloned();
                            i += usize::from(value.is_some());
                            value
                        });
                        let value = value.ok_or_else(|| missing(flag, "a value"))?;
                        layer.recorder_option(flag, option, &value)?;
                    }
                }
            }
            i += 1;
        }
        Ok(layer)
    }
}

impl ProfilerConfig {
    /// Applies `layers` in order (lowest first) over the defaults.
    pub fn layered<'a>(layers: impl IntoIterator<Item = &'a ConfigLayer>) -> Self {
        let mut config = ProfilerConfig::default();
        for layer in layers {
            for key in &layer.unknown_keys {
                log::warn!("typhon-live: unknown configuration key {key} ignored");
            }
            if let Some(enabled) = layer.enabled {
                config.enabled = enabled;
            }
            if let Some(live) = layer.live {
                config.live = live;
            }
            if let Some(ms) = layer.live_wait_ms {
                config.live_wait = Duration::from_millis(ms);
            }
            if let Some(ms) = layer.cpu_sample_ms {
                config.cpu_samples = (ms > 0).then(|| Duration::from_millis(ms));
            }
            if let Some(switches) = layer.cpu_switches {
                config.cpu_switches = switches;
            }
            if let Some(hz) = layer.stack_sample_hz {
                config.stack_sample_hz = hz;
            }
            if let Some(copies) = layer.stack_copies {
                config.stack_copies = copies;
            }
            if let Some(bytes) = layer.allocation_sample_bytes {
                config.allocation_sample_bytes = bytes;
            }
            if let Some(address) = layer.bind_address {
                config.bind_address = address;
            }
            if let Some(trace) = &layer.trace {
                config.trace = Some(trace.clone());
            }
            if let Some(compression) = layer.compression {
                config.compression = compression;
            }
            if let Some(events) = layer.ring_events {
                config.ring_events = events;
            }
            if let Some(dir) = &layer.capture_dir {
                config.capture_dir = Some(dir.clone());
            }
            // A layer's triggers replace the lower layers'; its other
            // options replace theirs key by key.
            if layer.recorder.iter().any(|(k, _)| k == "on") {
                config.recorder.retain(|(k, _)| k != "on");
            }
            for (key, value) in &layer.recorder {
                if key != "on" {
                    config.recorder.retain(|(k, _)| k != key);
                }
                config.recorder.push((key.clone(), value.clone()));
            }
        }
        config
    }

    /// The flight recorder's options, when its directory is set; checked
    /// together (a window before longer than the past kept, say).
    pub fn recorder_options(&self) -> Result<Option<(PathBuf, Options)>, OptionError> {
        let Some(dir) = &self.capture_dir else {
            return Ok(None);
        };
        let mut options = Options::default();
        for (key, value) in &self.recorder {
            options.set(key, value)?;
        }
        options.check()?;
        Ok(Some((dir.clone(), options)))
    }

    /// The configuration of this process: `typhon.telemetry.json` in the
    /// working directory (or `file`), the environment, then `args`.
    pub fn load<S: AsRef<str>>(
        file: Option<&Path>,
        args: impl IntoIterator<Item = S>,
    ) -> Result<Self, ConfigError> {
        let file = ConfigLayer::from_file(file.unwrap_or(Path::new(CONFIG_FILE)))?;
        let env = ConfigLayer::from_env(std::env::vars())?;
        let args = ConfigLayer::from_args(args)?;
        Ok(Self::layered([&file, &env, &args]))
    }
}

fn invalid(key: &str, value: &Value, expected: &'static str) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        value: value.to_string(),
        expected,
    }
}

fn missing(flag: &str, expected: &'static str) -> ConfigError {
    ConfigError::Invalid {
        key: flag.into(),
        value: String::new(),
        expected,
    }
}

fn json_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn bool_value(key: &str, value: &Value) -> Result<bool, ConfigError> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::String(s) => bool_text(key, s),
        other => Err(invalid(key, other, "true or false")),
    }
}

fn bool_text(key: &str, value: &str) -> Result<bool, ConfigError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(ConfigError::Invalid {
            key: key.into(),
            value: value.into(),
            expected: "true or false",
        }),
    }
}

/// `Live`: a port; `false`/`null` turns it off; anything else listens on 9100.
fn live_value(value: &Value) -> Option<u16> {
    match value {
        Value::Null | Value::Bool(false) => None,
        Value::Number(n) => Some(
            n.as_u64()
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(DEFAULT_LIVE_PORT),
        ),
        Value::String(s) => live_text(s),
        _ => Some(DEFAULT_LIVE_PORT),
    }
}

fn live_text(value: &str) -> Option<u16> {
    match value.trim() {
        "" | "false" | "off" => None,
        text => Some(text.parse().unwrap_or(DEFAULT_LIVE_PORT)),
    }
}

fn bytes_value(key: &str, value: &str) -> Result<u64, ConfigError> {
    value
        .trim()
        .parse::<u64>()
        .map_err(|_| ConfigError::Invalid {
            key: key.into(),
            value: value.trim().into(),
            expected: "a whole number of bytes, 0 or more",
        })
}

fn wait_value(key: &str, value: &str) -> Result<u64, ConfigError> {
    let value = value.trim();
    match value.parse::<i64>() {
        Ok(ms) if ms >= 0 => Ok(ms as u64),
        Ok(_) => Err(ConfigError::Invalid {
            key: key.into(),
            value: value.into(),
            expected: "milliseconds, 0 or more",
        }),
        Err(_) => Err(ConfigError::Invalid {
            key: key.into(),
            value: value.into(),
            expected: "a whole number of milliseconds",
        }),
    }
}

fn address_value(key: &str, value: &str) -> Result<IpAddr, ConfigError> {
    let value = value.trim();
    let value = if value.eq_ignore_ascii_case("localhost") {
        "127.0.0.1"
    } else {
        value
    };
    value.parse().map_err(|_| ConfigError::Invalid {
        key: key.into(),
        value: value.into(),
        expected: "an IP address such as 127.0.0.1",
    })
}

fn compression_value(key: &str, value: &str) -> Result<Compression, ConfigError> {
    let value = value.trim();
    value.parse().map_err(|_| ConfigError::Invalid {
        key: key.into(),
        value: value.into(),
        expected: "off, lz4 or auto",
    })
}

fn hz_value(key: &str, value: &str) -> Result<u32, ConfigError> {
    let value = value.trim();
    value
        .parse::<u32>()
        .ok()
        .filter(|&hz| hz <= crate::stack_samples::MAX_HZ)
        .ok_or_else(|| ConfigError::Invalid {
            key: key.into(),
            value: value.into(),
            expected: "samples a second, from 0 to 10000",
        })
}

fn ring_value(key: &str, value: &str) -> Result<usize, ConfigError> {
    let value = value.trim();
    value
        .parse::<usize>()
        .ok()
        .filter(|&n| valid_ring_events(n))
        .ok_or_else(|| ConfigError::Invalid {
            key: key.into(),
            value: value.into(),
            expected: "a power of two from 1024 to 65536",
        })
}

/// The recorder options besides `on` and the directory, by key.
const RECORDER_KEYS: [&str; 10] = [
    "keep",
    "keep_bytes",
    "before",
    "after",
    "cooldown",
    "spacing",
    "max_capture",
    "max_capture_bytes",
    "max_files",
    "max_bytes",
];

/// The recorder option whose spelling in a layer passes `matches`.
fn recorder_key(matches: impl Fn(&str) -> bool) -> Option<&'static str> {
    RECORDER_KEYS.into_iter().find(|k| matches(k))
}

/// `keep_bytes` as the file spells it: `KeepBytes`.
fn pascal(key: &str) -> String {
    key.split('_')
        .map(|word| {
            let mut chars = word.chars();
            chars.next().map_or_else(String::new, |c| {
                c.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect()
}

fn trace_value(value: &Value) -> Option<PathBuf> {
    match value {
        Value::String(s) if !s.is_empty() => Some(s.into()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn file(json: Value) -> ConfigLayer {
        ConfigLayer::from_json(&json).unwrap()
    }

    #[test]
    fn defaults_bind_loopback_and_do_not_listen() {
        let config = ProfilerConfig::default();
        assert_eq!(config.bind_address, IpAddr::from([127, 0, 0, 1]));
        assert_eq!(config.live, None);
        assert_eq!(config.live_wait, Duration::ZERO);
        assert!(config.enabled);
    }

    #[test]
    fn the_documented_file_shape_is_read() {
        let layer = file(
            json!({ "Typhon": { "Telemetry": { "Enabled": true, "Profiler": {
            "Enabled": true, "Live": 9100, "LiveWaitMs": 5000, "BindAddress": "127.0.0.1", "Trace": "run.tlt" } } } }),
        );
        let config = ProfilerConfig::layered([&layer]);
        assert_eq!(config.live, Some(9100));
        assert_eq!(config.live_wait, Duration::from_millis(5000));
        assert_eq!(config.trace, Some(PathBuf::from("run.tlt")));
        assert!(layer.unknown_keys.is_empty());
    }

    #[test]
    fn a_command_line_without_bind_address_keeps_the_files() {
        let from_file = file(
            json!({ "Typhon": { "Telemetry": { "Profiler": { "BindAddress": "0.0.0.0", "Live": 9200 } } } }),
        );
        let from_args = ConfigLayer::from_args(["game", "--live", "--trace", "x.tlt"]).unwrap();
        let config = ProfilerConfig::layered([&from_file, &from_args]);
        assert_eq!(config.bind_address, IpAddr::from([0, 0, 0, 0]));
        assert_eq!(config.live, Some(DEFAULT_LIVE_PORT));
        assert_eq!(config.trace, Some(PathBuf::from("x.tlt")));
    }

    #[test]
    fn layers_override_in_order() {
        let from_file = file(
            json!({ "Typhon": { "Telemetry": { "Profiler": { "Live": 1, "LiveWaitMs": 10 } } } }),
        );
        let env = ConfigLayer::from_env([
            ("TYPHON__PROFILER__LIVE", "2"),
            ("TYPHON__PROFILER__BINDADDRESS", "::1"),
            ("PATH", "/bin"),
        ])
        .unwrap();
        let args = ConfigLayer::from_args(["--live", "3", "--bind-address=127.0.0.2"]).unwrap();
        let config = ProfilerConfig::layered([&from_file, &env, &args]);
        assert_eq!(config.live, Some(3));
        assert_eq!(config.live_wait, Duration::from_millis(10));
        assert_eq!(config.bind_address, IpAddr::from([127, 0, 0, 2]));
        let config = ProfilerConfig::layered([&from_file, &env]);
        assert_eq!(config.bind_address, "::1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn the_allocation_sampling_layers_like_every_key_and_refuses_what_is_not_bytes() {
        assert_eq!(ProfilerConfig::default().allocation_sample_bytes, 512 << 10);
        let from_file = file(
            json!({ "Typhon": { "Telemetry": { "Profiler": { "AllocationSampleBytes": 4096 } } } }),
        );
        let env =
            ConfigLayer::from_env([("TYPHON__PROFILER__ALLOCATIONSAMPLEBYTES", "0")]).unwrap();
        let args = ConfigLayer::from_args(["--allocation-sample-bytes", "65536"]).unwrap();
        let bytes = |layers: &[&ConfigLayer]| {
            ProfilerConfig::layered(layers.iter().copied()).allocation_sample_bytes
        };
        assert_eq!(bytes(&[&from_file]), 4096);
        assert_eq!(bytes(&[&from_file, &env]), 0);
        assert_eq!(bytes(&[&from_file, &env, &args]), 65536);
        let err = ConfigLayer::from_args(["--allocation-sample-bytes", "-1"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--allocation-sample-bytes = \"-1\" is invalid: expected a whole number of bytes, 0 or more"
        );
    }

    #[test]
    fn the_stack_sampling_rate_layers_like_every_key_and_refuses_what_is_not_a_rate() {
        assert_eq!(ProfilerConfig::default().stack_sample_hz, 0);
        let from_file =
            file(json!({ "Typhon": { "Telemetry": { "Profiler": { "StackSampleHz": 99 } } } }));
        let env = ConfigLayer::from_env([("TYPHON__PROFILER__STACKSAMPLEHZ", "1000")]).unwrap();
        let args =
            ConfigLayer::from_args(["--stack-sample-hz=0", "--stack-copies", "off"]).unwrap();
        let hz = |layers: &[&ConfigLayer]| {
            let config = ProfilerConfig::layered(layers.iter().copied());
            (config.stack_sample_hz, config.stack_copies)
        };
        assert_eq!(hz(&[&from_file]), (99, true));
        assert_eq!(hz(&[&from_file, &env]), (1000, true));
        assert_eq!(hz(&[&from_file, &env, &args]), (0, false));
        for bad in ["10001", "-5", "fast"] {
            let err = ConfigLayer::from_args(["--stack-sample-hz", bad]).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("--stack-sample-hz = \"{bad}\" is invalid: expected samples a second, from 0 to 10000")
            );
        }
    }

    #[test]
    fn the_cpu_keys_layer_like_every_key() {
        let default = ProfilerConfig::default();
        assert_eq!(default.cpu_samples, Some(Duration::from_millis(10)));
        assert!(default.cpu_switches);
        let from_file = file(
            json!({ "Typhon": { "Telemetry": { "Profiler": { "CpuSampleMs": 20, "CpuSwitches": false } } } }),
        );
        let env = ConfigLayer::from_env([("TYPHON__PROFILER__CPUSWITCHES", "on")]).unwrap();
        let args =
            ConfigLayer::from_args(["--cpu-sample-ms", "0", "--cpu-switches", "off"]).unwrap();
        let config = ProfilerConfig::layered([&from_file]);
        assert_eq!(
            (config.cpu_samples, config.cpu_switches),
            (Some(Duration::from_millis(20)), false)
        );
        assert!(ProfilerConfig::layered([&from_file, &env]).cpu_switches);
        let config = ProfilerConfig::layered([&from_file, &env, &args]);
        assert_eq!((config.cpu_samples, config.cpu_switches), (None, false));
        let err = ConfigLayer::from_args(["--cpu-switches", "sometimes"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--cpu-switches = \"sometimes\" is invalid: expected true or false"
        );
        assert!(ConfigLayer::from_args(["--cpu-switches"]).is_err());
    }

    #[test]
    fn compression_layers_like_every_key() {
        assert_eq!(ProfilerConfig::default().compression, Compression::Auto);
        let from_file =
            file(json!({ "Typhon": { "Telemetry": { "Profiler": { "Compression": "lz4" } } } }));
        let env = ConfigLayer::from_env([("TYPHON__PROFILER__COMPRESSION", "OFF")]).unwrap();
        let args = ConfigLayer::from_args(["--compression=auto"]).unwrap();
        assert_eq!(
            ProfilerConfig::layered([&from_file]).compression,
            Compression::Lz4
        );
        assert_eq!(
            ProfilerConfig::layered([&from_file, &env]).compression,
            Compression::Off
        );
        assert_eq!(
            ProfilerConfig::layered([&from_file, &env, &args]).compression,
            Compression::Auto
        );
        let ring = ConfigLayer::from_env([("TYPHON__PROFILER__RINGEVENTS", "65536")]).unwrap();
        assert_eq!(ProfilerConfig::layered([&ring]).ring_events, 65536);
        for bad in ["1000", "512", "131072", "many"] {
            let err = ConfigLayer::from_args(["--ring-events", bad]).unwrap_err();
            assert!(
                err.to_string()
                    .contains("expected a power of two from 1024 to 65536"),
                "{err}"
            );
        }
        let err = ConfigLayer::from_args(["--compression", "zstd"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--compression = \"zstd\" is invalid: expected off, lz4 or auto"
        );
        assert!(ConfigLayer::from_args(["--compression"]).is_err());
        let err = ConfigLayer::from_json(
            &json!({ "Typhon": { "Telemetry": { "Profiler": { "Compression": true } } } }),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .contains("Typhon.Telemetry.Profiler.Compression"),
            "{err}"
        );
    }

    #[test]
    fn non_numeric_live_falls_back_to_9100() {
        let layer =
            file(json!({ "Typhon": { "Telemetry": { "Profiler": { "Live": "yes please" } } } }));
        assert_eq!(ProfilerConfig::layered([&layer]).live, Some(9100));
        let layer = ConfigLayer::from_env([("TYPHON__PROFILER__LIVE", "abc")]).unwrap();
        assert_eq!(layer.live, Some(Some(9100)));
        assert_eq!(
            ConfigLayer::from_args(["--live", "--trace", "t"])
                .unwrap()
                .live,
            Some(Some(9100))
        );
        assert_eq!(
            ConfigLayer::from_args(["--live", "0"]).unwrap().live,
            Some(Some(0))
        );
    }

    #[test]
    fn bad_values_are_clear_errors() {
        let err = ConfigLayer::from_json(
            &json!({ "Typhon": { "Telemetry": { "Profiler": { "LiveWaitMs": -5 } } } }),
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "Typhon.Telemetry.Profiler.LiveWaitMs = \"-5\" is invalid: expected milliseconds, 0 or more");
        let err = ConfigLayer::from_args(["--bind-address", "not-an-ip"]).unwrap_err();
        assert!(
            err.to_string().contains("--bind-address = \"not-an-ip\""),
            "{err}"
        );
        let err = ConfigLayer::from_env([("TYPHON__PROFILER__LIVEWAITMS", "soon")]).unwrap_err();
        assert!(
            err.to_string().contains("TYPHON__PROFILER__LIVEWAITMS"),
            "{err}"
        );
        assert!(ConfigLayer::from_args(["--live-wait"]).is_err());
    }

    #[test]
    fn unknown_keys_are_collected_not_fatal() {
        let layer = file(
            json!({ "Other": 1, "Typhon": { "Telemetry": { "Profiler": { "Live": 5, "Colour": "red" } } } }),
        );
        assert_eq!(
            layer.unknown_keys,
            ["Other", "Typhon.Telemetry.Profiler.Colour"]
        );
        assert_eq!(layer.live, Some(Some(5)));
    }

    #[test]
    fn disabled_at_either_level_is_disabled() {
        let layer = file(
            json!({ "Typhon": { "Telemetry": { "Enabled": false, "Profiler": { "Enabled": true } } } }),
        );
        assert!(!ProfilerConfig::layered([&layer]).enabled);
    }

    #[test]
    fn a_missing_file_is_empty_and_bad_json_is_an_error() {
        let dir = std::env::temp_dir().join(format!("typhon-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        assert_eq!(
            ConfigLayer::from_file(&dir.join("absent.json")).unwrap(),
            ConfigLayer::default()
        );
        let bad = dir.join("bad.json");
        std::fs::write(&bad, "{ not json").unwrap();
        let err = ConfigLayer::from_file(&bad).unwrap_err();
        assert!(
            err.to_string().contains("bad.json is not valid JSON"),
            "{err}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
