//! `--ui-type dashboard`: a full-screen view of the run on stdout's alternate screen.
//!
//! [`run`] samples the counters into a [`DashboardState`] a few times a second and
//! [`render`] draws it: rendering is a pure function of the state, which the tests draw
//! on ratatui's `TestBackend`.
//!
//! The terminal is in raw mode, so Ctrl-C arrives as a key, not as SIGINT: the dashboard
//! cancels the run itself, as the run's own Ctrl-C handler would.

use std::collections::VecDeque;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use aiperf_core::Waiting;
use aiperf_metrics::live::{LiveSnapshot, Percentiles};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Gauge, Paragraph, Row, Sparkline, Table};
use ratatui::Frame;

use super::cpu::{CpuSampler, CpuUse};
use super::{StopCondition, Watched, REFRESH};
use crate::logging;

/// CPU use (share of the machine) above which the client may be the bottleneck.
const CPU_WARNING_PERCENT: f64 = 90.0;

/// Rates are averaged over this window, and the history gets one point per window.
const RATE_WINDOW: Duration = Duration::from_secs(1);

/// How long a wait for a key lasts: it bounds how long the end of the run waits for the
/// dashboard to give the terminal back.
const KEY_POLL: Duration = Duration::from_millis(20);

/// Points of rate history kept (one per second: ten minutes, wider than any terminal).
const HISTORY_POINTS: usize = 600;

/// Everything the dashboard shows at one instant.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct DashboardState {
    /// `Warming up` or `Profiling`.
    pub phase: &'static str,
    /// Time since the phase started.
    pub elapsed: Duration,
    /// What ends the phase.
    pub target: StopCondition,
    /// Requests sent in this phase.
    pub sent: u64,
    /// Requests whose records were processed in this phase.
    pub completed: u64,
    /// Of those, the failed ones.
    pub errors: u64,
    /// Requests per second over the last second.
    pub request_rate: f64,
    /// Output tokens per second over the last second.
    pub token_rate: f64,
    /// Requests per second, one point per second, oldest first.
    pub request_rate_history: Vec<u64>,
    /// Output tokens per second, one point per second, oldest first.
    pub token_rate_history: Vec<u64>,
    /// Latencies, tokens and errors of the profiling records so far.
    pub live: LiveSnapshot,
    /// The client's CPU use; `None` until measured.
    pub cpu: Option<CpuUse>,
    /// Recent warnings and errors from the log, oldest first.
    pub warnings: Vec<String>,
    /// Ctrl-C was pressed: the run is winding down.
    pub cancelling: bool,
    /// Requests on the wire longer than `long_wait`, if any.
    pub long_waits: Option<Waiting>,
    /// The threshold of `long_waits`.
    pub long_wait: Duration,
}

/// Draws `state` over the whole frame.
pub(super) fn render(frame: &mut Frame, state: &DashboardState) {
    let [progress, rates, middle, bottom, footer] = Layout::vertical([
        Constraint::Length(3),
        Constraint::Length(5),
        Constraint::Length(7),
        Constraint::Min(3),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    render_progress(frame, progress, state);
    let [requests, tokens] =
        Layout::horizontal([Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)]).areas(rates);
    render_sparkline(
        frame,
        requests,
        format!(" Requests/s: {:.1} ", state.request_rate),
        &state.request_rate_history,
        Color::Cyan,
    );
    render_sparkline(
        frame,
        tokens,
        format!(" Output tokens/s: {:.0} ", state.token_rate),
        &state.token_rate_history,
        Color::Green,
    );
    let [latencies, counters] =
        Layout::horizontal([Constraint::Min(48), Constraint::Length(30)]).areas(middle);
    render_latencies(frame, latencies, &state.live);
    render_counters(frame, counters, state);
    let [errors, warnings] =
        Layout::horizontal([Constraint::Ratio(1, 2), Constraint::Ratio(1, 2)]).areas(bottom);
    render_errors(frame, errors, &state.live.errors_by_type);
    render_warnings(frame, warnings, &state.warnings);
    let hint = if state.cancelling {
        Span::styled(
            " Cancelling: writing the results of the requests that finished…",
            Style::new().fg(Color::Yellow),
        )
    } else {
        Span::raw(" Ctrl-C stops the run; the requests that finished are kept.")
    };
    frame.render_widget(Line::from(hint), footer);
}

fn render_progress(frame: &mut Frame, area: Rect, state: &DashboardState) {
    let secs = state.elapsed.as_secs();
    let title = format!(
        " AIPerf · {} · {:02}:{:02}:{:02} ",
        state.phase,
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    );
    let (ratio, label) = match state.target {
        StopCondition::Requests(total) => (
            state.completed as f64 / total.max(1) as f64,
            format!("{}/{total} requests", state.completed),
        ),
        StopCondition::Seconds(total) => (
            state.elapsed.as_secs_f64() / total.max(1e-9),
            format!("{secs}/{total:.0} s"),
        ),
        StopCondition::Open => (0.0, format!("{} requests", state.completed)),
    };
    let gauge = Gauge::default()
        .block(Block::bordered().title(title))
        .gauge_style(Style::new().fg(Color::Blue))
        .ratio(ratio.clamp(0.0, 1.0))
        .label(label);
    frame.render_widget(gauge, area);
}

fn render_sparkline(frame: &mut Frame, area: Rect, title: String, history: &[u64], color: Color) {
    // The latest points that fit: the sparkline draws from its first point on.
    let width = usize::from(area.width.saturating_sub(2));
    let shown = &history[history.len().saturating_sub(width)..];
    let sparkline = Sparkline::default()
        .block(Block::bordered().title(title))
        .data(shown)
        .style(Style::new().fg(color));
    frame.render_widget(sparkline, area);
}

fn render_latencies(frame: &mut Frame, area: Rect, live: &LiveSnapshot) {
    let cell = |value: Option<f64>| value.map_or_else(|| "-".to_owned(), |v| format!("{v:.2}"));
    let row = |name: &'static str, p: Option<Percentiles>| {
        Row::new([
            name.to_owned(),
            cell(p.map(|p| p.p50)),
            cell(p.map(|p| p.p90)),
            cell(p.map(|p| p.p99)),
            cell(p.map(|p| p.max)),
        ])
    };
    let table = Table::new(
        [
            row("TTFT", live.ttft),
            row("ITL", live.itl),
            row("Latency", live.latency),
            row("Sched. lag", live.schedule_lag),
        ],
        [
            Constraint::Length(11),
            Constraint::Length(8),
            Constraint::Length(8),
            Constraint::Length(8),
            Constraint::Length(8),
        ],
    )
    .header(
        Row::new(["ms", "p50", "p90", "p99", "max"])
            .style(Style::new().add_modifier(Modifier::BOLD)),
    )
    .block(Block::bordered().title(" Latency (profiling records) "));
    frame.render_widget(table, area);
}

fn render_counters(frame: &mut Frame, area: Rect, state: &DashboardState) {
    let in_flight = state.sent.saturating_sub(state.completed);
    let warning = Style::new().fg(Color::Red).add_modifier(Modifier::BOLD);
    let cpu = match state.cpu {
        Some(cpu) if cpu.percent_of_machine > CPU_WARNING_PERCENT => Span::styled(
            format!("{:.0}% of {} cores!", cpu.percent_of_machine, cpu.cores),
            warning,
        ),
        // One saturated thread (the sending one, by default) delays stamps even while
        // the machine has cores to spare.
        Some(cpu) if cpu.busiest_thread_percent > CPU_WARNING_PERCENT => Span::styled(
            format!(
                "{:.0}% (thread {:.0}%)!",
                cpu.percent_of_machine, cpu.busiest_thread_percent
            ),
            warning,
        ),
        Some(cpu) => Span::raw(format!(
            "{:.0}% of {} cores",
            cpu.percent_of_machine, cpu.cores
        )),
        None => Span::raw("-"),
    };
    let line = |name: &'static str, value: Span<'static>| {
        Line::from(vec![Span::raw(format!("{name:<11}")), value])
    };
    let lines = vec![
        line(
            "In flight",
            match state.long_waits {
                Some(waiting) => Span::styled(
                    format!(
                        "{in_flight} ({} over {}s!)",
                        waiting.count,
                        state.long_wait.as_secs()
                    ),
                    warning,
                ),
                None => Span::raw(in_flight.to_string()),
            },
        ),
        line("Sent", Span::raw(state.sent.to_string())),
        line("Completed", Span::raw(state.completed.to_string())),
        line("Errors", Span::raw(state.errors.to_string())),
        line("Client CPU", cpu),
    ];
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" Requests ")),
        area,
    );
}

fn render_errors(frame: &mut Frame, area: Rect, errors: &[(String, u64)]) {
    let lines: Vec<Line> = if errors.is_empty() {
        vec![Line::raw("none")]
    } else {
        errors
            .iter()
            .map(|(kind, count)| Line::raw(format!("{count:>6}  {kind}")))
            .collect()
    };
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" Errors by type ")),
        area,
    );
}

fn render_warnings(frame: &mut Frame, area: Rect, warnings: &[String]) {
    // The newest that fit.
    let rows = usize::from(area.height.saturating_sub(2));
    let lines: Vec<Line> = warnings[warnings.len().saturating_sub(rows)..]
        .iter()
        .map(|w| Line::styled(w.as_str(), Style::new().fg(Color::Yellow)))
        .collect();
    frame.render_widget(
        Paragraph::new(lines).block(Block::bordered().title(" Warnings ")),
        area,
    );
}

/// Turns counter readings into per-second rates and a per-second history.
#[derive(Debug)]
struct Rates {
    /// (when, completed requests, output tokens) over the last window.
    samples: VecDeque<(Instant, u64, u64)>,
    last_point: Option<Instant>,
    requests: Vec<u64>,
    tokens: Vec<u64>,
}

impl Rates {
    fn new() -> Self {
        Self {
            samples: VecDeque::new(),
            last_point: None,
            requests: Vec::new(),
            tokens: Vec::new(),
        }
    }

    /// Adds a reading; returns (requests/s, tokens/s) over the last window.
    fn add(&mut self, now: Instant, completed: u64, tokens: u64) -> (f64, f64) {
        self.samples.push_back((now, completed, tokens));
        while self
            .samples
            .get(1)
            .is_some_and(|(at, ..)| now.duration_since(*at) >= RATE_WINDOW)
        {
            self.samples.pop_front();
        }
        let Some(&(since, completed_then, tokens_then)) = self.samples.front() else {
            return (0.0, 0.0);
        };
        let secs = now.duration_since(since).as_secs_f64();
        if secs <= 0.0 {
            return (0.0, 0.0);
        }
        // A phase change resets the engine's counters: no negative rates.
        let request_rate = completed.saturating_sub(completed_then) as f64 / secs;
        let token_rate = tokens.saturating_sub(tokens_then) as f64 / secs;
        if self
            .last_point
            .is_none_or(|at| now.duration_since(at) >= RATE_WINDOW)
        {
            self.last_point = Some(now);
            for (history, rate) in [
                (&mut self.requests, request_rate),
                (&mut self.tokens, token_rate),
            ] {
                if history.len() == HISTORY_POINTS {
                    history.remove(0);
                }
                history.push(rate.round() as u64);
            }
        }
        (request_rate, token_rate)
    }
}

/// Draws until `stop` is set, then gives the terminal back. Without a terminal on stdout
/// it logs why and returns: the run goes on without a display (and a pipe gets no escape
/// sequences).
pub(super) fn run(watched: &Watched, stop: &AtomicBool) {
    if !std::io::stdout().is_terminal() {
        tracing::warn!("the dashboard needs a terminal on stdout: no live display");
        return;
    }
    let mut terminal = match ratatui::try_init() {
        Ok(terminal) => terminal,
        Err(error) => {
            ratatui::restore();
            tracing::warn!("cannot draw the dashboard: {error}");
            return;
        }
    };
    logging::mute_console(true);
    let mut rates = Rates::new();
    let mut cpu = CpuSampler::new();
    let mut cpu_use = None;
    let mut phase_start = (false, Instant::now());
    while !stop.load(Ordering::Relaxed) {
        let progress = &watched.progress;
        let profiling = progress.profiling.load(Ordering::Relaxed);
        if profiling != phase_start.0 {
            phase_start = (profiling, Instant::now());
        }
        let live = watched.live.snapshot();
        let completed = progress.completed.load(Ordering::Relaxed);
        let now = Instant::now();
        let (request_rate, token_rate) = rates.add(now, completed, live.output_tokens);
        cpu_use = cpu.sample(RATE_WINDOW).or(cpu_use);
        let state = DashboardState {
            phase: if profiling { "Profiling" } else { "Warming up" },
            elapsed: now.duration_since(phase_start.1),
            target: match watched.targets.warmup {
                Some(warmup) if !profiling => warmup,
                _ => watched.targets.profiling,
            },
            sent: progress.sent.load(Ordering::Relaxed),
            completed,
            errors: progress.errors.load(Ordering::Relaxed),
            request_rate,
            token_rate,
            request_rate_history: rates.requests.clone(),
            token_rate_history: rates.tokens.clone(),
            live,
            cpu: cpu_use,
            warnings: logging::recent_warnings(),
            cancelling: watched.cancel.is_cancelled(),
            long_waits: progress.in_flight.waiting_longer_than(watched.long_wait),
            long_wait: watched.long_wait,
        };
        if let Err(error) = terminal.draw(|frame| render(frame, &state)) {
            tracing::warn!("cannot draw the dashboard: {error}");
            break;
        }
        let next_draw = now + REFRESH;
        while Instant::now() < next_draw && !stop.load(Ordering::Relaxed) {
            if ctrl_c_pressed(KEY_POLL) {
                watched.cancel.cancel();
            }
        }
    }
    ratatui::restore();
    logging::mute_console(false);
}

/// Waits up to `timeout` for a key; true when it was Ctrl-C.
fn ctrl_c_pressed(timeout: Duration) -> bool {
    if !event::poll(timeout).unwrap_or(false) {
        return false;
    }
    matches!(
        event::read(),
        Ok(Event::Key(key)) if key.kind == KeyEventKind::Press
            && key.code == KeyCode::Char('c')
            && key.modifiers.contains(KeyModifiers::CONTROL)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn known_state() -> DashboardState {
        let p = |p50, p90, p99, max| Some(Percentiles { p50, p90, p99, max });
        DashboardState {
            phase: "Profiling",
            elapsed: Duration::from_secs(75),
            target: StopCondition::Requests(3000),
            sent: 1264,
            completed: 1200,
            errors: 3,
            request_rate: 250.0,
            token_rate: 25_000.0,
            request_rate_history: vec![100, 200, 250],
            token_rate_history: vec![10_000, 20_000, 25_000],
            live: LiveSnapshot {
                ttft: p(20.5, 22.0, 30.25, 41.0),
                itl: p(5.0, 5.5, 6.0, 9.0),
                latency: p(520.0, 540.0, 600.0, 700.0),
                schedule_lag: p(0.05, 0.1, 1.5, 3.0),
                requests: 1200,
                output_tokens: 120_000,
                errors_by_type: vec![
                    ("TimeoutError".into(), 2),
                    ("Internal Server Error".into(), 1),
                ],
            },
            cpu: Some(CpuUse {
                percent_of_machine: 95.0,
                cores: 2,
                busiest_thread_percent: 99.0,
            }),
            warnings: vec!["warning: the server closed a connection".into()],
            cancelling: false,
            long_waits: None,
            long_wait: Duration::from_secs(60),
        }
    }

    fn draw(state: &DashboardState, width: u16, height: u16) -> Terminal<TestBackend> {
        let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test backend");
        terminal.draw(|frame| render(frame, state)).expect("draw");
        terminal
    }

    fn lines(terminal: &Terminal<TestBackend>) -> Vec<String> {
        let buffer = terminal.backend().buffer();
        (0..buffer.area.height)
            .map(|y| {
                (0..buffer.area.width)
                    .map(|x| buffer[(x, y)].symbol())
                    .collect::<String>()
            })
            .collect()
    }

    #[test]
    fn a_known_state_draws_the_expected_frame() {
        let terminal = draw(&known_state(), 80, 24);
        let expected = [
            "┌ AIPerf · Profiling · 00:01:15 ───────────────────────────────────────────────┐",
            "│██████████████████████████████1200/3000 requests                              │",
            "└──────────────────────────────────────────────────────────────────────────────┘",
            "┌ Requests/s: 250.0 ───────────────────┐┌ Output tokens/s: 25000 ──────────────┐",
            "│ ▃█                                   ││ ▃█                                   │",
            "│▁██                                   ││▁██                                   │",
            "│███                                   ││███                                   │",
            "└──────────────────────────────────────┘└──────────────────────────────────────┘",
            "┌ Latency (profiling records) ───────────────────┐┌ Requests ──────────────────┐",
            "│ms          p50      p90      p99      max      ││In flight  64               │",
            "│TTFT        20.50    22.00    30.25    41.00    ││Sent       1264             │",
            "│ITL         5.00     5.50     6.00     9.00     ││Completed  1200             │",
            "│Latency     520.00   540.00   600.00   700.00   ││Errors     3                │",
            "│Sched. lag  0.05     0.10     1.50     3.00     ││Client CPU 95% of 2 cores!  │",
            "└────────────────────────────────────────────────┘└────────────────────────────┘",
            "┌ Errors by type ──────────────────────┐┌ Warnings ────────────────────────────┐",
            "│     2  TimeoutError                  ││warning: the server closed a connectio│",
            "│     1  Internal Server Error         ││                                      │",
            "│                                      ││                                      │",
            "│                                      ││                                      │",
            "│                                      ││                                      │",
            "│                                      ││                                      │",
            "└──────────────────────────────────────┘└──────────────────────────────────────┘",
            " Ctrl-C stops the run; the requests that finished are kept.                     ",
        ];
        assert_eq!(lines(&terminal), expected);
        // Near saturation the CPU figure turns red.
        let cpu_cell = &terminal.backend().buffer()[(62, 13)];
        assert_eq!(cpu_cell.symbol(), "9");
        assert_eq!(cpu_cell.fg, Color::Red);
    }

    #[test]
    fn one_saturated_thread_is_a_warning_while_the_machine_has_cores_to_spare() {
        let mut state = known_state();
        state.cpu = Some(CpuUse {
            percent_of_machine: 48.0,
            cores: 2,
            busiest_thread_percent: 97.0,
        });
        let terminal = draw(&state, 80, 24);
        assert_eq!(
            lines(&terminal)[13],
            "│Sched. lag  0.05     0.10     1.50     3.00     ││Client CPU 48% (thread 97%)!│"
        );
        assert_eq!(terminal.backend().buffer()[(62, 13)].fg, Color::Red);

        state.cpu = Some(CpuUse {
            busiest_thread_percent: 60.0,
            ..state.cpu.expect("set above")
        });
        let terminal = draw(&state, 80, 24);
        assert!(lines(&terminal)[13].ends_with("│Client CPU 48% of 2 cores   │"));
        assert_eq!(terminal.backend().buffer()[(62, 13)].fg, Color::Reset);
    }

    #[test]
    fn a_timed_run_before_any_record_shows_empty_figures_and_cancelling() {
        let state = DashboardState {
            phase: "Warming up",
            elapsed: Duration::from_secs(5),
            target: StopCondition::Seconds(20.0),
            sent: 8,
            completed: 0,
            errors: 0,
            request_rate: 0.0,
            token_rate: 0.0,
            request_rate_history: Vec::new(),
            token_rate_history: Vec::new(),
            live: LiveSnapshot::default(),
            cpu: Some(CpuUse {
                percent_of_machine: 12.4,
                cores: 2,
                busiest_thread_percent: 24.0,
            }),
            warnings: Vec::new(),
            cancelling: true,
            long_waits: Some(Waiting {
                count: 8,
                longest: Duration::from_secs(75),
            }),
            long_wait: Duration::from_secs(60),
        };
        let terminal = draw(&state, 80, 24);
        let lines = lines(&terminal);
        assert_eq!(
            lines[0],
            "┌ AIPerf · Warming up · 00:00:05 ──────────────────────────────────────────────┐"
        );
        assert_eq!(
            lines[1],
            "│████████████████████                5/20 s                                    │"
        );
        assert!(
            lines[9].ends_with("││In flight  8 (8 over 60s!)  │"),
            "{}",
            lines[9]
        );
        assert_eq!(
            lines[10],
            "│TTFT        -        -        -        -        ││Sent       8                │"
        );
        assert_eq!(
            lines[13],
            "│Sched. lag  -        -        -        -        ││Client CPU 12% of 2 cores   │"
        );
        assert_eq!(
            lines[16],
            "│none                                  ││                                      │"
        );
        assert_eq!(
            lines[23],
            " Cancelling: writing the results of the requests that finished…                 "
        );
        assert_eq!(terminal.backend().buffer()[(62, 13)].fg, Color::Reset);
    }
}
