//! Captures on disk: a directory bounded in files and bytes, oldest
//! first out. Each capture is written under a temporary name and renamed
//! when whole, so a crash never leaves half a file under a capture's
//! name; a write that fails (a full disk) is said, counted, and leaves
//! nothing behind.

use std::collections::VecDeque;
use std::fmt;
use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::string::String;
use std::time::{SystemTime, UNIX_EPOCH};

pub use crate::options::Limits;
use crate::Capture;

/// Capture files are named `PREFIX-UNIXMS.tlt`; the prefix is this unless
/// said (the relay's is its source's name).
pub const DEFAULT_PREFIX: &str = "capture";

/// What a store did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StoreStats {
    /// Captures written whole.
    pub written: u64,
    /// Their bytes.
    pub bytes_written: u64,
    /// Older captures removed to stay within the limits.
    pub removed: u64,
    /// Captures that could not be written (a full disk, a capture over
    /// the byte limit alone).
    pub failed: u64,
}

/// Why a capture was not written.
#[derive(Debug)]
#[non_exhaustive]
pub enum StoreError {
    /// The directory could not be made or read.
    Directory {
        /// The directory.
        path: PathBuf,
        /// Why.
        reason: io::Error,
    },
    /// Writing or renaming the file failed (a full disk, say); nothing
    /// was left behind.
    Write {
        /// The capture's file.
        path: PathBuf,
        /// Why.
        reason: io::Error,
    },
    /// The capture alone is over the directory's byte limit.
    TooLarge {
        /// Its bytes.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreError::Directory { path, reason } => {
                write!(f, "capture directory {}: {reason}", path.display())
            }
            StoreError::Write { path, reason } => {
                write!(f, "capture {} not written: {reason}", path.display())
            }
            StoreError::TooLarge { bytes, limit } => write!(
                f,
                "capture of {bytes} bytes not written: over the directory's limit of {limit} bytes"
            ),
        }
    }
}

impl std::error::Error for StoreError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StoreError::Directory { reason, .. } | StoreError::Write { reason, .. } => Some(reason),
            StoreError::TooLarge { .. } => None,
        }
    }
}

/// Writes a whole file: create, write, flush to the disk.
pub type WriteFile = fn(&Path, &[u8]) -> io::Result<()>;

fn write_file(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_data()
}

/// A directory of captures.
#[derive(Debug)]
pub struct Store {
    dir: PathBuf,
    prefix: String,
    limits: Limits,
    /// The captures in it, oldest first, with their sizes.
    files: VecDeque<(PathBuf, u64)>,
    bytes: u64,
    write: WriteFile,
    stats: StoreStats,
}

impl Store {
    /// The directory `dir` (made if missing), its files named from
    /// `prefix`. Captures already there count against the limits; a
    /// temporary file a crash left is removed.
    pub fn open(dir: &Path, prefix: &str, limits: Limits) -> Result<Store, StoreError> {
        Store::with_writer(dir, prefix, limits, write_file)
    }

    /// [`Store::open`], writing each file with `write` (a test's full
    /// disk).
    pub fn with_writer(
        dir: &Path,
        prefix: &str,
        limits: Limits,
        write: WriteFile,
    ) -> Result<Store, StoreError> {
        let directory = |reason| StoreError::Directory {
            path: dir.into(),
            reason,
        };
        fs::create_dir_all(dir).map_err(directory)?;
        let mut files = Vec::new();
        for entry in fs::read_dir(dir).map_err(directory)? {
            let entry = entry.map_err(directory)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') && name.ends_with(".part") && name.contains(prefix) {
                let _ = fs::remove_file(entry.path());
            } else if is_capture(&name, prefix) {
                let len = entry.metadata().map_or(0, |m| m.len());
                files.push((entry.path(), len));
            }
        }
        // Names hold the time: in order of name is oldest first.
        files.sort();
        let bytes = files.iter().map(|(_, len)| len).sum();
        Ok(Store {
            dir: dir.into(),
            prefix: prefix.into(),
            limits,
            files: files.into(),
            bytes,
            write,
            stats: StoreStats::default(),
        })
    }

    /// What it did.
    pub fn stats(&self) -> &StoreStats {
        &self.stats
    }

    /// Capture files held, and their bytes.
    pub fn held(&self) -> (usize, u64) {
        (self.files.len(), self.bytes)
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes `capture`, removing the oldest captures first as the limits
    /// need; each removed file goes to `removed` (to be said). Its path,
    /// or why it was not written: then nothing of it is left on disk.
    pub fn write(
        &mut self,
        capture: &Capture,
        mut removed: impl FnMut(&Path),
    ) -> Result<PathBuf, StoreError> {
        let len = capture.bytes.len() as u64;
        if len > self.limits.bytes || self.limits.files == 0 {
            self.stats.failed += 1;
            return Err(StoreError::TooLarge {
                bytes: len,
                limit: self.limits.bytes,
            });
        }
        while self.files.len() >= self.limits.files || self.bytes + len > self.limits.bytes {
            let Some((path, old)) = self.files.pop_front() else {
                break;
            };
            self.bytes -= old;
            if fs::remove_file(&path).is_ok() {
                self.stats.removed += 1;
                removed(&path);
            }
        }
        let path = self.free_name();
        let name = path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
        let part = self.dir.join(format!(".{name}.part"));
        let written = (self.write)(&part, &capture.bytes).and_then(|()| fs::rename(&part, &path));
        if let Err(reason) = written {
            let _ = fs::remove_file(&part);
            self.stats.failed += 1;
            return Err(StoreError::Write { path, reason });
        }
        self.files.push_back((path.clone(), len));
        self.bytes += len;
        self.stats.written += 1;
        self.stats.bytes_written += len;
        Ok(path)
    }

    /// `PREFIX-UNIXMS.tlt`, one ms later while that name is taken.
    fn free_name(&self) -> PathBuf {
        let mut ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        if let Some(last) = self
            .files
            .back()
            .and_then(|(p, _)| capture_ms(p, &self.prefix))
        {
            ms = ms.max(last + 1);
        }
        loop {
            let path = self.dir.join(format!("{}-{ms:013}.tlt", self.prefix));
            if !path.exists() {
                return path;
            }
            ms += 1;
        }
    }
}

fn is_capture(name: &str, prefix: &str) -> bool {
    name.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('-'))
        .and_then(|rest| rest.strip_suffix(".tlt"))
        .is_some_and(|ms| !ms.is_empty() && ms.bytes().all(|b| b.is_ascii_digit()))
}

fn capture_ms(path: &Path, prefix: &str) -> Option<u64> {
    let name = path.file_name()?.to_str()?;
    let rest = name.strip_prefix(prefix)?.strip_prefix('-')?;
    rest.strip_suffix(".tlt")?.parse().ok()
}

impl Store {
    /// The prefix its files are named from.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }
}

/// Captures made whole and not yet written, at most, in a [`Writer`]: a
/// disk slower than the triggers loses captures (counted), never the
/// reading thread's time.
pub const WAITING: usize = 2;

/// A store written by a thread of its own, so that whoever reads the
/// stream (an exporter, a relay's source) never waits on the disk.
#[derive(Debug)]
pub struct Writer {
    captures: Option<std::sync::mpsc::SyncSender<Capture>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

/// What became of a capture handed to a [`Writer`], told to its `said`.
#[derive(Debug)]
pub enum Written<'a> {
    /// Written whole, at this path; what made it.
    Whole(&'a Path, &'a Capture),
    /// An older capture removed for the directory's limits.
    Removed(&'a Path),
    /// Not written; nothing of it is left on disk.
    Failed(&'a StoreError),
}

impl Writer {
    /// A thread writing into `store`, telling `said` what became of each
    /// capture.
    pub fn start(
        mut store: Store,
        mut said: impl FnMut(Written<'_>) + Send + 'static,
    ) -> io::Result<Writer> {
        let (captures, waiting) = std::sync::mpsc::sync_channel::<Capture>(WAITING);
        let thread = std::thread::Builder::new()
            .name("typhon-live-captures".into())
            .spawn(move || {
                for capture in waiting {
                    match store.write(&capture, |old| said(Written::Removed(old))) {
                        Ok(path) => said(Written::Whole(&path, &capture)),
                        Err(e) => said(Written::Failed(&e)),
                    }
                }
            })?;
        Ok(Writer {
            captures: Some(captures),
            thread: Some(thread),
        })
    }

    /// Hands `capture` to the thread; it is given back when [`WAITING`]
    /// are already waiting (or the thread is gone).
    pub fn send(&self, capture: Capture) -> Result<(), Capture> {
        match &self.captures {
            Some(captures) => captures.try_send(capture).map_err(|e| match e {
                std::sync::mpsc::TrySendError::Full(c)
                | std::sync::mpsc::TrySendError::Disconnected(c) => c,
            }),
            None => Err(capture),
        }
    }

    /// Hands `capture` to the thread, waiting for room (the stream ended).
    pub fn send_waiting(&self, capture: Capture) -> Result<(), Capture> {
        match &self.captures {
            Some(captures) => captures.send(capture).map_err(|e| e.0),
            None => Err(capture),
        }
    }

    /// Every capture handed over written, then the thread ended.
    pub fn finish(mut self) {
        self.captures = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    fn capture(len: usize) -> Capture {
        Capture {
            bytes: vec![7u8; len],
            begin: 0,
            end: 0,
            fired: Vec::new(),
            fired_more: 0,
            cut: false,
        }
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn the_oldest_goes_first_within_files_and_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let limits = Limits {
            files: 3,
            bytes: 250,
        };
        let mut store = Store::open(dir.path(), "capture", limits).unwrap();
        let mut gone = Vec::new();
        let mut written = Vec::new();
        for _ in 0..5 {
            written.push(
                store
                    .write(&capture(100), |p| gone.push(p.to_path_buf()))
                    .unwrap(),
            );
        }
        // 250 bytes hold two captures of 100: each new one removed the
        // oldest but one.
        assert_eq!(store.held(), (2, 200));
        assert_eq!(gone, written[..3]);
        assert_eq!(store.stats().removed, 3);
        let on_disk = names(dir.path());
        assert_eq!(on_disk.len(), 2);
        assert!(
            on_disk.iter().all(|n| is_capture(n, "capture")),
            "{on_disk:?}"
        );

        // A store opened again counts what is there, and goes on in order.
        let mut again = Store::open(dir.path(), "capture", limits).unwrap();
        assert_eq!(again.held(), (2, 200));
        let newest = again.write(&capture(10), |_| {}).unwrap();
        assert!(names(dir.path()).last().unwrap() == newest.file_name().unwrap().to_str().unwrap());
        assert!(matches!(
            again.write(&capture(251), |_| {}),
            Err(StoreError::TooLarge {
                bytes: 251,
                limit: 250
            })
        ));
    }

    #[test]
    fn a_full_disk_is_said_and_leaves_nothing() {
        fn full(path: &Path, bytes: &[u8]) -> io::Result<()> {
            // Half the file reaches the disk, then it is full.
            fs::write(path, &bytes[..bytes.len() / 2])?;
            Err(io::Error::new(
                io::ErrorKind::StorageFull,
                "No space left on device (injected)",
            ))
        }
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::with_writer(dir.path(), "capture", Limits::default(), full).unwrap();
        let error = store.write(&capture(100), |_| {}).unwrap_err();
        assert!(
            matches!(&error, StoreError::Write { reason, .. } if reason.kind() == io::ErrorKind::StorageFull)
        );
        assert!(
            error.to_string().contains("No space left on device"),
            "{error}"
        );
        assert_eq!(store.stats().failed, 1);
        assert_eq!(names(dir.path()), Vec::<String>::new());
        assert_eq!(store.held(), (0, 0));
    }

    #[test]
    fn a_crash_s_temporary_file_is_cleared_and_never_counted() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(".capture-0000000000001.tlt.part"), b"half").unwrap();
        fs::write(dir.path().join("notes.txt"), b"mine").unwrap();
        let store = Store::open(dir.path(), "capture", Limits::default()).unwrap();
        assert_eq!(store.held(), (0, 0));
        assert_eq!(names(dir.path()), ["notes.txt"]);
    }
}
