//! `typhon-live view FILE`: a recorded trace in the live view's screen,
//! paused at its end, to scroll back through, step tick by tick, and find
//! the worst tick in. The record → view path is how a run is looked at
//! after the fact.

use std::io::{IsTerminal, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::Path;
use std::time::{Duration, Instant};

use typhon_live_model::{Connection, Model};
use typhon_live_relay::browser::replay::Replayed;
use typhon_live_symbols::DebugFiles;
use typhon_live_tui::action::Action;
use typhon_live_tui::app::Screen;

use crate::error::CliError;
use crate::trace_file;

/// The history a file may fill: the whole file when it fits, its last
/// part when not (the view says which).
pub const VIEW_HISTORY_BYTES: usize = 2 << 30;

/// Reads `path` into a model and shows it: the screen on a terminal, else
/// one summary (`--json`: as JSON). With `symbols`, its stacks are named
/// from the debug files there first.
pub fn run(path: &Path, json: bool, symbols: Option<&Path>) -> Result<(), CliError> {
    let mut model = load(path, symbols)?;
    if json || !std::io::stdout().is_terminal() {
        let line = model.summary_line(typhon_live_tui::uptime::now(), json);
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
        return Ok(());
    }
    let mut screen = Screen::open().map_err(|e| CliError::Terminal(e.to_string()))?;
    // A capture opens on its first trigger; any other file paused at its
    // end.
    let opening = if model.triggers().is_empty() {
        Action::TogglePause
    } else {
        Action::NextTrigger
    };
    screen.apply(&model, opening);
    loop {
        screen.draw(&mut model, Instant::now());
        let (quit, _) = screen.keys(&model, Duration::from_millis(250));
        if quit {
            break;
        }
    }
    screen.close();
    Ok(())
}

/// Serves the file at `path` to the browser viewer on `port` of
/// loopback, until the process is stopped: each tab reads the whole
/// file, then shows it paused at its end. With `symbols`, the stream
/// served is the file's with its stacks named from the debug files there.
pub fn serve(path: &Path, port: u16, symbols: Option<&Path>) -> Result<(), CliError> {
    // Refused now, not in each tab that asks.
    std::fs::File::open(path).map_err(|e| CliError::File {
        path: path.into(),
        reason: e.to_string(),
    })?;
    let replayed = match symbols {
        None => Replayed::File(path.to_path_buf()),
        Some(dir) => {
            let (bytes, said) = symbolized(&trace_file::read(path)?, dir)?;
            eprintln!("typhon-live view: {said}");
            Replayed::Bytes {
                bytes: bytes.into(),
                name: path.display().to_string(),
            }
        }
    };
    let address = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port);
    let stream = typhon_live_relay::browser::replay::routes_of(replayed);
    let url = typhon_live_relay::browser::page::serve("typhon-live view", address, stream, None)?;
    let mut out = std::io::stdout();
    let _ = writeln!(out, "typhon-live view: browser viewer at {url}");
    let _ = out.flush();
    loop {
        std::thread::park();
    }
}

/// `bytes` with the stacks' code named from the debug files under `dir`,
/// and a sentence saying what was found.
fn symbolized(bytes: &[u8], dir: &Path) -> Result<(Vec<u8>, String), CliError> {
    let mut files = DebugFiles::index(dir).map_err(|e| CliError::File {
        path: dir.into(),
        reason: e.to_string(),
    })?;
    let found = typhon_live_symbols::symbolize(bytes, &mut files);
    let mut said = format!(
        "{} code addresses named from {} ({} ELF files)",
        found.named,
        dir.display(),
        files.len()
    );
    if found.unnamed > 0 {
        said.push_str(&format!(
            ", {} in a debug file that names nothing there",
            found.unnamed
        ));
    }
    if found.no_debug_file > 0 {
        let modules: Vec<String> = (found.modules_without_debug_file.iter())
            .map(|(path, id)| match id.as_str() {
                "" => path.clone(),
                id => format!("{path} (build id {id})"),
            })
            .collect();
        said.push_str(&format!(
            ", {} without a debug file there{}{}",
            found.no_debug_file,
            if modules.is_empty() { "" } else { ": " },
            modules.join(", ")
        ));
    }
    Ok((found.bytes, said))
}

/// The model of the whole file (as much as [`VIEW_HISTORY_BYTES`] holds),
/// with a notice saying what it holds and where the file is damaged (and,
/// with `symbols`, what was named from there).
fn load(path: &Path, symbols: Option<&Path>) -> Result<Model, CliError> {
    let mut bytes = trace_file::read(path)?;
    let mut named = None;
    if let Some(dir) = symbols {
        let (symbolized, said) = symbolized(&bytes, dir)?;
        bytes = symbolized;
        named = Some(said);
    }
    let mut model = Model::with_history(f64::INFINITY, VIEW_HISTORY_BYTES);
    let mut frames_read = 0u64;
    let damage = typhon_live_reader::frames(&bytes, |frame| {
        frames_read += 1;
        model.on_frame(frame, typhon_live_tui::uptime::now())
    });
    trace_file::require_frames(path, frames_read, &damage)?;
    model.flush_history();
    // After the frames: a Shutdown in the file says "ended".
    model.connection = Connection::File {
        path: path.display().to_string(),
    };
    let history = model.history();
    let held = format!(
        "{} records, {:.1} MiB",
        history.records(),
        history.bytes() as f64 / (1 << 20) as f64
    );
    let mut notice = if history.evicted_records() > 0 {
        format!(
            "the file is larger than the view's {} GiB: its last part is shown ({held}; {} earlier records left out)",
            VIEW_HISTORY_BYTES >> 30,
            history.evicted_records()
        )
    } else {
        format!("the whole file is shown ({held})")
    };
    if let Some(first) = damage.first() {
        notice.push_str(&format!(
            "; damaged in {} places, the first at byte {}: {}",
            damage.len(),
            first.offset,
            first.error
        ));
    }
    // A capture says so first: its trigger is what it is about.
    if let Some(first) = model.triggers().first() {
        let count = model.triggers().len();
        let more = if count > 1 {
            format!(" (1 of {count}: t for the next)")
        } else {
            String::new()
        };
        notice = format!(
            "a capture, opened on its trigger \"{}\" at {:.3} s{more}; {notice}",
            model.name(first.label),
            first.time as f64 / 1e9,
        );
    }
    if let Some(named) = named {
        notice.push_str(&format!("; {named}"));
    }
    model.notice = Some(notice);
    Ok(model)
}
