//! `aiperf analyze swim-lane`: one lane per session with each request drawn as a bar
//! from its start to its end (failed ones in red), and the number of requests in flight
//! over the same time axis underneath — where a run's concurrency actually sat, and which
//! sessions waited.
//!
//! ```
//! use aiperf_plot::artifacts::RequestRow;
//! use aiperf_plot::swim_lane::lanes;
//!
//! let row = |session: &str, start_s: u64, end_s: u64| RequestRow {
//!     start_ns: Some(start_s * 1_000_000_000),
//!     end_ns: Some(end_s * 1_000_000_000),
//!     conversation_id: Some(session.into()),
//!     ..RequestRow::default()
//! };
//! let lanes = lanes(&[row("a", 10, 12), row("b", 11, 13), row("a", 12, 14)]);
//! assert_eq!(lanes.lanes.len(), 2);
//! assert_eq!(lanes.peak_in_flight(), 2);
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use plotters::chart::MeshStyle;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use aiperf_metrics::artifacts::{open_if_present, RECORDS_FILE};

use crate::artifacts::{read_records, RequestRow};
use crate::render::{register_font, FONT};
use crate::report::escape;
use crate::theme::Colours;
use crate::{PlotError, Theme};

/// The picture's size, px.
pub const SIZE: (u32, u32) = (1400, 900);
/// The default file name, written into the run directory.
pub const FILE_NAME: &str = "swim_lane.png";
/// Height of the concurrency panel, px.
const CONCURRENCY_PANEL: u32 = 280;
/// The chart name in errors.
const CHART: &str = "swim_lane";

/// One request's bar, seconds since the run's first request started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LaneRequest {
    /// When it started.
    pub start_s: f64,
    /// When its last byte (or its error) arrived.
    pub end_s: f64,
    /// Whether it failed.
    pub failed: bool,
    /// Its time to first token, ms, when it had one.
    pub ttft_ms: Option<f64>,
    /// Its request latency, ms.
    pub latency_ms: Option<f64>,
    /// Its input sequence length, tokens.
    pub isl: Option<f64>,
    /// Its output sequence length, tokens.
    pub osl: Option<f64>,
}

/// One session's requests, in start order.
#[derive(Debug, Clone, PartialEq)]
pub struct Lane {
    /// The conversation id (`session_000003`), or `request N` for a record without one.
    pub session: String,
    /// Its requests.
    pub requests: Vec<LaneRequest>,
}

/// What the picture shows.
#[derive(Debug, Clone, PartialEq)]
pub struct Lanes {
    /// Sessions in the order they started.
    pub lanes: Vec<Lane>,
    /// Requests in flight as a step function: `(t, n)` means `n` from `t` on.
    pub in_flight: Vec<(f64, u32)>,
    /// When the last request ended, seconds.
    pub end_s: f64,
}

impl Lanes {
    /// The most requests in flight at once.
    pub fn peak_in_flight(&self) -> u32 {
        self.in_flight.iter().map(|(_, n)| *n).max().unwrap_or(0)
    }
}

/// Groups the records with both stamps into lanes and counts what was in flight. Times
/// are relative to the earliest start; a request that ends at the instant another starts
/// is counted as gone first.
pub fn lanes(rows: &[RequestRow]) -> Lanes {
    let timed: Vec<(&RequestRow, u64, u64)> = rows
        .iter()
        .filter_map(|row| Some((row, row.start_ns?, row.end_ns?)))
        .collect();
    let origin = timed.iter().map(|(_, start, _)| *start).min().unwrap_or(0);
    let seconds = |ns: u64| ns.saturating_sub(origin) as f64 / 1e9;

    let mut order: Vec<&(&RequestRow, u64, u64)> = timed.iter().collect();
    order.sort_by_key(|(_, start, _)| *start);
    let mut lanes: Vec<Lane> = Vec::new();
    let mut lane_of: HashMap<String, usize> = HashMap::new();
    for (index, (row, start, end)) in order.iter().enumerate() {
        let session = row
            .conversation_id
            .clone()
            .unwrap_or_else(|| format!("request {index}"));
        let lane = *lane_of.entry(session.clone()).or_insert_with(|| {
            lanes.push(Lane {
                session,
                requests: Vec::new(),
            });
            lanes.len() - 1
        });
        lanes[lane].requests.push(LaneRequest {
            start_s: seconds(*start),
            end_s: seconds(*end),
            failed: row.failed,
            ttft_ms: row.ttft_ms,
            latency_ms: row.latency_ms,
            isl: row.isl,
            osl: row.osl,
        });
    }

    let mut events: Vec<(u64, i64)> = timed
        .iter()
        .flat_map(|(_, start, end)| [(*start, 1), (*end, -1)])
        .collect();
    // Ends (-1) sort before starts (+1) at the same instant.
    events.sort_unstable();
    let mut in_flight = vec![(0.0, 0)];
    let mut count: i64 = 0;
    for (at, change) in events {
        count += change;
        let point = (seconds(at), u32::try_from(count.max(0)).unwrap_or(u32::MAX));
        match in_flight.last_mut() {
            Some(last) if last.0 == point.0 => *last = point,
            _ => in_flight.push(point),
        }
    }
    let end_s = timed
        .iter()
        .map(|(_, _, end)| seconds(*end))
        .fold(0.0, f64::max);
    Lanes {
        lanes,
        in_flight,
        end_s,
    }
}

/// How to draw it.
#[derive(Debug, Clone, Default)]
pub struct SwimLaneOptions {
    /// Where to write the PNG; `None`: [`FILE_NAME`] in the run directory.
    pub output: Option<PathBuf>,
    /// A target concurrency to draw as a reference line under the in-flight curve.
    pub target_concurrency: Option<u32>,
    /// A ramp duration, seconds, marked with a vertical line in both panels.
    pub ramp_s: Option<f64>,
    /// Colours.
    pub theme: Theme,
}

/// The default name of the interactive viewer, written into the run directory.
pub const HTML_FILE_NAME: &str = "swim_lane.html";

/// Reads `run_dir`'s `profile_export.jsonl` into lanes. A run without records
/// (`--export-level summary`) is an error that says so.
pub fn read_lanes(run_dir: &Path) -> Result<Lanes, PlotError> {
    let path = run_dir.join(RECORDS_FILE);
    let no_records = || {
        PlotError::draw(
            CHART,
            format!(
                "{} has no timed records: the run needs --export-level records or raw",
                path.display()
            ),
        )
    };
    let reader = open_if_present(&path)?.ok_or_else(no_records)?;
    let lanes = lanes(&read_records(reader, &path)?);
    if lanes.lanes.is_empty() {
        return Err(no_records());
    }
    Ok(lanes)
}

/// Reads `run_dir`'s records ([`read_lanes`]), draws the swim lanes and writes the PNG;
/// returns its path.
pub fn write_swim_lane(run_dir: &Path, options: &SwimLaneOptions) -> Result<PathBuf, PlotError> {
    let png = swim_lane_png(&read_lanes(run_dir)?, options)?;
    let output = options
        .output
        .clone()
        .unwrap_or_else(|| run_dir.join(FILE_NAME));
    std::fs::write(&output, png).map_err(|e| PlotError::io(&output, e))?;
    Ok(output)
}

/// Reads `run_dir`'s records and writes the interactive viewer ([`swim_lane_html`]):
/// [`HTML_FILE_NAME`] in the run directory, or the PNG's `output` path with an `.html`
/// extension, as the Python AIPerf names it. Returns its path.
pub fn write_swim_lane_html(
    run_dir: &Path,
    options: &SwimLaneOptions,
) -> Result<PathBuf, PlotError> {
    let name = run_dir.file_name().map_or_else(
        || run_dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let page = swim_lane_html(&name, &read_lanes(run_dir)?, options);
    let output = options.output.as_ref().map_or_else(
        || run_dir.join(HTML_FILE_NAME),
        |png| png.with_extension("html"),
    );
    std::fs::write(&output, page).map_err(|e| PlotError::io(&output, e))?;
    Ok(output)
}

/// The interactive viewer: one self-contained HTML page (no network references) that
/// draws the lanes and the in-flight curve on a canvas, zooms and pans the time axis, and
/// shows each request's stamps, TTFT, latency and token counts on hover. The data is
/// embedded as JSON.
pub fn swim_lane_html(run: &str, lanes: &Lanes, options: &SwimLaneOptions) -> String {
    let requests: usize = lanes.lanes.iter().map(|lane| lane.requests.len()).sum();
    let failed = lanes
        .lanes
        .iter()
        .flat_map(|lane| &lane.requests)
        .filter(|r| r.failed)
        .count();
    let data = serde_json::json!({
        "endS": lanes.end_s,
        "requests": requests,
        "failed": failed,
        "target": options.target_concurrency,
        "rampS": options.ramp_s,
        "inFlight": lanes.in_flight,
        "lanes": lanes.lanes.iter().map(|lane| serde_json::json!({
            "s": lane.session,
            "r": lane.requests.iter().map(|r| serde_json::json!([
                r.start_s, r.end_s, r.failed, r.ttft_ms, r.latency_ms, r.isl, r.osl
            ])).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    // Inside <script>, only "</" could end the element early; JSON allows "<\/".
    let data = data.to_string().replace("</", "<\\/");
    VIEWER
        .replace("__TITLE__", &escape(run))
        .replace("__DATA__", &data)
}

/// The viewer page; `__TITLE__` and `__DATA__` are filled in.
const VIEWER: &str = include_str!("swim_lane_viewer.html");

/// The picture as PNG file contents, [`SIZE`] pixels.
pub fn swim_lane_png(lanes: &Lanes, options: &SwimLaneOptions) -> Result<Vec<u8>, PlotError> {
    register_font()?;
    let (width, height) = SIZE;
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, SIZE).into_drawing_area();
        draw(&root, lanes, options).map_err(|e| PlotError::draw(CHART, e))?;
        root.present().map_err(|e| PlotError::draw(CHART, e))?;
    }
    crate::render::encode_png(&pixels, SIZE).map_err(|e| PlotError::draw(CHART, e))
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    lanes: &Lanes,
    options: &SwimLaneOptions,
) -> DrawResult<DB> {
    let colours = options.theme.colours();
    root.fill(&colours.background)?;
    let (top, bottom) = root.split_vertically(SIZE.1 - CONCURRENCY_PANEL);
    let x_end = (lanes.end_s * 1.02).max(1e-3);
    let text = |size: u32| (FONT, size).into_font().color(&colours.foreground);
    let ramp_line = |y_top: f64| {
        options.ramp_s.map(|ramp| {
            LineSeries::new(
                [(ramp, 0.0), (ramp, y_top)],
                colours.series[2].stroke_width(2),
            )
        })
    };

    let rows = lanes.lanes.len() as f64;
    let mut sessions = ChartBuilder::on(&top)
        .caption(
            format!(
                "{} sessions, one lane each (red: failed)",
                lanes.lanes.len()
            ),
            text(24),
        )
        .margin(15)
        .margin_right(40)
        .x_label_area_size(35)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_end, 0.0..rows)?;
    mesh(&mut sessions, colours, "session (in start order)")
        .disable_y_mesh()
        .draw()?;
    let ok = colours.series[0].filled();
    let failed = RGBColor(214, 39, 40).filled();
    let bars = lanes.lanes.iter().enumerate().flat_map(|(index, lane)| {
        let y = index as f64;
        lane.requests.iter().map(move |r| {
            let style = if r.failed { failed } else { ok };
            Rectangle::new([(r.start_s, y + 0.15), (r.end_s, y + 0.85)], style)
        })
    });
    sessions.draw_series(bars)?;
    if let Some(line) = ramp_line(rows) {
        sessions.draw_series(line)?;
    }

    let peak = f64::from(
        lanes
            .peak_in_flight()
            .max(options.target_concurrency.unwrap_or(0)),
    );
    let mut concurrency = ChartBuilder::on(&bottom)
        .margin(15)
        .margin_right(40)
        .x_label_area_size(45)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_end, 0.0..(peak * 1.1).max(1.0))?;
    mesh(&mut concurrency, colours, "in flight").draw()?;
    let mut steps = Vec::with_capacity(lanes.in_flight.len() * 2 + 1);
    for window in lanes.in_flight.windows(2) {
        let ((t0, n0), (t1, _)) = (window[0], window[1]);
        steps.extend([(t0, f64::from(n0)), (t1, f64::from(n0))]);
    }
    if let Some((t, n)) = lanes.in_flight.last() {
        steps.extend([(*t, f64::from(*n)), (x_end, f64::from(*n))]);
    }
    concurrency.draw_series(LineSeries::new(steps, colours.series[1].stroke_width(2)))?;
    if let Some(target) = options.target_concurrency {
        let y = f64::from(target);
        concurrency.draw_series(LineSeries::new(
            [(0.0, y), (x_end, y)],
            colours.foreground.mix(0.6).stroke_width(1),
        ))?;
    }
    if let Some(line) = ramp_line(peak * 1.1) {
        concurrency.draw_series(line)?;
    }
    Ok(())
}

/// Both panels' axes: time across, whole numbers up, in the theme's colours.
fn mesh<'a, 'b, DB: DrawingBackend>(
    plot: &'b mut ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>,
    colours: Colours,
    y_desc: &str,
) -> MeshStyle<'a, 'b, RangedCoordf64, RangedCoordf64, DB> {
    let text = |size: u32| (FONT, size).into_font().color(&colours.foreground);
    let mut mesh = plot.configure_mesh();
    mesh.x_desc("seconds since the first request")
        .y_desc(y_desc)
        .y_label_formatter(&whole_number)
        .axis_desc_style(text(16))
        .label_style(text(14))
        .bold_line_style(colours.grid)
        .light_line_style(colours.fine_grid)
        .axis_style(colours.foreground);
    mesh
}

fn whole_number(y: &f64) -> String {
    format!("{y:.0}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(session: Option<&str>, start_ms: u64, end_ms: u64, failed: bool) -> RequestRow {
        RequestRow {
            start_ns: Some(5_000_000_000 + start_ms * 1_000_000),
            end_ns: Some(5_000_000_000 + end_ms * 1_000_000),
            conversation_id: session.map(str::to_owned),
            failed,
            ..RequestRow::default()
        }
    }

    #[test]
    fn sessions_become_lanes_in_start_order_and_the_in_flight_count_steps_exactly() {
        let rows = [
            row(Some("b"), 100, 400, false),
            row(Some("a"), 0, 300, false),
            row(Some("a"), 300, 500, true),
            row(None, 200, 250, false),
            RequestRow::default(), // no stamps: left out
        ];
        let lanes = lanes(&rows);
        let sessions: Vec<&str> = lanes.lanes.iter().map(|l| l.session.as_str()).collect();
        assert_eq!(sessions, ["a", "b", "request 2"]);
        let spans: Vec<(f64, f64, bool)> = lanes.lanes[0]
            .requests
            .iter()
            .map(|r| (r.start_s, r.end_s, r.failed))
            .collect();
        assert_eq!(spans, [(0.0, 0.3, false), (0.3, 0.5, true)]);
        // At 0.3 s one request ends as another starts: the count stays at 2.
        assert_eq!(
            lanes.in_flight,
            [
                (0.0, 1),
                (0.1, 2),
                (0.2, 3),
                (0.25, 2),
                (0.3, 2),
                (0.4, 1),
                (0.5, 0)
            ]
        );
        assert_eq!(lanes.end_s, 0.5);
        assert_eq!(lanes.peak_in_flight(), 3);
    }

    #[test]
    fn the_viewer_embeds_every_request_with_its_metrics_and_reaches_no_network() {
        let mut first = row(Some("a</script>"), 0, 300, false);
        first.ttft_ms = Some(20.5);
        first.latency_ms = Some(300.0);
        first.isl = Some(128.0);
        first.osl = Some(16.0);
        let lanes = lanes(&[first, row(Some("b"), 100, 200, true)]);
        let options = SwimLaneOptions {
            target_concurrency: Some(2),
            ramp_s: Some(0.1),
            ..SwimLaneOptions::default()
        };
        let page = swim_lane_html("run <1>", &lanes, &options);
        assert!(page.contains("<title>Swim lanes: run &lt;1&gt;</title>"));
        let start = page.find(r#"id="data">"#).unwrap() + r#"id="data">"#.len();
        let end = start + page[start..].find("</script>").unwrap();
        let data: serde_json::Value = serde_json::from_str(&page[start..end]).unwrap();
        assert_eq!(data["lanes"][0]["s"], "a</script>");
        assert_eq!(
            data["lanes"][0]["r"][0],
            serde_json::json!([0.0, 0.3, false, 20.5, 300.0, 128.0, 16.0])
        );
        assert_eq!(
            data["lanes"][1]["r"][0],
            serde_json::json!([0.1, 0.2, true, null, null, null, null])
        );
        assert_eq!(
            (data["requests"].as_u64(), data["failed"].as_u64()),
            (Some(2), Some(1))
        );
        assert_eq!(data["target"], 2);
        assert_eq!(data["rampS"], 0.1);
        assert_eq!(data["inFlight"][1], serde_json::json!([0.1, 2]));
        for reference in ["http:", "https:", "src=", "href=", "@import", "url("] {
            assert!(!page.contains(reference), "{reference}");
        }
    }

    #[test]
    fn the_png_has_the_documented_size_in_both_themes() {
        let lanes = lanes(&[
            row(Some("a"), 0, 300, false),
            row(Some("b"), 100, 200, true),
        ]);
        for theme in [Theme::Light, Theme::Dark] {
            let png = swim_lane_png(
                &lanes,
                &SwimLaneOptions {
                    target_concurrency: Some(2),
                    ramp_s: Some(0.1),
                    theme,
                    ..SwimLaneOptions::default()
                },
            )
            .unwrap();
            let decoder = png::Decoder::new(std::io::Cursor::new(png));
            let info = decoder.read_info().unwrap().info().clone();
            assert_eq!((info.width, info.height), SIZE);
        }
    }
}
