//! `report.html`: one file a browser opens offline, with every chart inline as SVG, the
//! summary numbers as a table and the charts' data as JSON.

use std::fmt::Write;

use serde::Serialize;

use crate::chart::Chart;
use crate::theme::Theme;

/// A table of the report: a caption, column headers and rows of cells.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Table {
    /// Heading above the table.
    pub caption: String,
    /// Column headers.
    pub headers: Vec<String>,
    /// Rows; a missing number is an empty cell.
    pub rows: Vec<Vec<String>>,
}

/// A chart with its SVG text.
#[derive(Debug, Clone)]
pub struct RenderedChart {
    /// What the chart shows.
    pub chart: Chart,
    /// The SVG document.
    pub svg: String,
}

/// The report page.
pub fn html(title: &str, theme: Theme, tables: &[Table], charts: &[RenderedChart]) -> String {
    let (background, foreground, rule) = match theme {
        Theme::Light => ("#ffffff", "#222222", "#dddddd"),
        Theme::Dark => ("#181a1f", "#e1e1e1", "#3a3d45"),
    };
    let mut page = String::new();
    let _ = write!(
        page,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>{title}</title>\n<style>\n\
         body {{ background: {background}; color: {foreground}; font-family: sans-serif; margin: 2em; }}\n\
         table {{ border-collapse: collapse; margin-bottom: 2em; }}\n\
         th, td {{ border-bottom: 1px solid {rule}; padding: 0.3em 0.8em; text-align: right; }}\n\
         th:first-child, td:first-child {{ text-align: left; }}\n\
         figure {{ margin: 0 0 2.5em 0; }}\n\
         figure svg {{ max-width: 100%; height: auto; }}\n\
         nav a {{ color: inherit; margin-right: 1em; }}\n\
         </style>\n</head>\n<body>\n<h1>{title}</h1>\n",
        title = escape(title)
    );
    page.push_str("<nav>");
    for rendered in charts {
        let name = escape(&rendered.chart.name);
        let _ = write!(page, "<a href=\"#{name}\">{name}</a> ");
    }
    page.push_str("</nav>\n");
    for table in tables {
        write_table(&mut page, table);
    }
    for rendered in charts {
        let _ = write!(
            page,
            "<figure id=\"{}\">\n{}\n<figcaption>{}.svg / .png</figcaption>\n</figure>\n",
            escape(&rendered.chart.name),
            strip_xml_declaration(&rendered.svg),
            escape(&rendered.chart.name),
        );
    }
    let data = serde_json::json!({
        "tables": tables,
        "charts": charts.iter().map(|c| &c.chart).collect::<Vec<_>>(),
    });
    // `</` would end the script element early; `<\/` means the same in JSON.
    let json = data.to_string().replace("</", "<\\/");
    let _ = write!(
        page,
        "<script type=\"application/json\" id=\"aiperf-plot-data\">{json}</script>\n</body>\n</html>\n"
    );
    page
}

/// A number cell as the CSV export writes numbers: whole numbers as they are, others with
/// two decimals; empty when missing.
pub fn cell(value: Option<f64>) -> String {
    match value {
        Some(v) if v.fract() == 0.0 && v.abs() < 1e15 => format!("{v:.0}"),
        Some(v) => format!("{v:.2}"),
        None => String::new(),
    }
}

fn write_table(page: &mut String, table: &Table) {
    let _ = write!(page, "<h2>{}</h2>\n<table>\n<tr>", escape(&table.caption));
    for header in &table.headers {
        let _ = write!(page, "<th>{}</th>", escape(header));
    }
    page.push_str("</tr>\n");
    for row in &table.rows {
        page.push_str("<tr>");
        for value in row {
            let _ = write!(page, "<td>{}</td>", escape(value));
        }
        page.push_str("</tr>\n");
    }
    page.push_str("</table>\n");
}

fn strip_xml_declaration(svg: &str) -> &str {
    match svg.strip_prefix("<?xml") {
        Some(rest) => rest
            .split_once("?>")
            .map_or(svg, |(_, body)| body.trim_start()),
        None => svg,
    }
}

pub(crate) fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chart::{Axis, Body};

    #[test]
    fn the_page_inlines_svg_tables_and_data_and_escapes_text() {
        let chart = Chart {
            name: "c".into(),
            title: "t".into(),
            x: Axis::linear("x (ms)"),
            y: Axis::linear("y"),
            body: Body::Histogram { bins: Vec::new() },
        };
        let table = Table {
            caption: "Runs <1>".into(),
            headers: vec!["run".into(), "TTFT avg (ms)".into()],
            rows: vec![vec!["a/</script>".into(), cell(Some(12.3456))]],
        };
        let page = html(
            "Run",
            Theme::Dark,
            &[table],
            &[RenderedChart {
                chart,
                svg: "<?xml version=\"1.0\"?>\n<svg id=\"s\"></svg>".into(),
            }],
        );
        assert!(page.contains("<figure id=\"c\">\n<svg id=\"s\"></svg>"));
        assert!(page.contains("<h2>Runs &lt;1&gt;</h2>"));
        assert!(page.contains("<td>a/&lt;/script&gt;</td><td>12.35</td>"));
        assert_eq!(
            (cell(Some(40.0)), cell(Some(10318.9505)), cell(None)),
            ("40".into(), "10318.95".into(), String::new())
        );
        assert!(page.contains("\"label\":\"x (ms)\""));
        assert!(page.contains("a/<\\/script>"));
        assert!(page.contains("background: #181a1f"));
        assert_eq!(page.matches("</script>").count(), 1);
    }
}
