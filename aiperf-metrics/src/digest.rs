//! Record digests: everything one profiling record contributes to a [`Summary`](crate::Summary),
//! as one line of `profile_export_digest.jsonl`.
//!
//! A shard of a benchmark run by several processes writes them beside its artifacts
//! ([`MetricsSink::export_digests_to`](crate::MetricsSink::export_digests_to)), so that
//! `aiperf merge` can feed the union of every shard's records into one sink
//! ([`MetricsSink::for_digests`](crate::MetricsSink::for_digests)) and get the summary
//! one process would have computed: percentiles from all values, never averaged. Times
//! are Unix nanoseconds, so the records of several processes share one time axis, and
//! numbers survive the text exactly (shortest round-trip formatting, exact parsing).

use std::path::Path;

use serde::de::Error as _;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use aiperf_core::{ErrorDetails, RequestRecord};

use crate::catalogue::{metric_def, MetricDef};
use crate::export::line_file::LineFile;
use crate::export::RecordWriter;
use crate::record_metrics::{JsonMetricValue, MetricValue, RecordMetrics, UsageTokens};
use crate::MetricsError;

/// The digest file's name in a run directory.
pub const DIGEST_FILE: &str = "profile_export_digest.jsonl";

/// What the summary takes from one profiling record (see the module documentation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordDigest {
    /// The record's `session_num` in `profile_export.jsonl`.
    pub session_num: u64,
    /// When its credit was issued, Unix ns.
    pub credit_issued_ns: u64,
    /// When it was sent, Unix ns.
    pub start_ns: u64,
    /// How late it was sent against its schedule, ns.
    pub lag_ns: u64,
    /// Its first content response, Unix ns (its start when it had none).
    pub first_content_ns: u64,
    /// Its last content response, Unix ns (its end when it had none).
    pub last_content_ns: u64,
    /// When it ended, Unix ns.
    pub end_ns: u64,
    /// Times it was sent again on a fresh connection.
    pub retries: u32,
    /// The server's last `usage`, if any.
    pub usage: Option<UsageTokens>,
    /// Why it failed, if it did.
    pub error: Option<ErrorDetails>,
    /// Its computed metrics, in display units.
    #[serde(with = "metrics_text")]
    pub metrics: RecordMetrics,
}

impl RecordDigest {
    /// The digest of `record`, whose metrics are `metrics`.
    pub fn of(record: &RequestRecord, metrics: &RecordMetrics) -> Self {
        let facts = RecordFacts::of(record);
        let wall = |perf: u64| record.clock.wall_of_perf(perf);
        Self {
            session_num: record.credit.id,
            credit_issued_ns: wall(record.credit_issued_ns),
            start_ns: wall(facts.start_ns),
            lag_ns: facts.lag_ns,
            first_content_ns: wall(facts.first_content_ns),
            last_content_ns: wall(facts.last_content_ns),
            end_ns: wall(record.end_ns),
            retries: facts.retries,
            usage: facts.usage,
            error: record.error.clone(),
            metrics: metrics.clone(),
        }
    }

    /// The facts the sink absorbs, on the digest's Unix-ns time axis.
    pub(crate) fn facts(&self) -> RecordFacts<'_> {
        RecordFacts {
            start_ns: self.start_ns,
            lag_ns: self.lag_ns,
            first_content_ns: self.first_content_ns,
            last_content_ns: self.last_content_ns,
            retries: self.retries,
            usage: self.usage,
            error: self.error.as_ref(),
        }
    }
}

/// What the sink takes from a record besides its metrics, on one time axis (a run's perf
/// ns, or Unix ns for digests).
#[derive(Debug, Clone, Copy)]
pub(crate) struct RecordFacts<'a> {
    pub(crate) start_ns: u64,
    pub(crate) lag_ns: u64,
    pub(crate) first_content_ns: u64,
    pub(crate) last_content_ns: u64,
    pub(crate) retries: u32,
    pub(crate) usage: Option<UsageTokens>,
    pub(crate) error: Option<&'a ErrorDetails>,
}

impl<'a> RecordFacts<'a> {
    /// The facts of `record`, in its run's perf ns.
    pub(crate) fn of(record: &'a RequestRecord) -> Self {
        Self::with_usage(record, record.last_usage().map(UsageTokens::of))
    }

    /// The facts of `record` whose last usage object's counts are `usage`.
    pub(crate) fn with_usage(record: &'a RequestRecord, usage: Option<UsageTokens>) -> Self {
        let mut content = record.content_responses().map(|r| r.perf_ns);
        let first = content.next();
        let last = content.last().or(first);
        Self {
            start_ns: record.start_ns,
            lag_ns: record.start_ns.saturating_sub(record.scheduled_ns),
            first_content_ns: first.unwrap_or(record.start_ns),
            last_content_ns: last.unwrap_or(record.end_ns),
            retries: record.retries,
            usage,
            error: record.error.as_ref(),
        }
    }
}

/// Writes one [`RecordDigest`] line per profiling record.
#[derive(Debug)]
pub(crate) struct DigestWriter {
    file: LineFile,
}

impl DigestWriter {
    /// Creates (or truncates) `path`.
    pub(crate) fn create(path: &Path) -> Result<Self, MetricsError> {
        Ok(Self {
            file: LineFile::create(path, crate::export::jsonl::FLUSH_EVERY)?,
        })
    }
}

impl RecordWriter for DigestWriter {
    fn write_record(
        &mut self,
        record: &RequestRecord,
        metrics: &RecordMetrics,
        _phase_index: u32,
    ) -> Result<(), MetricsError> {
        let line = serde_json::to_vec(&RecordDigest::of(record, metrics))?;
        self.file.append(&line)
    }

    fn finish(self: Box<Self>) -> Result<(), MetricsError> {
        self.file.finish()
    }
}

/// [`RecordMetrics`] as text: the flags, the token counts, and the values keyed by tag
/// (a list for list metrics; a non-finite number as `null`).
mod metrics_text {
    use super::*;
    use crate::record_metrics::TokenCounts;

    #[derive(Serialize, Deserialize)]
    struct Text<V> {
        valid: bool,
        usage_discrepancy: bool,
        osl_mismatch: Option<bool>,
        tokens: TokenCounts,
        values: V,
        /// In accuracy mode, the grade (`aiperf merge` tallies the merged run's accuracy).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        grade: Option<crate::accuracy::TaskGrade>,
    }

    struct Values<'a>(&'a [(&'static MetricDef, MetricValue)]);

    impl Serialize for Values<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let finite = |v: f64| v.is_finite().then_some(v);
            let mut map = s.serialize_map(Some(self.0.len()))?;
            for (def, value) in self.0 {
                match value {
                    MetricValue::Scalar(v) => map.serialize_entry(def.tag, &finite(*v))?,
                    MetricValue::List(vs) => {
                        let vs: Vec<Option<f64>> = vs.iter().map(|v| finite(*v)).collect();
                        map.serialize_entry(def.tag, &vs)?;
                    }
                }
            }
            map.end()
        }
    }

    /// The values in the order they were written (the computation order).
    struct ValuesRead(Vec<(&'static MetricDef, MetricValue)>);

    impl<'de> Deserialize<'de> for ValuesRead {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Visit;
            impl<'de> serde::de::Visitor<'de> for Visit {
                type Value = ValuesRead;

                fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                    f.write_str("a map of metric tags to values")
                }

                fn visit_map<A: serde::de::MapAccess<'de>>(
                    self,
                    mut map: A,
                ) -> Result<ValuesRead, A::Error> {
                    let mut values = Vec::with_capacity(map.size_hint().unwrap_or(16));
                    while let Some(tag) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                        let def = metric_def(&tag)
                            .ok_or_else(|| A::Error::custom(format!("unknown metric {tag:?}")))?;
                        values.push((def, map.next_value::<JsonMetricValue>()?.0));
                    }
                    Ok(ValuesRead(values))
                }
            }
            d.deserialize_map(Visit)
        }
    }

    pub(super) fn serialize<S: Serializer>(m: &RecordMetrics, s: S) -> Result<S::Ok, S::Error> {
        Text {
            valid: m.valid,
            usage_discrepancy: m.usage_discrepancy,
            osl_mismatch: m.osl_mismatch,
            tokens: m.tokens,
            values: Values(&m.values),
            grade: m.grade.clone(),
        }
        .serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<RecordMetrics, D::Error> {
        let text = Text::<ValuesRead>::deserialize(d)?;
        Ok(RecordMetrics {
            values: text.values.0,
            valid: text.valid,
            usage_discrepancy: text.usage_discrepancy,
            osl_mismatch: text.osl_mismatch,
            tokens: text.tokens,
            grade: text.grade,
        })
    }
}

#[cfg(test)]
mod tests {
    use std::io::BufRead;
    use std::sync::Arc;
    use std::time::Duration;

    use aiperf_core::{BenchmarkConfig, Clock, Phase, PhaseStats, RunInfo};

    use super::*;
    use crate::record_metrics::testkit::*;
    use crate::{MetricsContext, MetricsSink};

    const MS: u64 = 1_000_000;

    fn config() -> BenchmarkConfig {
        let mut c = BenchmarkConfig::default();
        c.endpoint.models = vec!["m".into()];
        c.endpoint.streaming = true;
        c.goodput = vec![("time_to_first_token".into(), 95.0)];
        c
    }

    fn sink() -> MetricsSink {
        MetricsSink::with_context(&config(), MetricsContext::streaming_chat(), Arc::new(Words))
            .unwrap()
            .with_time_slices(Duration::from_millis(250))
    }

    fn run(clock: Option<Clock>, start_ns: u64, end_ns: u64) -> RunInfo {
        RunInfo {
            clock,
            phases: vec![PhaseStats::window(Phase::Profiling, start_ns, end_ns)],
            was_cancelled: false,
        }
    }

    /// Streamed records with odd gaps (so that values are not round), usage on some, a
    /// failure and a retry, spread over four time slices.
    fn records() -> Vec<RequestRecord> {
        let mut records: Vec<RequestRecord> = (0..40u64)
            .map(|i| {
                let start = i * 23 * MS + 7_919;
                let ttft = (60 + (i * 37) % 70) * MS + i * 1_013;
                let gap = (3 + i % 5) * MS + 331;
                let mut responses: Vec<_> = (0..=(i % 6))
                    .map(|k| resp(start + ttft + k * gap, "w x ", "", None))
                    .collect();
                if i % 3 == 0 {
                    let usage = r#"{"prompt_tokens":4,"completion_tokens":9,"total_tokens":13}"#;
                    responses.push(resp(start + ttft + 9 * gap, "", "", Some(usage)));
                }
                let mut r = record(start, "a b c d", responses);
                r.credit.id = i;
                r.scheduled_ns = start.saturating_sub(i * 97_001);
                r.retries = u32::from(i == 5);
                r
            })
            .collect();
        records.push(failed(500 * MS, "a b", 503, "overloaded"));
        records
    }

    #[test]
    fn a_summary_of_digests_equals_the_summary_of_the_records_they_came_from() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(DIGEST_FILE);
        let mut direct = sink().export_digests_to(&path).unwrap();
        for record in records() {
            direct.process(&record).unwrap();
        }
        let clock = clock();
        let summary = direct.summarize(&run(Some(clock), 0, 1_000 * MS)).unwrap();

        let mut merged = MetricsSink::for_digests(&config(), MetricsContext::streaming_chat())
            .unwrap()
            .with_time_slices(Duration::from_millis(250));
        merged.phase_started(Phase::Profiling, clock.wall_of_perf(0));
        let file = std::io::BufReader::new(std::fs::File::open(&path).unwrap());
        let mut lines = 0;
        for line in file.lines() {
            let digest: RecordDigest = serde_json::from_str(&line.unwrap()).unwrap();
            merged.absorb_digest(&digest);
            lines += 1;
        }
        assert_eq!(lines, 41);
        let window = (clock.wall_of_perf(0), clock.wall_of_perf(1_000 * MS));
        let resummarized = merged.summarize(&run(None, window.0, window.1)).unwrap();

        let json = |mut s: crate::Summary| {
            s.benchmark_id = String::new();
            crate::export::json::to_json_string(&s).unwrap()
        };
        assert_eq!(summary.timeslices.len(), 4);
        assert!(summary.metric("good_request_count").unwrap().avg > 0.0);
        assert_eq!(summary.connection_retries, 1);
        assert_eq!(json(resummarized), json(summary));
    }

    #[test]
    fn a_digest_line_reads_back_to_the_same_digest() {
        let ctx = MetricsContext::streaming_chat();
        for record in records() {
            let tokens = crate::record_metrics::count_tokens(&record, Some(&Words), &ctx);
            let metrics = crate::record_metrics::compute_record_metrics(&record, &tokens, &ctx);
            let digest = RecordDigest::of(&record, &metrics);
            let line = serde_json::to_string(&digest).unwrap();
            assert_eq!(serde_json::from_str::<RecordDigest>(&line).unwrap(), digest);
        }
        let bad = r#"{"session_num":0,"credit_issued_ns":0,"start_ns":0,"lag_ns":0,
            "first_content_ns":0,"last_content_ns":0,"end_ns":0,"retries":0,"usage":null,
            "error":null,"metrics":{"valid":true,"usage_discrepancy":false,
            "osl_mismatch":null,"tokens":{"input":1,"output":1,"reasoning":null},
            "values":{"time_to_first_tokn":1.5}}}"#;
        let error = serde_json::from_str::<RecordDigest>(bad).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("unknown metric \"time_to_first_tokn\""),
            "{error}"
        );
    }
}
