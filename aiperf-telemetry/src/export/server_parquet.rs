//! `server_metrics_export.parquet` (docs/telemetry.md#server-metrics-exports): every scrape
//! of every server endpoint as a long table, one row per sample per series, for DuckDB,
//! polars or pandas.
//!
//! Columns, in order: `endpoint_url`, `metric_name`, `metric_type` (the `# TYPE` keyword)
//! strings, `timestamp_ns` u64 (wall clock, when the scrape's response arrived), `value`,
//! `sum`, `count`, `bucket_le`, `bucket_count` nullable Float64, then one nullable string
//! column per label name seen in any series, sorted by name (`label_<name>` when a label
//! is named like a fixed column).
//!
//! - counters: `value` is the increase since the series' previous scrape (null on its
//!   first scrape; 0 across a counter reset, as the statistics treat it);
//! - gauges, untyped, info and state sets: `value` is the sample;
//! - histograms: one row per bucket, with the cumulative `bucket_count` of bucket
//!   `bucket_le` (+Inf for the last) and the series' `sum` and `count` at that scrape.
//!
//! As in the other files, summaries and NaN/±Inf samples are left out. Every scrape is
//! written (baseline and final included, as in the JSONL); `timestamp_ns` places each
//! sample against the profiling window.

use std::collections::{BTreeSet, HashMap};
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::ArrowWriter;
use parquet::basic::Compression;
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;

use super::ExportError;
use crate::collector::TelemetryReport;
use crate::prometheus::{MetricFamily, MetricType};

/// The columns every file has, before the label columns.
const FIXED: [&str; 9] = [
    "endpoint_url",
    "metric_name",
    "metric_type",
    "timestamp_ns",
    "value",
    "sum",
    "count",
    "bucket_le",
    "bucket_count",
];

/// Label names of every series of every scrape, sorted.
fn label_names(report: &TelemetryReport) -> Vec<String> {
    let mut names = BTreeSet::new();
    for endpoint in &report.server {
        for scrape in &endpoint.scrapes.scrapes {
            for family in &scrape.families {
                for sample in &family.samples {
                    for (name, _) in &sample.labels {
                        if name != "le" && name != "quantile" {
                            names.insert(name.as_str());
                        }
                    }
                }
            }
        }
    }
    names.into_iter().map(str::to_owned).collect()
}

/// The schema for a report whose series carry `labels`.
fn schema(labels: &[String]) -> SchemaRef {
    let string = |name: &str| Field::new(name, DataType::Utf8, false);
    let float = |name: &str| Field::new(name, DataType::Float64, true);
    let mut fields = vec![
        string("endpoint_url"),
        string("metric_name"),
        string("metric_type"),
        Field::new("timestamp_ns", DataType::UInt64, false),
        float("value"),
        float("sum"),
        float("count"),
        float("bucket_le"),
        float("bucket_count"),
    ];
    fields.extend(labels.iter().map(|name| {
        let column = if FIXED.contains(&name.as_str()) {
            format!("label_{name}")
        } else {
            name.clone()
        };
        Field::new(column, DataType::Utf8, true)
    }));
    Arc::new(Schema::new(fields))
}

/// One row's numbers; absent ones are null.
#[derive(Default)]
struct Numbers {
    value: Option<f64>,
    sum: Option<f64>,
    count: Option<f64>,
    bucket_le: Option<f64>,
    bucket_count: Option<f64>,
}

/// The rows of one scrape.
struct Rows<'a> {
    label_index: &'a HashMap<&'a str, usize>,
    endpoint_url: StringBuilder,
    metric_name: StringBuilder,
    metric_type: StringBuilder,
    timestamp_ns: UInt64Builder,
    value: Float64Builder,
    sum: Float64Builder,
    count: Float64Builder,
    bucket_le: Float64Builder,
    bucket_count: Float64Builder,
    labels: Vec<StringBuilder>,
}

impl<'a> Rows<'a> {
    fn new(label_index: &'a HashMap<&'a str, usize>) -> Self {
        Self {
            label_index,
            endpoint_url: StringBuilder::new(),
            metric_name: StringBuilder::new(),
            metric_type: StringBuilder::new(),
            timestamp_ns: UInt64Builder::new(),
            value: Float64Builder::new(),
            sum: Float64Builder::new(),
            count: Float64Builder::new(),
            bucket_le: Float64Builder::new(),
            bucket_count: Float64Builder::new(),
            labels: (0..label_index.len())
                .map(|_| StringBuilder::new())
                .collect(),
        }
    }

    fn push(
        &mut self,
        (url, timestamp_ns): (&str, u64),
        family: &MetricFamily,
        labels: &[(String, String)],
        numbers: Numbers,
    ) {
        self.endpoint_url.append_value(url);
        self.metric_name
            .append_value(super::server::display_name(&family.name, family.kind));
        self.metric_type.append_value(family.kind.as_str());
        self.timestamp_ns.append_value(timestamp_ns);
        self.value.append_option(numbers.value);
        self.sum.append_option(numbers.sum);
        self.count.append_option(numbers.count);
        self.bucket_le.append_option(numbers.bucket_le);
        self.bucket_count.append_option(numbers.bucket_count);
        let mut row: Vec<Option<&str>> = vec![None; self.labels.len()];
        for (name, value) in labels {
            if let Some(&i) = self.label_index.get(name.as_str()) {
                row[i] = Some(value);
            }
        }
        for (builder, value) in self.labels.iter_mut().zip(row) {
            builder.append_option(value);
        }
    }

    fn finish(mut self, schema: &SchemaRef) -> Result<RecordBatch, ParquetError> {
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.endpoint_url.finish()),
            Arc::new(self.metric_name.finish()),
            Arc::new(self.metric_type.finish()),
            Arc::new(self.timestamp_ns.finish()),
            Arc::new(self.value.finish()),
            Arc::new(self.sum.finish()),
            Arc::new(self.count.finish()),
            Arc::new(self.bucket_le.finish()),
            Arc::new(self.bucket_count.finish()),
        ];
        columns.extend(
            self.labels
                .iter_mut()
                .map(|b| Arc::new(b.finish()) as ArrayRef),
        );
        Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
    }
}

/// The last value of each counter series of one endpoint, by family name and labels.
type Previous = HashMap<(String, Vec<(String, String)>), f64>;

/// Adds the rows of one family at one scrape.
fn family_rows(
    rows: &mut Rows<'_>,
    at: (&str, u64),
    family: &MetricFamily,
    previous: &mut Previous,
) {
    let finite = |v: Option<f64>| v.filter(|v| v.is_finite());
    if family.kind.is_histogram() {
        for h in family.histograms() {
            for &(le, cumulative) in &h.buckets {
                if !cumulative.is_finite() || le.is_nan() {
                    continue;
                }
                let numbers = Numbers {
                    sum: finite(h.sum),
                    count: finite(h.count),
                    bucket_le: Some(le),
                    bucket_count: Some(cumulative),
                    ..Numbers::default()
                };
                rows.push(at, family, &h.labels, numbers);
            }
        }
        return;
    }
    if family.kind == MetricType::Summary {
        return;
    }
    for sample in &family.samples {
        let primary = matches!(
            family.suffix_of(&sample.name),
            Some("" | "_total" | "_info")
        );
        if !primary || !sample.value.is_finite() {
            continue;
        }
        let value = if family.kind == MetricType::Counter {
            let key = (family.name.clone(), sample.labels.clone());
            previous
                .insert(key, sample.value)
                .map(|before| (sample.value - before).max(0.0))
        } else {
            Some(sample.value)
        };
        let numbers = Numbers {
            value,
            ..Numbers::default()
        };
        rows.push(at, family, &sample.labels, numbers);
    }
}

/// Writes `server_metrics_export.parquet` to `path`. Rows are built a scrape at a time
/// and handed to the Arrow writer, which keeps them encoded until a row group is full.
pub fn write_parquet(report: &TelemetryReport, path: &Path) -> Result<(), ExportError> {
    let err = |source| ExportError::Parquet {
        path: path.to_path_buf(),
        source,
    };
    let labels = label_names(report);
    let label_index: HashMap<&str, usize> = labels
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let schema = schema(&labels);
    let file = File::create(path).map_err(|source| ExportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .build();
    let mut writer = ArrowWriter::try_new(file, Arc::clone(&schema), Some(props)).map_err(err)?;
    for endpoint in &report.server {
        let mut previous = Previous::new();
        let url = endpoint.scrapes.name.as_str();
        for scrape in &endpoint.scrapes.scrapes {
            let mut rows = Rows::new(&label_index);
            let at = (url, report.clock.wall_ns(scrape.at));
            for family in &scrape.families {
                family_rows(&mut rows, at, family, &mut previous);
            }
            let batch = rows.finish(&schema).map_err(err)?;
            writer.write(&batch).map_err(err)?;
        }
    }
    writer.close().map(drop).map_err(err)
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, UInt64Type};
    use arrow_array::Array;
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    use super::*;
    use crate::prometheus::parse;
    use crate::scraper::{EndpointScrapes, Scrape};
    use crate::wall::WallClock;

    /// Two scrapes 1 s apart; the counter is reset in between (9 → 4).
    fn report() -> TelemetryReport {
        let t = Instant::now();
        let scrape = |ms, requests: f64, fast: f64| Scrape {
            sent_at: t + Duration::from_millis(ms),
            at: t + Duration::from_millis(ms),
            families: parse(&format!(
                "# TYPE req_total counter\nreq_total{{value=\"v\"}} {requests}\n\
                 # TYPE running gauge\nrunning{{model=\"m\"}} 2\nrunning{{model=\"n\"}} NaN\n\
                 # TYPE lat histogram\nlat_bucket{{le=\"0.1\"}} {fast}\n\
                 lat_bucket{{le=\"+Inf\"}} {fast}\nlat_sum 0.5\nlat_count {fast}\n\
                 # TYPE q summary\nq{{quantile=\"0.5\"}} 1\nq_sum 1\nq_count 1\n"
            ))
            .unwrap(),
        };
        let endpoint = EndpointScrapes {
            name: "http://h:8000/metrics".into(),
            scrapes: vec![scrape(0, 9.0, 1.0), scrape(1000, 4.0, 3.0)],
            ..EndpointScrapes::default()
        };
        let clock = WallClock::from_pair(t, 5_000_000_000);
        TelemetryReport::new(
            clock,
            (0, u64::MAX),
            Duration::ZERO,
            Vec::new(),
            vec![endpoint],
        )
    }

    #[test]
    fn one_row_per_sample_with_counter_deltas_and_bucket_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("server_metrics_export.parquet");
        write_parquet(&report(), &path).unwrap();
        let mut batches: Vec<RecordBatch> =
            ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap())
                .unwrap()
                .build()
                .unwrap()
                .map(|b| b.unwrap())
                .collect();
        assert_eq!(batches.len(), 1);
        let batch = batches.remove(0);
        let names: Vec<String> = batch
            .schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect();
        let mut expected: Vec<String> =
            FIXED.iter().map(std::string::ToString::to_string).collect();
        // a label named like a fixed column gets a prefix
        expected.extend(["model".to_string(), "label_value".to_string()]);
        assert_eq!(names, expected);

        // per scrape: counter, one finite gauge (NaN dropped), two buckets; no summary
        assert_eq!(batch.num_rows(), 8);
        let col = |name: &str| batch.column_by_name(name).unwrap().clone();
        let name = col("metric_name");
        let name = name.as_string::<i32>();
        let value = col("value");
        let value = value.as_primitive::<Float64Type>();
        let ts = col("timestamp_ns");
        let ts = ts.as_primitive::<UInt64Type>();
        let le = col("bucket_le");
        let le = le.as_primitive::<Float64Type>();
        let bucket = col("bucket_count");
        let bucket = bucket.as_primitive::<Float64Type>();
        let names: Vec<&str> = (0..8).map(|i| name.value(i)).collect();
        assert_eq!(
            names,
            [
                "req", // counters lose `_total`, as in the other server exports
                "running", "lat", "lat",
                "req", // counters lose `_total`, as in the other server exports
                "running", "lat", "lat"
            ]
        );
        assert_eq!(ts.value(0), 5_000_000_000);
        assert_eq!(ts.value(4), 6_000_000_000);
        // first scrape: no delta; then a reset counts as 0
        assert!(value.is_null(0));
        assert_eq!(value.value(4), 0.0);
        assert_eq!(col("label_value").as_string::<i32>().value(0), "v");
        assert_eq!(value.value(1), 2.0);
        assert_eq!(col("model").as_string::<i32>().value(1), "m");
        assert!(value.is_null(2));
        assert_eq!((le.value(6), bucket.value(6)), (0.1, 3.0));
        assert_eq!((le.value(7), bucket.value(7)), (f64::INFINITY, 3.0));
        assert_eq!(col("count").as_primitive::<Float64Type>().value(7), 3.0);
        assert_eq!(col("sum").as_primitive::<Float64Type>().value(7), 0.5);
        assert_eq!(col("metric_type").as_string::<i32>().value(6), "histogram");
    }
}
