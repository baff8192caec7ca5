//! `profile_export_aiperf_timeslices.json` and `.csv` (`--slice-duration`): the
//! profiling phase summarised slice by slice, in the Python AIPerf 0.13 layout.

use std::io::{self, Write};

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;

use super::json::{input_config, MetricJson};
use crate::summary::{MetricResult, Summary, TimeSlice};
use crate::MetricsError;

/// The statistics the CSV lists for a distribution, in order.
const CSV_STATS: [&str; 8] = ["avg", "min", "max", "p50", "p90", "p95", "p99", "std"];

struct SliceJson<'a>(&'a TimeSlice);

impl Serialize for SliceJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let slice = self.0;
        let mut map = serializer.serialize_map(None)?;
        map.serialize_entry("start_ns", &slice.start_ns)?;
        map.serialize_entry("end_ns", &slice.end_ns)?;
        for m in &slice.summary.metrics {
            map.serialize_entry(m.tag, &MetricJson::from(m))?;
        }
        map.end()
    }
}

#[derive(Serialize)]
struct TimeslicesJson<'a> {
    timeslices: Vec<SliceJson<'a>>,
    input_config: super::json::InputConfigEcho<'a>,
}

/// Writes the time slices of `summary` as JSON.
pub fn write_timeslices_json(summary: &Summary, out: &mut impl Write) -> Result<(), MetricsError> {
    let doc = TimeslicesJson {
        timeslices: summary.timeslices.iter().map(SliceJson).collect(),
        input_config: input_config(summary),
    };
    serde_json::to_writer_pretty(&mut *out, &doc)?;
    Ok(())
}

/// Writes the time slices as a tidy CSV: one row per slice, metric and statistic, values
/// with two decimals, metrics in header order as 0.13 lists them.
pub fn write_timeslices_csv(summary: &Summary, out: &mut impl Write) -> io::Result<()> {
    write!(out, "Timeslice,Start_NS,End_NS,Metric,Unit,Stat,Value\r\n")?;
    for (index, slice) in summary.timeslices.iter().enumerate() {
        let mut metrics: Vec<&MetricResult> = slice.summary.metrics.iter().collect();
        metrics.sort_by_key(|m| m.header);
        for m in metrics {
            for (stat, value) in stats(m) {
                write!(
                    out,
                    "{index},{},{},{},{},{stat},{value:.2}\r\n",
                    slice.start_ns, slice.end_ns, m.header, m.unit
                )?;
            }
        }
    }
    Ok(())
}

/// The statistics of `m` that have a value, in [`CSV_STATS`] order.
fn stats(m: &MetricResult) -> Vec<(&'static str, f64)> {
    if !m.has_distribution() {
        return vec![("avg", m.avg)];
    }
    let values = [Some(m.avg), m.min, m.max, m.p50, m.p90, m.p95, m.p99, m.std];
    CSV_STATS
        .iter()
        .zip(values)
        .filter_map(|(stat, v)| v.filter(|v| v.is_finite()).map(|v| (*stat, v)))
        .collect()
}
