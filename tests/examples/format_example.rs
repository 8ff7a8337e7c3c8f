//! Prints a worked example of docs/FORMAT.md as a hex dump, one frame a
//! paragraph: `cargo run -p typhon-live-tests --example format_example`
//! for the first, `... -- tasks` for the second (a task span), `... --
//! fields` for the third (a span's fields), `... -- text` for the fourth
//! (log texts).

fn main() {
    let stream = match std::env::args().nth(1).as_deref() {
        Some("tasks") => typhon_live_tests::task_example(),
        Some("fields") => typhon_live_tests::fields_example(),
        Some("text") => typhon_live_tests::text_example(),
        Some("stacks") => typhon_live_tests::stacks_example(),
        _ => typhon_live_tests::format_example(),
    };
    let mut at = 0;
    while at + 16 <= stream.len() {
        let len =
            u32::from_le_bytes(stream[at + 8..at + 12].try_into().expect("4 bytes")) as usize + 20;
        for line in stream[at..at + len].chunks(16) {
            let hex: Vec<String> = line.iter().map(|b| format!("{b:02x}")).collect();
            println!("{}", hex.join(" "));
        }
        println!();
        at += len;
    }
}
