//! Drawing a [`Chart`] with plotters into SVG text and PNG bytes.
//!
//! Both formats go through one drawing function generic over the backend. Logarithmic axes
//! are drawn on log10 of the values with tick labels written back in the values' units, so
//! every chart uses one coordinate type; tick positions are chosen here (1-2-5 steps, or
//! decades) rather than by plotters.

use std::sync::OnceLock;

use std::ops::Range;

use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::FontStyle;

use crate::chart::{Axis, Body, Chart, Mark, Series};
use crate::theme::{Colours, Theme};
use crate::PlotError;

/// Width of every chart, px.
pub const WIDTH: u32 = 1200;
/// Height of every chart but bar charts, which grow with their rows, px.
pub const HEIGHT: u32 = 700;

/// The font family name the embedded font is registered under.
pub(crate) const FONT: &str = "sans-serif";
/// DejaVu Sans (Bitstream Vera licence, see fonts/DejaVuSans-LICENSE.txt): bundled so that
/// PNGs render the same on a machine without any font installed.
static DEJAVU_SANS: &[u8] = include_bytes!("../fonts/DejaVuSans.ttf");

/// A linear f64 axis whose ticks we choose: bold ones (labelled, with a grid line) and light
/// ones (a fine grid line). plotters' own `WithKeyPoints` does the same but cannot take a
/// label formatter on an f64 axis.
struct Coord {
    linear: RangedCoordf64,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Coord {
    fn new(range: Range<f64>, bold: Vec<f64>, light: Vec<f64>) -> Self {
        Self {
            linear: range.into(),
            bold,
            light,
        }
    }
}

impl Ranged for Coord {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.linear.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.linear.range()
    }
}

/// A chart's pixel size.
pub fn size(chart: &Chart) -> (u32, u32) {
    match &chart.body {
        Body::Bars { categories, groups } => {
            let rows = (categories.len() * groups.len().max(1)) as u32;
            (WIDTH, HEIGHT.max(160 + rows * 32))
        }
        _ => (WIDTH, HEIGHT),
    }
}

/// The chart as an SVG document.
pub fn svg(chart: &Chart, theme: Theme) -> Result<String, PlotError> {
    register_font()?;
    let mut text = String::new();
    {
        let root = SVGBackend::with_string(&mut text, size(chart)).into_drawing_area();
        draw(&root, chart, theme.colours()).map_err(|e| PlotError::draw(&chart.name, e))?;
        root.present()
            .map_err(|e| PlotError::draw(&chart.name, e))?;
    }
    Ok(text)
}

/// The chart as PNG file contents.
pub fn png(chart: &Chart, theme: Theme) -> Result<Vec<u8>, PlotError> {
    register_font()?;
    let (width, height) = size(chart);
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        draw(&root, chart, theme.colours()).map_err(|e| PlotError::draw(&chart.name, e))?;
        root.present()
            .map_err(|e| PlotError::draw(&chart.name, e))?;
    }
    encode_png(&pixels, (width, height)).map_err(|e| PlotError::draw(&chart.name, e))
}

/// RGB pixels as PNG file contents.
pub(crate) fn encode_png(
    pixels: &[u8],
    (width, height): (u32, u32),
) -> Result<Vec<u8>, png::EncodingError> {
    let mut file = Vec::new();
    let mut encoder = png::Encoder::new(&mut file, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder
        .write_header()
        .and_then(|mut writer| writer.write_image_data(pixels))?;
    Ok(file)
}

pub(crate) fn register_font() -> Result<(), PlotError> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FONT, FontStyle::Normal, DEJAVU_SANS).is_ok()
    });
    if ok {
        Ok(())
    } else {
        Err(PlotError::Font)
    }
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

fn draw<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    chart: &Chart,
    colours: Colours,
) -> DrawResult<DB> {
    root.fill(&colours.background)?;
    match &chart.body {
        Body::Xy { series } => draw_xy(root, chart, series, colours),
        Body::Histogram { bins } => {
            let bars: Vec<(f64, f64, f64)> = bins
                .iter()
                .map(|b| {
                    (
                        scale(&chart.x, b.low),
                        scale(&chart.x, b.high),
                        b.count as f64,
                    )
                })
                .collect();
            draw_histogram(root, chart, &bars, colours)
        }
        Body::Bars { categories, groups } => draw_bars(root, chart, categories, groups, colours),
    }
}

fn draw_xy<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    chart: &Chart,
    series: &[Series],
    colours: Colours,
) -> DrawResult<DB> {
    let scaled: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .filter(|[x, y]| (!chart.x.log || *x > 0.0) && (!chart.y.log || *y > 0.0))
                .map(|[x, y]| (scale(&chart.x, *x), scale(&chart.y, *y)))
                .collect()
        })
        .collect();
    let all = scaled.iter().flatten();
    // Room right of the rightmost point for its label.
    let labelled = series.iter().any(|s| !s.point_labels.is_empty());
    let x = axis_coord(
        &chart.x,
        all.clone().map(|p| p.0),
        if labelled { 0.2 } else { 0.0 },
    );
    // Room above the data for the legend, which sits in the upper right corner.
    let legend_room = if series.len() > 1 {
        0.05 * series.len() as f64
    } else {
        0.0
    };
    let y = axis_coord(&chart.y, all.map(|p| p.1), legend_room);
    let mut plot = builder(root, chart, colours, 60).build_cartesian_2d(x, y)?;
    mesh(&mut plot, chart, colours).draw()?;

    for (index, (series, points)) in series.iter().zip(&scaled).enumerate() {
        let colour = colours.series[index % colours.series.len()];
        let name = series.name.clone();
        match series.mark {
            Mark::Dots => {
                let dot = colour.mix(0.7).filled();
                plot.draw_series(points.iter().map(|p| Circle::new(*p, 3, dot)))?
                    .label(name)
                    .legend(move |(x, y)| Circle::new((x + 10, y), 5, colour.filled()));
            }
            Mark::Markers => {
                plot.draw_series(points.iter().map(|p| Circle::new(*p, 6, colour.filled())))?
                    .label(name)
                    .legend(move |(x, y)| Circle::new((x + 10, y), 6, colour.filled()));
            }
            Mark::Line => {
                plot.draw_series(LineSeries::new(
                    points.iter().copied(),
                    colour.stroke_width(2),
                ))?
                .label(name)
                .legend(move |(x, y)| line_key(x, y, colour));
            }
            Mark::Highlight => {
                plot.draw_series(points.iter().map(|p| Circle::new(*p, 7, colour.filled())))?;
                plot.draw_series(LineSeries::new(
                    points.iter().copied(),
                    colour.stroke_width(3),
                ))?
                .label(name)
                .legend(move |(x, y)| line_key(x, y, colour));
            }
        }
        let label_font = (FONT, 15).into_font().color(&colours.foreground);
        plot.draw_series(series.point_labels.iter().zip(points).map(|(text, p)| {
            EmptyElement::at(*p) + Text::new(text.clone(), (9, -20), label_font.clone())
        }))?;
    }
    if series.len() > 1 {
        plot.configure_series_labels()
            .position(SeriesLabelPosition::UpperRight)
            .background_style(colours.background.mix(0.85))
            .border_style(colours.grid)
            .label_font((FONT, 16).into_font().color(&colours.foreground))
            .draw()?;
    }
    Ok(())
}

/// The legend's sample of a line series.
fn line_key(x: i32, y: i32, colour: RGBColor) -> PathElement<(i32, i32)> {
    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(3))
}

fn draw_histogram<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    chart: &Chart,
    bars: &[(f64, f64, f64)],
    colours: Colours,
) -> DrawResult<DB> {
    let x = axis_coord(
        &chart.x,
        bars.iter().flat_map(|(low, high, _)| [*low, *high]),
        0.0,
    );
    let mut y = axis_coord(&chart.y, bars.iter().map(|b| b.2), 0.0);
    // Counts: no tick at half a request.
    y.bold.retain(|v| v.fract() == 0.0);
    y.light.retain(|v| v.fract() == 0.0);
    let mut plot = builder(root, chart, colours, 60).build_cartesian_2d(x, y)?;
    mesh(&mut plot, chart, colours).draw()?;
    let fill = colours.series[0];
    plot.draw_series(bars.iter().map(|(low, high, count)| {
        Rectangle::new([(*low, 0.0), (*high, *count)], fill.mix(0.75).filled())
    }))?;
    plot.draw_series(bars.iter().map(|(low, high, count)| {
        Rectangle::new(
            [(*low, 0.0), (*high, *count)],
            colours.background.stroke_width(1),
        )
    }))?;
    Ok(())
}

fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, plotters::coord::Shift>,
    chart: &Chart,
    categories: &[String],
    groups: &[crate::chart::BarGroup],
    colours: Colours,
) -> DrawResult<DB> {
    let rows = categories.len();
    let row_of = |i: usize| (rows - 1 - i) as f64;
    let label_width = categories
        .iter()
        .map(|c| c.chars().count())
        .max()
        .unwrap_or(0)
        .clamp(6, 48) as u32
        * 9
        + 30;
    let values = groups
        .iter()
        .flat_map(|g| g.values.iter().flatten().copied());
    // Room right of the longest bar for its value and the legend.
    let x = axis_coord(&chart.x, values, 0.25);
    // One key point per row, labelled with the category through the formatter.
    let y = Coord::new(
        -0.5..rows as f64 - 0.5,
        (0..rows).map(|i| i as f64).collect(),
        Vec::new(),
    );
    let mut plot = builder(root, chart, colours, label_width).build_cartesian_2d(x, y)?;
    let names: Vec<String> = categories.iter().map(|c| shorten(c, 48)).collect();
    let row_label = move |v: &f64| {
        let row = v.round();
        if row < 0.0 || (row as usize) >= names.len() {
            return String::new();
        }
        names[names.len() - 1 - row as usize].clone()
    };
    mesh(&mut plot, chart, colours)
        .disable_y_mesh()
        .y_label_formatter(&row_label)
        .draw()?;

    let thickness = 0.8 / groups.len().max(1) as f64;
    let value_font = (FONT, 14).into_font().color(&colours.foreground);
    for (g, group) in groups.iter().enumerate() {
        let colour = colours.series[g % colours.series.len()];
        let bars: Vec<(f64, f64, f64)> = group
            .values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| {
                let top = row_of(i) + 0.4 - thickness * g as f64;
                Some((top - thickness * 0.92, top, (*v)?))
            })
            .collect();
        plot.draw_series(bars.iter().map(|(bottom, top, value)| {
            Rectangle::new([(0.0, *bottom), (*value, *top)], colour.filled())
        }))?
        .label(group.name.clone())
        .legend(move |(x, y)| Rectangle::new([(x, y - 6), (x + 18, y + 6)], colour.filled()));
        plot.draw_series(bars.iter().map(|(bottom, top, value)| {
            EmptyElement::at((*value, (bottom + top) / 2.0))
                + Text::new(format_number(*value), (6, -7), value_font.clone())
        }))?;
    }
    plot.configure_series_labels()
        .position(SeriesLabelPosition::LowerRight)
        .background_style(colours.background.mix(0.85))
        .border_style(colours.grid)
        .label_font((FONT, 16).into_font().color(&colours.foreground))
        .draw()?;
    Ok(())
}

fn builder<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, plotters::coord::Shift>,
    chart: &Chart,
    colours: Colours,
    y_label_width: u32,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(root);
    builder
        .caption(
            chart.title.clone(),
            (FONT, 26).into_font().color(&colours.foreground),
        )
        .margin(20)
        .margin_right(40)
        .x_label_area_size(70)
        .y_label_area_size(y_label_width);
    builder
}

fn mesh<'a, 'b, DB: DrawingBackend>(
    plot: &'b mut ChartContext<'a, DB, Cartesian2d<Coord, Coord>>,
    chart: &Chart,
    colours: Colours,
) -> plotters::chart::MeshStyle<'a, 'b, Coord, Coord, DB> {
    let (x_log, y_log) = (chart.x.log, chart.y.log);
    let mut mesh = plot.configure_mesh();
    mesh.x_desc(chart.x.label.clone())
        .y_desc(chart.y.label.clone())
        .axis_desc_style((FONT, 19).into_font().color(&colours.foreground))
        .label_style((FONT, 16).into_font().color(&colours.foreground))
        .axis_style(colours.foreground)
        .bold_line_style(colours.grid)
        .light_line_style(colours.fine_grid)
        .x_label_formatter(if x_log { &log_tick } else { &linear_tick })
        .y_label_formatter(if y_log { &log_tick } else { &linear_tick });
    mesh
}

fn linear_tick(value: &f64) -> String {
    format_number(*value)
}

fn log_tick(value: &f64) -> String {
    format_number(10f64.powf(*value))
}

/// A value where the chart draws it: log10 of it on a log axis.
fn scale(axis: &Axis, value: f64) -> f64 {
    if axis.log {
        value.log10()
    } else {
        value
    }
}

/// The coordinate of an axis over already-scaled `values`, with its tick positions, and
/// `extra_room` (a fraction of the span) free beyond the largest value. A log axis gets a
/// tick per decade (and at 2× and 5× when it spans three decades or fewer).
fn axis_coord(axis: &Axis, values: impl Iterator<Item = f64>, extra_room: f64) -> Coord {
    let (mut low, mut high) = values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
            (lo.min(v), hi.max(v))
        });
    if !low.is_finite() {
        (low, high) = (0.0, 1.0);
    }
    if axis.log {
        let (low, high) = (low - 0.05, high + 0.05 + (high - low) * extra_room);
        let decades = (low.floor() as i32)..=(high.ceil() as i32);
        let multiples: &[f64] = if high - low <= 3.0 {
            &[1.0, 2.0, 5.0]
        } else {
            &[1.0]
        };
        let in_range = |v: &f64| *v >= low && *v <= high;
        let bold: Vec<f64> = decades
            .clone()
            .flat_map(|d| multiples.iter().map(move |m| (m * 10f64.powi(d)).log10()))
            .filter(in_range)
            .collect();
        let light: Vec<f64> = decades
            .flat_map(|d| (1..10).map(move |m| (f64::from(m) * 10f64.powi(d)).log10()))
            .filter(in_range)
            .collect();
        return Coord::new(low..high, bold, light);
    }
    if axis.from_zero {
        low = low.min(0.0);
    }
    if high - low < f64::EPSILON * high.abs().max(1.0) {
        let pad = (high.abs() * 0.1).max(1.0);
        (low, high) = (low - pad, high + pad);
    }
    let pad = (high - low) * 0.06;
    let low = if axis.from_zero && low >= 0.0 {
        0.0
    } else {
        low - pad
    };
    let high = high + pad + (high - low) * extra_room;
    let step = nice_step((high - low) / 7.0);
    let first = (low / step).ceil() as i64;
    let last = (high / step).floor() as i64;
    let bold: Vec<f64> = (first..=last).map(|k| k as f64 * step).collect();
    let light: Vec<f64> = (first * 2 - 1..=last * 2 + 1)
        .map(|k| k as f64 * step / 2.0)
        .filter(|v| *v >= low && *v <= high)
        .collect();
    Coord::new(low..high, bold, light)
}

/// The 1, 2, 2.5 or 5 × 10ⁿ step nearest above `raw`.
fn nice_step(raw: f64) -> f64 {
    let magnitude = 10f64.powf(raw.log10().floor());
    let fraction = raw / magnitude;
    let nice = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .find(|n| *n >= fraction)
        .unwrap_or(10.0);
    nice * magnitude
}

/// A number as a tick or bar label: four significant digits at most, `k` and `M` for
/// thousands and millions (from 1,000 on, so that one axis does not mix `5000` and `10k`),
/// no trailing zeros.
pub fn format_number(value: f64) -> String {
    let magnitude = value.abs();
    if magnitude >= 1e6 {
        return format!("{}M", format_number(value / 1e6));
    }
    if magnitude >= 1e3 {
        return format!("{}k", format_number(value / 1e3));
    }
    if magnitude < 1e-12 {
        return "0".into();
    }
    let decimals = (3 - magnitude.log10().floor() as i32).clamp(0, 6) as usize;
    let text = format!("{value:.decimals$}");
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        text
    }
}

/// `text` cut to its last `max` characters behind an ellipsis: the end of a run's path is
/// what tells runs apart.
fn shorten(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_owned();
    }
    let tail: String = text.chars().skip(count - (max - 1)).collect();
    format!("…{tail}")
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::chart::{Axis, Mark, Series};

    fn line_chart() -> Chart {
        Chart {
            name: "c".into(),
            title: "A title".into(),
            x: Axis::linear("x (s)"),
            y: Axis::scaled("y (ms)", true),
            body: Body::Xy {
                series: vec![Series::new(
                    "s",
                    Mark::Line,
                    vec![[0.0, 1.0], [1.0, 1000.0]],
                )],
            },
        }
    }

    /// The decoded RGB pixels of a PNG.
    fn decode(file: &[u8]) -> (png::OutputInfo, Vec<u8>) {
        let mut reader = png::Decoder::new(std::io::Cursor::new(file))
            .read_info()
            .expect("a PNG");
        let mut pixels = vec![0; reader.output_buffer_size().expect("size")];
        let info = reader.next_frame(&mut pixels).expect("a frame");
        (info, pixels)
    }

    #[test]
    fn each_theme_paints_its_background_and_draws_text_in_its_foreground() {
        for theme in [Theme::Light, Theme::Dark] {
            let colours = theme.colours();
            let (info, pixels) = decode(&png(&line_chart(), theme).expect("renders"));
            assert_eq!((info.width, info.height), (WIDTH, HEIGHT));
            let background = colours.background;
            assert_eq!(
                pixels[..3],
                [background.0, background.1, background.2],
                "{theme:?}"
            );
            // The title's glyphs: foreground pixels in the top band.
            let foreground = colours.foreground;
            let title_band = &pixels[..WIDTH as usize * 50 * 3];
            let glyph_pixels = title_band
                .chunks(3)
                .filter(|p| *p == [foreground.0, foreground.1, foreground.2])
                .count();
            assert!(glyph_pixels > 100, "{theme:?}: {glyph_pixels} title pixels");
        }
    }

    #[test]
    fn svg_has_the_title_the_axis_labels_and_decade_ticks() {
        let svg = svg(&line_chart(), Theme::Light).expect("renders");
        for text in ["A title", "x (s)", "y (ms)", "1", "10", "100", "1k"] {
            // plotters writes each text element's content on a line of its own.
            let element = format!(">\n{text}\n</text>");
            assert!(svg.contains(&element), "svg lacks {text}");
        }
    }

    #[test]
    fn numbers_are_short_and_exact_enough() {
        assert_eq!(format_number(0.0), "0");
        assert_eq!(format_number(2.5), "2.5");
        assert_eq!(format_number(19.999999999), "20");
        assert_eq!(format_number(0.001234), "0.001234");
        assert_eq!(format_number(1234.56), "1.235k");
        assert_eq!(format_number(999.0), "999");
        assert_eq!(format_number(12_500.0), "12.5k");
        assert_eq!(format_number(3_000_000.0), "3M");
        assert_eq!(format_number(-40.0), "-40");
    }

    #[test]
    fn steps_are_one_two_or_five_times_a_power_of_ten() {
        assert_eq!(nice_step(0.7), 1.0);
        assert_eq!(nice_step(13.0), 20.0);
        assert_eq!(nice_step(2100.0), 2500.0);
        assert_eq!(nice_step(0.04), 0.05);
    }

    #[test]
    fn long_labels_keep_their_end() {
        assert_eq!(shorten("abcdef", 4), "…def");
        assert_eq!(shorten("abc", 4), "abc");
    }
}
