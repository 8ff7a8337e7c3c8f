//! A verdict written out: a terminal table, Markdown for a pull
//! request's comment, or JUnit XML for a CI's test report. (JSON is the
//! verdicts' serde form.)

use core::fmt::Write;

use crate::check::{Check, Outcome};
use crate::compare::{Comparison, Figures, Row, SideSummary, Verdict};
use crate::samples::Reading;

/// A duration in ns, in the unit that reads best.
pub fn duration(ns: f64) -> String {
    let (value, unit) = match ns.abs() {
        a if a >= 1e9 => (ns / 1e9, "s"),
        a if a >= 1e6 => (ns / 1e6, "ms"),
        a if a >= 1e3 => (ns / 1e3, "µs"),
        _ => (ns, "ns"),
    };
    let digits = if value.abs() >= 100.0 {
        0
    } else if value.abs() >= 10.0 {
        1
    } else {
        2
    };
    format!("{value:.digits$} {unit}")
}

/// A relative change, signed: `+8.1%`.
pub fn percent(fraction: f64) -> String {
    format!("{:+.1}%", fraction * 100.0)
}

fn p_value(p: Option<f64>) -> String {
    match p {
        Some(p) if p < 0.001 => "<0.001".into(),
        Some(p) => format!("{p:.3}"),
        None => String::new(),
    }
}

fn interval(row: &Row) -> String {
    row.interval
        .map(|i| format!("[{}, {}]", percent(i.low), percent(i.high)))
        .unwrap_or_default()
}

/// A compared side's units: `600 ticks`, `1800 ticks in 3 runs`.
fn units(side: &SideSummary) -> String {
    let clusters = if side.by_tick {
        "ticks"
    } else {
        "10 ms windows"
    };
    match side.runs {
        0 | 1 => format!("{} {clusters}", side.clusters),
        runs => format!("{} {clusters} in {runs} runs", side.clusters),
    }
}

/// What a side was read from (its `units` besides its events), and what
/// it lost, in a line or two.
fn side_lines(label: &str, r: &Reading, units: &str) -> String {
    let mut out = format!(
        "{label}: {} ({} events, {units})",
        r.sources.join(", "),
        r.events,
    );
    if r.warm_up > 0 {
        let _ = write!(
            out,
            "; {} spans and ticks in the runs' warm-up not counted",
            r.warm_up
        );
    }
    if r.dropped > 0 || r.frames_missed > 0 {
        let _ = write!(
            out,
            "; lost {} events, {} frames",
            r.dropped, r.frames_missed
        );
    }
    if r.damaged() {
        let _ = write!(
            out,
            "\n  DAMAGED: read as far as it goes, {} frames unreadable: {}",
            r.frames_damaged,
            r.damage.join("; ")
        );
    }
    if r.capped() {
        let _ = write!(
            out,
            "\n  CAPPED: {} spans past the side's limit of samples, {} past its limit of names, not counted",
            r.samples_not_kept, r.names_not_kept
        );
    }
    out
}

fn headline(c: &Comparison) -> String {
    match c.regressions {
        0 => format!(
            "no regression in {} names tested ({} improved)",
            c.tested, c.improvements
        ),
        n => format!(
            "{n} regression{} in {} names tested: {}",
            if n == 1 { "" } else { "s" },
            c.tested,
            (c.rows.iter().filter(|r| r.verdict == Verdict::Regression))
                .map(|r| format!("{} {}", r.name, percent(r.change.unwrap_or(0.0))))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn method(c: &Comparison) -> String {
    let clusters = if c.base.by_tick && c.new.by_tick {
        "ticks"
    } else {
        "ticks or 10 ms windows"
    };
    let over = if c.base.runs > 1 || c.new.runs > 1 {
        format!("runs, then {clusters} within them")
    } else {
        clusters.to_string()
    };
    format!(
        "{} compared; a regression is significant at {} (Mann–Whitney, Holm over {} names), over +{:.1}% and above 0 in its interval; intervals {:.0}% by bootstrap over {over} ({} resamples)",
        c.stat.label(),
        c.alpha,
        c.tested,
        c.threshold * 100.0,
        c.confidence * 100.0,
        c.rounds
    )
}

fn figures(f: &Option<Figures>) -> [String; 5] {
    match f {
        Some(f) => [
            f.count.to_string(),
            duration(f.p50),
            duration(f.p90),
            duration(f.p99),
            duration(f.mean),
        ],
        None => Default::default(),
    }
}

/// The comparison as a terminal table: each name on two lines, base and
/// new.
pub fn compare_table(c: &Comparison) -> String {
    let mut lines: Vec<[String; 11]> = vec![[
        "name".into(),
        "side".into(),
        "count".into(),
        "p50".into(),
        "p90".into(),
        "p99".into(),
        "mean".into(),
        format!("{} change", c.stat.label()),
        format!("{:.0}% interval", c.confidence * 100.0),
        "p (Holm)".into(),
        "verdict".into(),
    ]];
    for row in &c.rows {
        let [bc, b50, b90, b99, bm] = figures(&row.base);
        let [nc, n50, n90, n99, nm] = figures(&row.new);
        lines.push([
            row.name.clone(),
            "base".into(),
            bc,
            b50,
            b90,
            b99,
            bm,
            String::new(),
            String::new(),
            String::new(),
            String::new(),
        ]);
        lines.push([
            String::new(),
            "new".into(),
            nc,
            n50,
            n90,
            n99,
            nm,
            row.change.map(percent).unwrap_or_default(),
            interval(row),
            p_value(row.p_adjusted),
            row.verdict.label().into(),
        ]);
    }
    let mut out = String::new();
    let _ = writeln!(out, "typhon-live compare: {}", headline(c));
    let _ = writeln!(out, "{}", method(c));
    let _ = writeln!(
        out,
        "{}",
        side_lines("base", &c.base.reading, &units(&c.base))
    );
    let _ = writeln!(out, "{}", side_lines("new", &c.new.reading, &units(&c.new)));
    out.push('\n');
    out.push_str(&aligned(&lines, 1));
    out
}

/// `lines` in columns, the first `left` of them left-aligned.
fn aligned<const N: usize>(lines: &[[String; N]], left: usize) -> String {
    let mut widths = [0usize; N];
    for line in lines {
        for (w, cell) in widths.iter_mut().zip(line) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for line in lines {
        let mut text = String::new();
        for (i, (cell, &w)) in line.iter().zip(&widths).enumerate() {
            let pad = w - cell.chars().count();
            if i > 0 {
                text.push_str("  ");
            }
            if i < left || i == N - 1 {
                text.push_str(cell);
                text.extend(core::iter::repeat_n(' ', pad));
            } else {
                text.extend(core::iter::repeat_n(' ', pad));
                text.push_str(cell);
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    }
    out
}

/// Markdown's table cell: `|` would end it.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// The comparison as Markdown, for a pull request's comment: the changes
/// first, every name folded below.
pub fn compare_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let mark = if c.regressed() { "❌" } else { "✅" };
    let _ = writeln!(
        out,
        "### {mark} typhon-live compare: {}\n",
        cell(&headline(c))
    );
    let _ = writeln!(out, "{}.\n", method(c));
    for (label, side) in [("base", &c.base), ("new", &c.new)] {
        let text = side_lines(label, &side.reading, &units(side));
        let _ = writeln!(out, "- {}", text.replace('\n', "\n  "));
    }
    let row = |r: &Row| {
        let stat = |f: &Option<Figures>| f.map(|f| duration(f.get(c.stat))).unwrap_or_default();
        format!(
            "| {} | {} | {} | {} | {} | {} | {} |\n",
            cell(&r.name),
            stat(&r.base),
            stat(&r.new),
            r.change.map(percent).unwrap_or_default(),
            interval(r),
            p_value(r.p_adjusted),
            r.verdict.label()
        )
    };
    let header = format!(
        "| name | base {s} | new {s} | change | {:.0}% interval | p (Holm) | verdict |\n|---|---:|---:|---:|---|---:|---|\n",
        c.confidence * 100.0,
        s = c.stat.label()
    );
    let changed: Vec<&Row> = (c.rows.iter())
        .filter(|r| matches!(r.verdict, Verdict::Regression | Verdict::Improvement))
        .collect();
    out.push('\n');
    if changed.is_empty() {
        let _ = writeln!(
            out,
            "No name changed significantly by more than {:.1}%.\n",
            c.threshold * 100.0
        );
    } else {
        out.push_str(&header);
        for r in changed {
            out.push_str(&row(r));
        }
        out.push('\n');
    }
    let _ = writeln!(
        out,
        "<details><summary>All {} names</summary>\n\n{header}{}\n</details>",
        c.rows.len(),
        c.rows.iter().map(row).collect::<String>()
    );
    out
}

/// XML's text and attribute escapes.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Characters XML 1.0 cannot hold at all.
            c if (c as u32) < 0x20 && !matches!(c, '\t' | '\n' | '\r') => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

/// One JUnit test case: its name, and its failure or reason skipped.
struct Case {
    name: String,
    failure: Option<String>,
    skipped: Option<String>,
    detail: String,
}

fn junit(suite: &str, cases: &[Case]) -> String {
    let failures = cases.iter().filter(|c| c.failure.is_some()).count();
    let skipped = cases.iter().filter(|c| c.skipped.is_some()).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n");
    let _ = writeln!(
        out,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"{skipped}\">",
        xml(suite),
        cases.len()
    );
    for case in cases {
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\">",
            xml(suite),
            xml(&case.name)
        );
        if let Some(message) = &case.failure {
            let _ = write!(
                out,
                "<failure message=\"{}\">{}</failure>",
                xml(message),
                xml(&case.detail)
            );
        } else if let Some(why) = &case.skipped {
            let _ = write!(out, "<skipped message=\"{}\"/>", xml(why));
        } else {
            let _ = write!(out, "<system-out>{}</system-out>", xml(&case.detail));
        }
        out.push_str("</testcase>\n");
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

/// The reading of a side as a test case, failing on damage unless it is
/// allowed.
fn reading_case(label: &str, r: &Reading, allow_damage: bool) -> Case {
    let text = side_lines(label, r, &format!("{} ticks", r.ticks));
    Case {
        name: format!("{label} read whole"),
        failure: (r.damaged() && !allow_damage)
            .then(|| format!("{label} is damaged: {} frames unreadable", r.frames_damaged)),
        skipped: None,
        detail: text,
    }
}

/// The comparison as JUnit XML: a test case per name, failing on a
/// regression; names on one side or with too few samples skipped; and a
/// case per side that fails on damage unless `allow_damage`.
pub fn compare_junit(c: &Comparison, allow_damage: bool) -> String {
    let mut cases = vec![
        reading_case("base", &c.base.reading, allow_damage),
        reading_case("new", &c.new.reading, allow_damage),
    ];
    for row in &c.rows {
        let summary = format!(
            "{} {} -> {}: {} {} p(Holm) {}",
            c.stat.label(),
            row.base
                .map(|f| duration(f.get(c.stat)))
                .unwrap_or_default(),
            row.new.map(|f| duration(f.get(c.stat))).unwrap_or_default(),
            row.change.map(percent).unwrap_or_default(),
            interval(row),
            p_value(row.p_adjusted),
        );
        cases.push(Case {
            name: row.name.clone(),
            failure: (row.verdict == Verdict::Regression)
                .then(|| format!("regression: {}", summary)),
            skipped: matches!(
                row.verdict,
                Verdict::OnlyBase | Verdict::OnlyNew | Verdict::TooFew
            )
            .then(|| row.verdict.label().into()),
            detail: summary,
        });
    }
    junit("typhon-live compare", &cases)
}

fn value(o: &Outcome) -> String {
    match o.value {
        None => "no such spans".into(),
        Some(v) if o.duration => duration(v),
        Some(v) => format!("{v}"),
    }
}

fn verdict_word(o: &Outcome) -> &'static str {
    if o.passed {
        "pass"
    } else {
        "FAIL"
    }
}

fn check_headline(c: &Check) -> String {
    match c.failed {
        0 => format!("all {} assertions hold", c.outcomes.len()),
        n => format!("{n} of {} assertions broken", c.outcomes.len()),
    }
}

/// The check as a terminal table.
pub fn check_table(c: &Check) -> String {
    let mut lines = vec![[
        "assertion".to_string(),
        "value".to_string(),
        "verdict".to_string(),
    ]];
    for o in &c.outcomes {
        lines.push([o.assertion.clone(), value(o), verdict_word(o).into()]);
    }
    let mut out = format!("typhon-live check: {}\n", check_headline(c));
    let _ = writeln!(
        out,
        "{}\n",
        side_lines("read", &c.reading, &format!("{} ticks", c.reading.ticks))
    );
    out.push_str(&aligned(&lines, 1));
    out
}

/// The check as Markdown.
pub fn check_markdown(c: &Check) -> String {
    let mark = if c.broken() { "❌" } else { "✅" };
    let mut out = format!("### {mark} typhon-live check: {}\n\n", check_headline(c));
    let text = side_lines("read", &c.reading, &format!("{} ticks", c.reading.ticks));
    let _ = writeln!(out, "- {}\n", text.replace('\n', "\n  "));
    out.push_str("| assertion | value | verdict |\n|---|---:|---|\n");
    for o in &c.outcomes {
        let _ = writeln!(
            out,
            "| `{}` | {} | {} |",
            o.assertion.replace('`', "'").replace('|', "\\|"),
            value(o),
            verdict_word(o)
        );
    }
    out
}

/// The check as JUnit XML: a test case per assertion, and one for the
/// reading that fails on damage unless `allow_damage`.
pub fn check_junit(c: &Check, allow_damage: bool) -> String {
    let mut cases = vec![reading_case("trace", &c.reading, allow_damage)];
    for o in &c.outcomes {
        let detail = format!("{}: {}", o.assertion, value(o));
        cases.push(Case {
            name: o.assertion.clone(),
            failure: (!o.passed).then(|| format!("broken: {detail}")),
            skipped: None,
            detail,
        });
    }
    junit("typhon-live check", &cases)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_in_their_unit() {
        assert_eq!(duration(999.0), "999 ns");
        assert_eq!(duration(1_500.0), "1.50 µs");
        assert_eq!(duration(25_300_000.0), "25.3 ms");
        assert_eq!(duration(1.2e9), "1.20 s");
        assert_eq!(percent(0.0812), "+8.1%");
        assert_eq!(percent(-0.05), "-5.0%");
    }

    #[test]
    fn xml_escapes_what_would_break_it() {
        assert_eq!(
            xml("Query<A, B> & \"x\"\u{1}"),
            "Query&lt;A, B&gt; &amp; &quot;x&quot;\u{fffd}"
        );
    }
}
