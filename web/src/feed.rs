//! A tab's bytes into the model: the streaming decoder over one buffer
//! for the page's life, whole frames handed to [`Model::on_frame`].
//! Message boundaries mean nothing (docs/FORMAT.md, "Carrying a
//! stream"): a frame may come in several messages, or several in one.
//! The feed counts what each connection brought, for the page to say
//! what it read ([`Feed::say_read`]), without which the server stops
//! sending once its window is unread.

use std::time::Duration;

use typhon_live_core::{Decoder, DEFAULT_MAX_FRAME};
use typhon_live_model::Model;
use typhon_live_reader::carry::ReadReceipt;
use typhon_live_recorder::Recorder;

/// The decoder of a page's stream.
pub struct Feed {
    /// Over a buffer of the largest frame, allocated once for the page's
    /// life (a page is a process of its own: its memory goes with it).
    decoder: Decoder<'static>,
    /// Bytes and frames taken in.
    bytes: u64,
    frames: u64,
    /// Connections opened.
    connections: u64,
    /// What this connection brought, and what was said of it.
    receipt: ReadReceipt,
}

impl Default for Feed {
    fn default() -> Self {
        Feed::new()
    }
}

impl Feed {
    /// A feed whose decoder takes frames up to the format's default
    /// largest.
    pub fn new() -> Feed {
        let buf: &'static mut [u8] = Vec::leak(vec![0u8; DEFAULT_MAX_FRAME]);
        Feed {
            decoder: Decoder::new(buf),
            bytes: 0,
            frames: 0,
            connections: 0,
            receipt: ReadReceipt::default(),
        }
    }

    /// Takes `bytes` that arrived at `now` (and at Unix time `received`,
    /// ns, where known) into `model`; returns the frames read whole.
    /// Damage is the model's notice; the frames after it are read on.
    pub fn push(
        &mut self,
        mut bytes: &[u8],
        model: &mut Model,
        recorder: &mut Recorder,
        now: Duration,
        received: Option<u64>,
    ) -> u64 {
        let before = self.frames;
        self.bytes += bytes.len() as u64;
        self.receipt.took(bytes.len());
        while !bytes.is_empty() {
            let taken = self.decoder.feed(bytes);
            bytes = &bytes[taken..];
            loop {
                match self.decoder.next() {
                    Ok(Some(frame)) => {
                        self.frames += 1;
                        // A malformed payload is said in the model's notice.
                        let _ = model.on_frame_at(&frame, now, received);
                        // The model's reading, kept: no second one.
                        recorder.keep(&frame, model.state());
                    }
                    Ok(None) => break,
                    Err(error) => model.notice = Some(format!("damaged stream: {error}")),
                }
            }
        }
        self.frames - before
    }

    /// A connection opened: its bytes are counted from zero. After the
    /// first, the last one's unfinished frame is forgotten, and the model
    /// told that it reconnected.
    pub fn connected(&mut self, model: &mut Model) {
        self.receipt = ReadReceipt::default();
        self.connections += 1;
        if self.connections > 1 {
            self.decoder.restart();
            model.reconnected();
        }
    }

    /// The text message to send the server, saying what this connection
    /// brought, when it is due.
    pub fn say_read(&mut self) -> Option<String> {
        self.receipt.due()
    }

    /// Bytes taken in.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Frames read whole.
    pub fn frames(&self) -> u64 {
        self.frames
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use typhon_live_tests::nested_stream;

    #[test]
    fn frames_cut_anywhere_are_read_whole() {
        let stream = nested_stream(0..50);
        let mut whole = Model::default();
        let mut recorder = Recorder::new(Default::default(), Vec::new());
        let frames = Feed::new().push(&stream, &mut whole, &mut recorder, Duration::ZERO, None);
        assert!(frames > 2, "{frames}");
        // The same bytes in messages of 7 bytes.
        let (mut feed, mut cut) = (Feed::new(), Model::default());
        let read: u64 = stream
            .chunks(7)
            .map(|part| feed.push(part, &mut cut, &mut recorder, Duration::ZERO, None))
            .sum();
        assert_eq!(read, frames);
        assert_eq!(cut.events(), whole.events());
        assert_eq!(feed.bytes(), stream.len() as u64);
    }
}
