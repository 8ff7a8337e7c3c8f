//! The screen's layout: the header, the panes drawn from the history
//! ([`Panes`]: timeline, span names, statistics) and the panels of the
//! [`Summary`]. Drawing is a pure function of what it is given, so tests
//! render it into ratatui's `TestBackend`.

use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row, Sparkline, Table};
use ratatui::Frame;

use crate::keymap::{help, KEYS};
use crate::widgets::code::CodePane;
use crate::widgets::log::LogPane;
use crate::widgets::sites::SitesPane;
use crate::widgets::span_stats::SpanDetail;
use crate::widgets::span_table::SpanTable;
use crate::widgets::timeline::Timeline;
use typhon_live_model::{Connection, GaugeSummary, Summary};

/// The panes drawn from the history: the timeline, the span names, the
/// selected name's statistics.
pub struct Panes<'a> {
    /// The timeline widget.
    pub timeline: Timeline<'a>,
    /// Live or paused, and the window's length.
    pub status: String,
    /// The span names over the history.
    pub spans: SpanTable<'a>,
    /// The selected name's statistics, if a name is selected.
    pub detail: Option<SpanDetail<'a>>,
    /// The log, when shown in place of the span names and statistics.
    pub log: Option<LogPane<'a>>,
    /// The allocation sites, when shown in their place.
    pub sites: Option<SitesPane<'a>>,
    /// Which code the selected name's spans ran, when shown in place of
    /// its statistics.
    pub code: Option<CodePane<'a>>,
}

fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.2} ms"))
}

fn human(v: f64) -> String {
    match v {
        v if v >= 1e9 => format!("{:.1} G", v / 1e9),
        v if v >= 1e6 => format!("{:.1} M", v / 1e6),
        v if v >= 1e3 => format!("{:.1} k", v / 1e3),
        v => format!("{v:.0} "),
    }
}

/// Draws the whole view: the header, the panes from the history if
/// given, the panels of the summary.
pub fn draw(frame: &mut Frame<'_>, s: &Summary, panes: Option<&Panes<'_>>) {
    let Some(panes) = panes else {
        return draw_summary(frame, s);
    };
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(3),
            Constraint::Percentage(40),
            Constraint::Min(10),
            Constraint::Length(6),
        ])
        .split(frame.area());
    draw_header(frame, rows[0], s);
    let block = Block::default()
        .borders(Borders::ALL)
        .title(format!(" timeline: {} ", panes.status));
    let inner = block.inner(rows[1]);
    frame.render_widget(block, rows[1]);
    frame.render_widget(&panes.timeline, inner);
    let middle = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([
            Constraint::Percentage(30),
            Constraint::Percentage(35),
            Constraint::Percentage(35),
        ])
        .split(rows[2]);
    let left = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(4), Constraint::Length(10)])
        .split(middle[0]);
    draw_lanes(frame, left[0], s);
    draw_stats(frame, left[1], s);
    let rest = Rect {
        width: middle[1].width + middle[2].width,
        ..middle[1]
    };
    if let Some(log) = &panes.log {
        frame.render_widget(log, rest);
        return draw_gauges(frame, rows[3], s);
    }
    if let Some(sites) = &panes.sites {
        frame.render_widget(sites, rest);
        return draw_gauges(frame, rows[3], s);
    }
    frame.render_widget(&panes.spans, middle[1]);
    let right = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(6), Constraint::Length(6)])
        .split(middle[2]);
    match (&panes.code, &panes.detail) {
        (Some(code), _) => frame.render_widget(code, right[0]),
        (None, Some(detail)) => frame.render_widget(detail, right[0]),
        (None, None) => frame.render_widget(
            Paragraph::new("no span yet").block(Block::default().borders(Borders::ALL)),
            right[0],
        ),
    }
    draw_open_spans(frame, right[1], s);
    draw_gauges(frame, rows[3], s);
}

/// The summary alone: lanes, stream, top spans, open spans, gauges.
fn draw_summary(frame: &mut Frame<'_>, s: &Summary) {
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(3),
            Constraint::Min(8),
            Constraint::Length(8),
        ])
        .split(frame.area());
    draw_header(frame, rows[0], s);
    let middle = Layout::default()
        .direction(Direction::Horizontal)
        .constraints([Constraint::Percentage(40), Constraint::Percentage(60)])
        .split(rows[1]);
    let left = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Min(4), Constraint::Length(9)])
        .split(middle[0]);
    draw_lanes(frame, left[0], s);
    draw_stats(frame, left[1], s);
    let right = Layout::default()
        .direction(Direction::Vertical)
        .constraints([Constraint::Percentage(60), Constraint::Percentage(40)])
        .split(middle[1]);
    draw_top_spans(frame, right[0], s);
    draw_open_spans(frame, right[1], s);
    draw_gauges(frame, rows[2], s);
}

fn draw_header(frame: &mut Frame<'_>, area: Rect, s: &Summary) {
    let (state, colour) = match &s.connection {
        Connection::Connecting { attempt } => {
            (format!("connecting (attempt {attempt})"), Color::Yellow)
        }
        Connection::Connected { peer } => (format!("live from {peer}"), Color::Green),
        Connection::Reconnecting { attempt, reason } => (
            format!("reconnecting (attempt {attempt}): {reason}"),
            Color::Yellow,
        ),
        Connection::Waiting {
            reason,
            retry_in_ms,
        } => (
            format!(
                "lost: {reason}; reconnecting in {:.1} s",
                *retry_in_ms as f64 / 1e3
            ),
            Color::Yellow,
        ),
        Connection::Ended { reason } => (format!("ended: {reason}"), Color::Red),
        Connection::File { path } => (format!("file {path}"), Color::Cyan),
    };
    let mut line = vec![
        Span::styled(
            " typhon-live ",
            Style::default().add_modifier(Modifier::BOLD),
        ),
        Span::raw(format!(
            "{} session {}  ",
            if s.process.is_empty() {
                "-"
            } else {
                &s.process
            },
            s.session_id.as_deref().unwrap_or("-")
        )),
        Span::styled(state, Style::default().fg(colour)),
    ];
    if let Some(notice) = &s.notice {
        line.push(Span::styled(
            format!("  {notice}"),
            Style::default().fg(Color::Magenta),
        ));
    }
    let help = Line::from(format!(" {}", help(KEYS)));
    frame.render_widget(
        Paragraph::new(vec![Line::from(line), help])
            .block(Block::default().borders(Borders::BOTTOM)),
        area,
    );
}

fn draw_lanes(frame: &mut Frame<'_>, area: Rect, s: &Summary) {
    let rows = s.lanes.iter().map(|l| {
        Row::new(vec![
            l.id.to_string(),
            l.name.clone(),
            l.kind.to_string(),
            l.events.to_string(),
            l.dropped.to_string(),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Length(4),
            Constraint::Min(10),
            Constraint::Length(7),
            Constraint::Length(9),
            Constraint::Length(8),
        ],
    )
    .header(
        Row::new(vec!["id", "lane", "kind", "events", "dropped"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(Block::default().borders(Borders::ALL).title(" lanes "));
    frame.render_widget(table, area);
}

fn draw_stats(frame: &mut Frame<'_>, area: Rect, s: &Summary) {
    let lines = vec![
        Line::from(format!(
            "tick rate  {:.1} Hz   overruns {}",
            s.tick_rate_hz, s.overruns
        )),
        Line::from(format!(
            "tick p50 {}  p99 {}  max {}",
            ms(s.tick_p50_ms),
            ms(s.tick_p99_ms),
            ms(s.tick_max_ms)
        )),
        Line::from(format!(
            "events/s   {}   total {}",
            human(s.events_per_second),
            s.events
        )),
        Line::from(format!(
            "bytes/s    {}B  {:.1} B/event",
            human(s.bytes_per_second),
            s.bytes_per_event
        )),
        Line::from(Span::styled(
            format!(
                "dropped    {} frames   {} events{}",
                s.frames_dropped,
                s.events_dropped,
                s.damage_text().map_or(String::new(), |t| format!("   {t}"))
            ),
            if s.lost_any() {
                Style::default().fg(Color::Red)
            } else {
                Style::default()
            },
        )),
        Line::from(format!(
            "frames     {}   restarts {}   reconnects {}",
            s.frames, s.restarts, s.reconnects
        )),
        Line::from(Span::styled(
            s.refused_text()
                .unwrap_or_else(|| "refused    nothing".into()),
            if s.refused_text().is_some() {
                Style::default().fg(Color::Red)
            } else {
                Style::default()
            },
        )),
        Line::from(Span::styled(
            format!(
                "history    {:.1} s  {:.1} of {} MiB{}",
                s.history.seconds,
                s.history.bytes as f64 / (1 << 20) as f64,
                s.history.budget_bytes >> 20,
                if s.history.evicted_records > 0 {
                    format!("  ({} older records let go)", s.history.evicted_records)
                } else {
                    String::new()
                }
            ),
            Style::default(),
        )),
    ];
    frame.render_widget(
        Paragraph::new(lines).block(Block::default().borders(Borders::ALL).title(" stream ")),
        area,
    );
}

fn draw_top_spans(frame: &mut Frame<'_>, area: Rect, s: &Summary) {
    let rows = s.top_spans.iter().map(|t| {
        Row::new(vec![
            t.name.clone(),
            format!("{:.2}", t.total_ms),
            t.count.to_string(),
        ])
    });
    let table = Table::new(
        rows,
        [
            Constraint::Min(16),
            Constraint::Length(12),
            Constraint::Length(8),
        ],
    )
    .header(
        Row::new(vec!["span", "total ms", "count"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(
        Block::default()
            .borders(Borders::ALL)
            .title(" top spans, last 2 s "),
    );
    frame.render_widget(table, area);
}

fn draw_open_spans(frame: &mut Frame<'_>, area: Rect, s: &Summary) {
    let rows = s.open_spans.iter().map(|o| {
        let style = if o.open_ms > 100.0 {
            Style::default().fg(Color::Red)
        } else {
            Style::default()
        };
        Row::new(vec![
            o.lane.clone(),
            o.span.clone(),
            format!("{:.1}", o.open_ms),
            o.hottest.clone().unwrap_or_default(),
        ])
        .style(style)
    });
    let table = Table::new(
        rows,
        [
            Constraint::Min(10),
            Constraint::Min(12),
            Constraint::Length(10),
            Constraint::Min(16),
        ],
    )
    .header(
        Row::new(vec!["lane", "open span", "open ms", "hottest (a stall's)"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(Block::default().borders(Borders::ALL).title(" open now "));
    frame.render_widget(table, area);
}

fn draw_gauges(frame: &mut Frame<'_>, area: Rect, s: &Summary) {
    let block = Block::default().borders(Borders::ALL).title(" gauges ");
    let inner = block.inner(area);
    frame.render_widget(block, area);
    // The process's memory first, where the stream tells it: its strip
    // beside the gauges.
    let memory = s.memory.as_ref().map(|m| GaugeSummary {
        name: "memory live (a: sites)".into(),
        value: m.live as f64,
        history: m.history.clone(),
    });
    let shown = (memory.iter())
        .chain(s.gauges.iter())
        .take(inner.height as usize)
        .collect::<Vec<_>>();
    if shown.is_empty() {
        return;
    }
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints(vec![Constraint::Length(1); shown.len()])
        .split(inner);
    for (gauge, row) in shown.into_iter().zip(rows.iter()) {
        let cols = Layout::default()
            .direction(Direction::Horizontal)
            .constraints([Constraint::Length(32), Constraint::Min(10)])
            .split(*row);
        frame.render_widget(
            Paragraph::new(format!("{} {}", gauge.name, human(gauge.value))),
            cols[0],
        );
        let min = gauge.history.iter().copied().fold(f64::INFINITY, f64::min);
        let max = gauge
            .history
            .iter()
            .copied()
            .fold(f64::NEG_INFINITY, f64::max);
        let span = (max - min).max(f64::EPSILON);
        let data: Vec<u64> = gauge
            .history
            .iter()
            .map(|v| (((v - min) / span) * 100.0) as u64 + 1)
            .collect();
        frame.render_widget(
            Sparkline::default()
                .data(&data)
                // The scale's top, so that a constant gauge draws a flat
                // low line, not a wall of full bars.
                .max(101)
                .style(Style::default().fg(Color::Cyan)),
            cols[1],
        );
    }
}

#[cfg(test)]
mod tests {

    use ratatui::backend::TestBackend;
    use ratatui::Terminal;
    use typhon_live_core::block::{max_block_frame_len, write_block};
    use typhon_live_core::catchup::write_catchup;
    use typhon_live_core::init::write_init;
    use typhon_live_core::{
        BlockBuilder, Decoder, Event, GaugeValue, LaneKind, Lanes, Metadata, NameTable, Shutdown,
    };

    use typhon_live_model::{Connection, Model};

    /// A scripted stream: Init naming two lanes, a Catch-up showing a stall
    /// open on the main lane, and two Blocks with a sequence gap between
    /// them and ring drops on a worker.
    fn scripted_stream() -> Vec<u8> {
        let lanes = Lanes::<4, 64>::new();
        let mut names: NameTable<32, 1024> = NameTable::new();
        let main = lanes
            .claim(names.intern("GameLoop").unwrap(), LaneKind::Main)
            .unwrap();
        let _worker = lanes
            .claim(names.intern("worker-7").unwrap(), LaneKind::Worker)
            .unwrap();
        let (tick, physics, memory) = (
            names.intern("Tick").unwrap(),
            names.intern("Physics").unwrap(),
            names.intern("memory.bytes").unwrap(),
        );
        let _stall = main.begin(names.intern("LoadLevel").unwrap(), 1_000_000);
        let meta = Metadata {
            ticks_per_second: 1_000_000_000,
            session_id: 42,
            process_name: "scripted",
            ..Metadata::default()
        };
        let mut stream = Vec::new();
        let mut out = vec![0u8; 1 << 16];
        let n = write_init(&mut out, 0, &meta, &names, lanes.iter()).unwrap();
        stream.extend(&out[..n]);
        let n = write_catchup(&mut out, 0, 400_000_000, u32::MAX, &lanes, &names).unwrap();
        stream.extend(&out[..n]);
        for (seq, base) in [(1u32, 0u64), (4, 16_666_667)] {
            let mut scratch = vec![0u8; 4096];
            let mut block = BlockBuilder::new(&mut scratch);
            block.push(
                0,
                &Event::TickStart {
                    time: base + 100,
                    tick: u64::from(seq),
                },
            );
            block.push(
                0,
                &Event::Span {
                    start: base + 100,
                    duration: 8_000_000,
                    name: tick,
                    id: 100 + seq,
                    parent: 0,
                    arg: None,
                },
            );
            block.push(
                1,
                &Event::Span {
                    start: base + 200,
                    duration: 3_000_000,
                    name: physics,
                    id: seq,
                    parent: 0,
                    arg: Some(500),
                },
            );
            block.push(
                0,
                &Event::Gauge {
                    time: base + 300,
                    gauge: memory,
                    value: GaugeValue::Int(1 << 30),
                },
            );
            block.push(
                0,
                &Event::TickEnd {
                    time: base + 8_000_100,
                    tick: u64::from(seq),
                    overrun: false,
                },
            );
            let mut frame = vec![0u8; max_block_frame_len(4096, 1)];
            let n = write_block(&mut frame, seq, &block, &[(1, 17)]).unwrap();
            stream.extend(&frame[..n]);
        }
        stream
    }

    /// The screen after `model` read `stream`, one line per row.
    fn screen_after(stream: &[u8]) -> String {
        let mut model = Model::default();
        model.connection = Connection::Connected {
            peer: "127.0.0.1:9100".into(),
        };
        let mut buf = vec![0u8; 1 << 20];
        let mut decoder = Decoder::new(&mut buf);
        decoder.feed(stream);
        while let Some(frame) = decoder.next().unwrap() {
            model.on_frame(&frame, crate::uptime::now()).unwrap();
        }
        let summary = model.summary(crate::uptime::now());
        let mut terminal = Terminal::new(TestBackend::new(120, 32)).unwrap();
        terminal
            .draw(|frame| super::draw(frame, &summary, None))
            .unwrap();
        terminal
            .backend()
            .buffer()
            .content()
            .chunks(120)
            .map(|row| row.iter().map(|cell| cell.symbol()).collect::<String>() + "\n")
            .collect()
    }

    #[test]
    fn the_view_shows_lanes_a_stall_and_the_drop_counters() {
        let screen = screen_after(&scripted_stream());
        println!("{screen}");
        for expected in [
            "GameLoop",
            "worker-7",
            "LoadLevel",
            "Physics",
            "memory.bytes",
            "dropped    2 frames   34 events",
            "live from 127.0.0.1:9100",
        ] {
            assert!(
                screen.contains(expected),
                "{expected:?} missing from\n{screen}"
            );
        }
    }

    #[test]
    fn a_peer_claiming_every_event_lost_is_shown_so() {
        // Its totals agree with what arrived (three frames, two missed),
        // so the reader takes its claim; the drop counters' colour summed
        // them, which overflowed.
        let mut stream = scripted_stream();
        let totals = Shutdown {
            time: 40_000_000,
            frames_sent: 3,
            frames_dropped: 2,
            events_dropped: u64::MAX,
        };
        let mut out = [0u8; 64];
        let n = totals.write(&mut out, 5).unwrap();
        stream.extend(&out[..n]);
        let screen = screen_after(&stream);
        assert!(
            screen.contains(&format!("dropped    2 frames   {}", u64::MAX)),
            "{screen}"
        );
    }
}
