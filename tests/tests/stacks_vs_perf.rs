//! typhon-live's sampled stacks against `perf` itself (Debian's
//! linux-perf): a workload of ten functions with known shares, sampled by
//! both at once at 1 kHz, each function's own share within 2 points of
//! perf's and its total within 3. Skipped, with the reason, where perf is
//! not installed or the system refuses either; `.ci/run` installs perf
//! and fails on the skip.

use typhon_live_tests::ten_functions::{against_perf, Shares};

#[test]
fn each_functions_share_is_perfs_within_two_points() {
    if !cfg!(target_os = "linux") {
        println!("skipped: perf runs on Linux only");
        return;
    }
    let measured = match against_perf(6, 1000, true) {
        Ok(measured) => measured,
        Err(why) => {
            println!("skipped: {why}");
            return;
        }
    };
    let expected = Shares::expected();
    eprintln!(
        "{} rounds; ours {} samples ({:?} all, cut, by frame pointers), perf {}",
        measured.rounds, measured.ours.samples, measured.samples, measured.perf.samples
    );
    eprintln!("function      ours own/total   perf own/total   by construction");
    for (f, (own, total)) in &expected.of {
        let ours = measured.ours.of.get(f).copied().unwrap_or_default();
        let perf = measured.perf.of.get(f).copied().unwrap_or_default();
        eprintln!(
            "{f:<12} {:>6.2} {:>6.2}    {:>6.2} {:>6.2}    {own:>6.2} {total:>6.2}",
            ours.0, ours.1, perf.0, perf.1
        );
    }
    // Enough samples on both sides for 2 points to mean something.
    assert!(measured.ours.samples >= 1000, "{measured:?}");
    assert!(measured.perf.samples >= 1000, "{measured:?}");
    let (own, total) = measured.ours.farthest_from(&measured.perf);
    assert!(own <= 2.0, "an own share {own:.2} points from perf's");
    assert!(total <= 3.0, "a total share {total:.2} points from perf's");
}
