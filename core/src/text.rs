//! The Text frame (kind 7): the text of log events, beside the spans.
//!
//! A span or an instant is a fixed-size record in a Block; a log event's
//! message and fields are text of any length, so they travel in a frame
//! of their own, droppable like a Block. Each record names its lane, its
//! call site (a name, defined like every other) and its level, so that a
//! viewer can show it on the timeline and search it.
//!
//! ```text
//! payload: 0  4  texts lost before this frame on this stream, u32 LE
//!          4  2  record count n, u16 LE (at most MAX_TEXTS_PER_FRAME)
//!          6     n records:
//! record:  0  8  time, u64 LE (host ticks)
//!          8  2  lane, u16 LE (NO_LANE: its thread's slot was taken since)
//!          10 1  level (Level)
//!          11 1  flags: bit 0 = the text was cut to MAX_TEXT_BYTES
//!          12 4  call site, a name id, u32 LE
//!          16 2  text length, u16 LE (at most MAX_TEXT_BYTES)
//!          18    the text, UTF-8
//! ```

use crate::cursor::Reader;
use crate::error::{DecodeError, EncodeError};
use crate::event::{LaneId, NameId};
use crate::frame::{write_frame, FrameKind};

/// Bytes of one record's text at most; longer texts are cut to it (at a
/// character boundary) and say so.
pub const MAX_TEXT_BYTES: usize = 1024;
/// Records in one Text frame at most.
pub const MAX_TEXTS_PER_FRAME: usize = 4096;
/// The lane of a text whose thread's lane slot was given to another
/// thread before the text was sent: it cannot be placed on a lane.
pub const NO_LANE: LaneId = LaneId::MAX;
/// Bytes before a record's text.
pub const TEXT_RECORD_HEADER: usize = 18;
/// Bytes of the payload before its records.
const PAYLOAD_HEADER: usize = 6;
/// Flag bit: the text was cut.
const CUT: u8 = 1;

/// How severe a text is, as `tracing` and `log` grade it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Level {
    /// The writer did not say.
    Unspecified,
    /// Finest detail.
    Trace,
    /// Debugging detail.
    Debug,
    /// Normal operation.
    Info,
    /// Something to look at.
    Warn,
    /// Something failed.
    Error,
}

impl Level {
    /// Every level, least severe first.
    pub const ALL: [Level; 6] = [
        Level::Unspecified,
        Level::Trace,
        Level::Debug,
        Level::Info,
        Level::Warn,
        Level::Error,
    ];

    /// The wire byte.
    pub const fn to_byte(self) -> u8 {
        self as u8
    }

    /// The level for a wire byte; past 5 is malformed.
    pub const fn from_byte(byte: u8) -> Result<Level, DecodeError> {
        match byte {
            0 => Ok(Level::Unspecified),
            1 => Ok(Level::Trace),
            2 => Ok(Level::Debug),
            3 => Ok(Level::Info),
            4 => Ok(Level::Warn),
            5 => Ok(Level::Error),
            _ => Err(DecodeError::Malformed { what: "text level" }),
        }
    }

    /// Its name, as `tracing` prints it.
    pub const fn as_str(self) -> &'static str {
        match self {
            Level::Unspecified => "-",
            Level::Trace => "TRACE",
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        }
    }
}

/// One record of a Text frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Text<'a> {
    /// When it was recorded, host ticks.
    pub time: u64,
    /// The lane it was recorded on; `None` on the wire as [`NO_LANE`].
    pub lane: Option<LaneId>,
    /// Its level.
    pub level: Level,
    /// Its call site: a name id, defined before the frame.
    pub site: NameId,
    /// The text, at most [`MAX_TEXT_BYTES`].
    pub text: &'a str,
    /// The writer cut a longer text to [`MAX_TEXT_BYTES`].
    pub cut: bool,
}

/// `text` cut to at most [`MAX_TEXT_BYTES`] at a character boundary, and
/// whether it was cut.
pub fn within_bound(text: &str) -> (&str, bool) {
    if text.len() <= MAX_TEXT_BYTES {
        return (text, false);
    }
    let mut end = MAX_TEXT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// Text records encoded in a caller's buffer, ready to be framed for any
/// number of readers ([`Exporter::write_texts`](crate::Exporter::write_texts)).
pub struct TextBatch<'a> {
    buf: &'a mut [u8],
    /// Bytes of records written.
    used: usize,
    count: usize,
}

impl<'a> TextBatch<'a> {
    /// An empty batch over `buf`: it holds as many records as fit.
    pub fn new(buf: &'a mut [u8]) -> Self {
        TextBatch {
            buf,
            used: 0,
            count: 0,
        }
    }

    /// Adds `text`, its text cut to [`MAX_TEXT_BYTES`] if longer; `false`
    /// (and nothing added) when the buffer or the frame's record count is
    /// full.
    pub fn push(&mut self, text: &Text<'_>) -> bool {
        let (body, cut) = within_bound(text.text);
        let end = self.used + TEXT_RECORD_HEADER + body.len();
        if self.count >= MAX_TEXTS_PER_FRAME || end > self.buf.len() {
            return false;
        }
        let record = &mut self.buf[self.used..end];
        record[0..8].copy_from_slice(&text.time.to_le_bytes());
        record[8..10].copy_from_slice(&text.lane.unwrap_or(NO_LANE).to_le_bytes());
        record[10] = text.level.to_byte();
        record[11] = if cut || text.cut { CUT } else { 0 };
        record[12..16].copy_from_slice(&text.site.to_le_bytes());
        // `body.len()` is at most MAX_TEXT_BYTES, which fits a u16.
        record[16..18].copy_from_slice(&(body.len() as u16).to_le_bytes());
        record[TEXT_RECORD_HEADER..].copy_from_slice(body.as_bytes());
        self.used = end;
        self.count += 1;
        true
    }

    /// Records in the batch.
    pub fn len(&self) -> usize {
        self.count
    }

    /// Whether it holds no record.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Empties it, keeping its buffer.
    pub fn clear(&mut self) {
        self.used = 0;
        self.count = 0;
    }

    /// The largest frame this batch can make.
    pub fn frame_len(&self) -> usize {
        crate::frame::OVERHEAD + PAYLOAD_HEADER + self.used
    }

    /// The records' bytes, as they go in a frame.
    fn records(&self) -> &[u8] {
        &self.buf[..self.used]
    }
}

/// Writes a Text frame with `batch`'s records, saying that `lost` texts
/// were lost before it on this stream.
pub fn write_texts(
    out: &mut [u8],
    seq: u32,
    lost: u32,
    batch: &TextBatch<'_>,
) -> Result<usize, EncodeError> {
    write_frame(out, FrameKind::Text, seq, |w| {
        w.u32(lost);
        // A batch never holds more than MAX_TEXTS_PER_FRAME records.
        w.u16(batch.len() as u16);
        w.bytes(batch.records());
        Ok(())
    })
}

/// A Text frame's payload, checked whole when parsed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TextsView<'a> {
    /// Texts the writer says were lost on this stream since its last Text
    /// frame: in Text frames dropped on the way, or refused by its queue.
    pub lost: u32,
    /// Records in the frame.
    pub count: u16,
    records: &'a [u8],
}

impl<'a> TextsView<'a> {
    /// Parses and checks a Text payload: its count within
    /// [`MAX_TEXTS_PER_FRAME`], every record within [`MAX_TEXT_BYTES`],
    /// valid UTF-8 with a known level, and no byte left over.
    pub fn parse(payload: &'a [u8]) -> Result<Self, DecodeError> {
        let mut r = Reader::new(payload);
        let lost = r.u32("texts lost")?;
        let count = r.u16("text count")?;
        DecodeError::at_most("text count", u64::from(count), MAX_TEXTS_PER_FRAME as u64)?;
        let view = TextsView {
            lost,
            count,
            records: r.rest(),
        };
        let mut records = Reader::new(view.records);
        for _ in 0..count {
            next_text(&mut records)?;
        }
        records.expect_end("text frame has trailing bytes")?;
        Ok(view)
    }

    /// Its records, in the order written.
    pub fn texts(&self) -> impl Iterator<Item = Text<'a>> + 'a {
        let mut records = Reader::new(self.records);
        // `parse` checked every record, so none fails here.
        (0..self.count).map_while(move |_| next_text(&mut records).ok())
    }
}

/// Reads one record.
fn next_text<'a>(r: &mut Reader<'a>) -> Result<Text<'a>, DecodeError> {
    let time = r.u64("text time")?;
    let lane = r.u16("text lane")?;
    let level = Level::from_byte(r.u8("text level")?)?;
    let flags = r.u8("text flags")?;
    if flags & !CUT != 0 {
        return Err(DecodeError::Malformed {
            what: "text flags (reserved bits set)",
        });
    }
    let site = r.u32("text site")?;
    let len = r.u16("text length")?;
    DecodeError::at_most("text length", u64::from(len), MAX_TEXT_BYTES as u64)?;
    let bytes = r.take(usize::from(len), "text bytes")?;
    let text = core::str::from_utf8(bytes).map_err(|_| DecodeError::Malformed {
        what: "text is not UTF-8",
    })?;
    Ok(Text {
        time,
        lane: (lane != NO_LANE).then_some(lane),
        level,
        site,
        text,
        cut: flags & CUT != 0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decode::{Decoder, Payload};

    fn text(time: u64, body: &str) -> Text<'_> {
        Text {
            time,
            lane: Some(3),
            level: Level::Warn,
            site: 7,
            text: body,
            cut: false,
        }
    }

    fn round_trip(batch: &TextBatch<'_>, lost: u32) -> Vec<(u64, Option<u16>, String, bool)> {
        let mut out = vec![0u8; batch.frame_len()];
        let len = write_texts(&mut out, 9, lost, batch).unwrap();
        assert_eq!(len, batch.frame_len());
        let mut buf = vec![0u8; 1 << 16];
        let mut decoder = Decoder::new(&mut buf);
        decoder.feed(&out[..len]);
        let frame = decoder.next().unwrap().unwrap();
        assert_eq!((frame.kind, frame.seq), (7, 9));
        let Payload::Texts(view) = frame.parse().unwrap() else {
            panic!("not a Text frame");
        };
        assert_eq!(view.lost, lost);
        view.texts()
            .map(|t| (t.time, t.lane, t.text.to_owned(), t.cut))
            .collect()
    }

    #[test]
    fn records_read_back_as_written() {
        let mut buf = [0u8; 256];
        let mut batch = TextBatch::new(&mut buf);
        assert!(batch.push(&text(5, "disk full path=/var")));
        assert!(batch.push(&Text {
            lane: None,
            ..text(6, "")
        }));
        assert_eq!(
            round_trip(&batch, 2),
            [
                (5, Some(3), "disk full path=/var".to_owned(), false),
                (6, None, String::new(), false)
            ]
        );
    }

    #[test]
    fn a_long_text_is_cut_at_a_character_and_says_so() {
        let long = "é".repeat(MAX_TEXT_BYTES); // 2 bytes each
        let mut buf = vec![0u8; 4096];
        let mut batch = TextBatch::new(&mut buf);
        assert!(batch.push(&text(1, &long)));
        let read = round_trip(&batch, 0);
        assert_eq!(read[0].2.len(), MAX_TEXT_BYTES);
        assert!(read[0].3, "the cut is said");
    }

    #[test]
    fn a_full_batch_refuses_and_keeps_what_it_has() {
        let mut buf = [0u8; TEXT_RECORD_HEADER + 4];
        let mut batch = TextBatch::new(&mut buf);
        assert!(batch.push(&text(1, "abcd")));
        assert!(!batch.push(&text(2, "")));
        assert_eq!(batch.len(), 1);
    }

    #[test]
    fn bad_records_are_named() {
        let record = |level: u8, flags: u8, len: u16, body: &[u8]| {
            let mut p = vec![0, 0, 0, 0, 1, 0];
            p.extend_from_slice(&[0; 8]);
            p.extend_from_slice(&[0, 0, level, flags, 1, 0, 0, 0]);
            p.extend_from_slice(&len.to_le_bytes());
            p.extend_from_slice(body);
            TextsView::parse(&p).map(|_| ())
        };
        assert_eq!(record(3, 0, 2, b"ok"), Ok(()));
        assert_eq!(
            record(6, 0, 2, b"ok"),
            Err(DecodeError::Malformed { what: "text level" })
        );
        assert!(matches!(
            record(3, 2, 2, b"ok"),
            Err(DecodeError::Malformed { .. })
        ));
        assert_eq!(
            record(3, 0, 2, b"\xff\xfe"),
            Err(DecodeError::Malformed {
                what: "text is not UTF-8"
            })
        );
        assert!(matches!(
            record(3, 0, 2000, &[b'a'; 2000]),
            Err(DecodeError::OverBound {
                what: "text length",
                ..
            })
        ));
        assert!(matches!(
            record(3, 0, 5, b"ok"),
            Err(DecodeError::Malformed { .. })
        ));
        let mut many = vec![0, 0, 0, 0];
        many.extend_from_slice(&(MAX_TEXTS_PER_FRAME as u16 + 1).to_le_bytes());
        assert!(matches!(
            TextsView::parse(&many),
            Err(DecodeError::OverBound {
                what: "text count",
                ..
            })
        ));
    }
}
