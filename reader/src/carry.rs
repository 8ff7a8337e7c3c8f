//! What a carrier of the stream says besides its bytes (docs/FORMAT.md,
//! "Carrying a stream").

/// The reason of the WebSocket close (code 1000) after the last bytes of
/// a recorded file: the stream is whole, and no one should connect again
/// for more.
pub const END_OF_FILE: &str = "end of file";
