//! Aggregation: the [`MetricsSink`] that turns finished records into a [`Summary`] and
//! hands each one to its [`RecordWriter`]s.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use aiperf_core::sink::SinkError;
use aiperf_core::{
    BenchmarkConfig, CancellationToken, Clock, EndpointInfo, ErrorDetails, Phase, PhaseStats,
    RecordSink, RequestRecord, RunContext, RunInfo, TokenCounter,
};

use crate::accuracy::{AccuracyJsonlWriter, AccuracyTally, AnswerSheet, TaskGrade};
use crate::catalogue::{
    metric_def, MetricDef, MetricFlags, MetricId, MetricKind, MetricsContext, CATALOGUE,
};
use crate::digest::{DigestWriter, RecordDigest, RecordFacts};
use crate::export::jsonl::JsonlWriter;
use crate::export::outputs::OutputsJsonWriter;
#[cfg(feature = "parquet")]
use crate::export::parquet::ParquetWriter;
use crate::export::raw::RawJsonlWriter;
use crate::export::RecordWriter;
use crate::live::LiveStats;
use crate::memo::MemoizedCounter;
use crate::record_metrics::{
    compute_record_metrics_with_usage, count_tokens, MetricValue, RecordMetrics, UsageTokens,
    CACHE_REPORTING_HINT,
};
use crate::stats::Distribution;
use crate::summary::{
    ErrorCount, MetricResult, ScheduleLag, Summary, TimeSlice, LATE_THRESHOLD_NS,
};
use crate::timeline::Timeline;
use crate::MetricsError;

/// Checks `--goodput` SLOs: every tag must be a known per-request metric that applies.
///
/// Errors: [`MetricsError::UnknownGoodputTags`] ("Unknown metric tag(s) in --goodput: …")
/// and [`MetricsError::GoodputNotApplicable`].
pub fn validate_goodput(slos: &[(String, f64)], ctx: &MetricsContext) -> Result<(), MetricsError> {
    let slo_able = |d: &&MetricDef| {
        d.kind == MetricKind::Record
            && !d.flags.contains(MetricFlags::LIST)
            && !d.flags.contains(MetricFlags::ERROR_ONLY)
    };
    let unknown: Vec<String> = slos
        .iter()
        .filter(|(tag, _)| metric_def(tag).as_ref().is_none_or(|x| !slo_able(x)))
        .map(|(tag, _)| tag.clone())
        .collect();
    if !unknown.is_empty() {
        return Err(MetricsError::UnknownGoodputTags(unknown.join(", ")));
    }
    let not_applicable: Vec<String> = slos
        .iter()
        .filter_map(|(tag, _)| {
            let def = metric_def(tag)?;
            ctx.why_not(def).map(|why| format!("{tag} ({why})"))
        })
        .collect();
    if !not_applicable.is_empty() {
        return Err(MetricsError::GoodputNotApplicable(
            not_applicable.join(", "),
        ));
    }
    if let Some((tag, v)) = slos.iter().find(|(_, v)| !v.is_finite()) {
        return Err(MetricsError::InvalidGoodputThreshold(format!("{tag}:{v}")));
    }
    Ok(())
}

#[derive(Debug, Clone, Copy)]
struct Slo {
    id: MetricId,
    threshold: f64,
    larger_is_better: bool,
}

/// Receives records, computes their metrics, hands them to its [`RecordWriter`]s
/// (`profile_export.jsonl`, …) as they arrive and produces a [`Summary`] at the end.
///
/// Warmup records are left out of the summary; only writers that ask for them
/// ([`RecordWriter::write_warmup_record`]) see them. Token counting happens here, on the
/// engine's processing task, never on the request hot path.
pub struct MetricsSink {
    ctx: MetricsContext,
    config: BenchmarkConfig,
    counter: Arc<dyn TokenCounter>,
    slos: Vec<Slo>,
    dists: Vec<Option<Distribution>>,
    totals: Totals,
    errors: HashMap<ErrorGroup, (u64, usize, ErrorDetails)>,
    lag: Distribution,
    late: u64,
    retries: u64,
    /// [`CACHE_REPORTING_HINT`] was logged (once per run, at the first record that
    /// calls for it).
    hinted_cache_reporting: bool,
    timeline: Timeline,
    /// Where the profiling phase started (perf ns), once it did: the window start the
    /// timeline's incremental sweep needs.
    profiling_start_ns: Option<u64>,
    /// The per-record outputs, fed in the order they were added.
    writers: Vec<Box<dyn RecordWriter>>,
    /// The `--export-http-trace` switch of the writer of
    /// [`MetricsSink::export_records_to`], if any.
    records_http_trace: Option<Arc<AtomicBool>>,
    /// The file of [`MetricsSink::export_records_to`], if any.
    records_path: Option<PathBuf>,
    /// [`MetricsSink::export_parquet_to`] with the records also in JSONL: the Parquet
    /// file, written from the JSONL file once the run is over.
    #[cfg(feature = "parquet")]
    parquet_after_run: Option<ParquetWriter>,
    clock: Option<Clock>,
    cli_command: Option<String>,
    phase_index: u32,
    slices: Option<Box<Slices>>,
    live: Option<Arc<LiveStats>>,
    /// The first error writing a per-record export; nothing is written after it.
    export_failure: Option<String>,
    /// Cancelled at the first export failure, to stop sending.
    stop_on_export_failure: Option<CancellationToken>,
    /// Cancelled when the failed share passes `load.failed_request_threshold`.
    stop_on_failures: Option<CancellationToken>,
    /// Why it was, once it was.
    failure_threshold_exceeded: Option<String>,
    /// Accuracy mode: the answers replies are graded against, and the grades so far.
    grading: Option<Box<Grading>>,
}

/// Accuracy mode's state in a sink ([`MetricsSink::grade_answers`]).
#[derive(Debug)]
struct Grading {
    sheet: AnswerSheet,
    tally: AccuracyTally,
    /// `accuracy_export.jsonl`, when asked for.
    writer: Option<AccuracyJsonlWriter>,
}

/// `--slice-duration`: a sink per slice of the profiling phase, by slice index.
struct Slices {
    width_ns: u64,
    /// Perf ns of the profiling phase start (slice 0 starts there).
    origin_ns: Option<u64>,
    /// The slices that may still get records.
    sinks: std::collections::BTreeMap<u64, MetricsSink>,
    /// The slices summarised as the run went ([`Slices::summarize_closed`]), in order.
    closed: Vec<TimeSlice>,
}

impl Slices {
    /// Summarises now the slices no record can still reach, and lets their records go:
    /// a slice is closed once it ends at or before `watermark_ns` (every record to come
    /// starts at or after it) and a later slice has records (so the phase ran past the
    /// slice's end, which then is its full width, as [`Slices::summarize`] would cut it).
    /// Without this, a sliced run kept every record's values to the end.
    fn summarize_closed(&mut self, watermark_ns: u64, clock: Clock) -> Result<(), MetricsError> {
        let Some(origin) = self.origin_ns else {
            return Ok(());
        };
        let Some(&latest) = self.sinks.keys().next_back() else {
            return Ok(());
        };
        while let Some(entry) = self.sinks.first_entry() {
            let index = *entry.key();
            let end = slice_start(origin, index + 1, self.width_ns);
            if index >= latest || end > watermark_ns {
                break;
            }
            let sink = entry.remove();
            self.closed.push(summarize_slice(
                sink,
                clock,
                slice_start(origin, index, self.width_ns),
                end,
            )?);
        }
        Ok(())
    }

    /// Each non-empty slice summarised over its own window; throughputs divide by the
    /// slice's length (the last slice ends with the phase).
    fn summarize(self, clock: Clock, phase_end: u64) -> Result<Vec<TimeSlice>, MetricsError> {
        let origin = self.origin_ns.unwrap_or(0);
        let mut out = self.closed;
        out.reserve(self.sinks.len());
        for (index, sink) in self.sinks {
            let start = slice_start(origin, index, self.width_ns);
            let end = start
                .saturating_add(self.width_ns)
                .min(phase_end)
                .max(start + 1);
            out.push(summarize_slice(sink, clock, start, end)?);
        }
        Ok(out)
    }
}

/// Where slice `index` starts, in perf ns.
fn slice_start(origin_ns: u64, index: u64, width_ns: u64) -> u64 {
    origin_ns.saturating_add(index.saturating_mul(width_ns))
}

/// One slice's records summarised over `start..end` (perf ns).
fn summarize_slice(
    sink: MetricsSink,
    clock: Clock,
    start: u64,
    end: u64,
) -> Result<TimeSlice, MetricsError> {
    let run = RunInfo {
        clock: Some(clock),
        phases: vec![PhaseStats::window(Phase::Profiling, start, end)],
        was_cancelled: false,
    };
    Ok(TimeSlice {
        start_ns: clock.wall_of_perf(start),
        end_ns: clock.wall_of_perf(end),
        summary: sink.summarize(&run)?,
    })
}

impl std::fmt::Debug for MetricsSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetricsSink")
            .field("ctx", &self.ctx)
            .field("valid", &self.totals.valid)
            .field("errors", &self.totals.errors)
            .finish_non_exhaustive()
    }
}

/// What makes two errors one entry of the error summary: their type and code. Messages
/// are not compared: they often embed a snippet of the response or a request id, and
/// 2,000 malformed bodies would otherwise be 2,000 entries. The first message seen is
/// kept as the entry's sample.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ErrorGroup {
    code: Option<u16>,
    kind: Option<String>,
}

impl ErrorGroup {
    fn of(error: &ErrorDetails) -> Self {
        Self {
            code: error.code,
            kind: error.kind.clone(),
        }
    }
}

#[derive(Debug, Default)]
struct Totals {
    valid: u64,
    errors: u64,
    good: u64,
    isl: Option<u64>,
    output: Option<u64>,
    reasoning: Option<u64>,
    osl: Option<u64>,
    error_isl: Option<u64>,
    usage: UsageTokens,
    usage_discrepancies: Option<u64>,
    osl_mismatches: Option<u64>,
    min_start: Option<u64>,
    max_end: Option<u64>,
}

fn add(slot: &mut Option<u64>, v: Option<u64>) {
    if let Some(v) = v {
        *slot = Some(slot.unwrap_or(0) + v);
    }
}

impl MetricsSink {
    /// A sink for a run of `config` against the endpoint described by `info`, counting
    /// tokens with `counter`. Fails when `config.goodput` names an unknown or
    /// inapplicable metric. Under the engine, the sink takes over the configuration that
    /// actually runs when the run starts ([`RecordSink::start`]), so the summary always
    /// describes what ran.
    pub fn new(
        config: &BenchmarkConfig,
        info: &EndpointInfo,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<Self, MetricsError> {
        Self::with_context(config, MetricsContext::new(config, info), counter)
    }

    /// Like [`MetricsSink::new`] with an explicit applicability context (for feeding
    /// records by hand; under the engine, [`RecordSink::start`] replaces it with what runs).
    pub fn with_context(
        config: &BenchmarkConfig,
        ctx: MetricsContext,
        counter: Arc<dyn TokenCounter>,
    ) -> Result<Self, MetricsError> {
        let (ctx, slos) = goodput_of(config, ctx)?;
        Ok(Self::empty(
            ctx,
            config.clone(),
            Arc::new(MemoizedCounter::new(counter)),
            slos,
        ))
    }

    /// Takes over what the engine resolved for the run (see [`RecordSink::start`]): the
    /// configuration that runs becomes the summary's, and metric applicability follows
    /// what is actually sent.
    fn adopt(&mut self, run: &RunContext<'_>) -> Result<(), MetricsError> {
        let config: &BenchmarkConfig = run.config;
        let (ctx, slos) = goodput_of(config, MetricsContext::new(config, run.endpoint))?;
        self.ctx = ctx;
        self.slos = slos;
        self.phase_index = u32::from(config.load.warmup.is_enabled());
        self.config = config.clone();
        Ok(())
    }

    /// A sink with nothing absorbed yet and no files.
    fn empty(
        ctx: MetricsContext,
        config: BenchmarkConfig,
        counter: Arc<dyn TokenCounter>,
        slos: Vec<Slo>,
    ) -> Self {
        Self {
            phase_index: u32::from(config.load.warmup.is_enabled()),
            ctx,
            config,
            counter,
            slos,
            dists: vec![None; CATALOGUE.len()],
            totals: Totals::default(),
            errors: HashMap::new(),
            lag: Distribution::new(),
            late: 0,
            retries: 0,
            hinted_cache_reporting: false,
            timeline: Timeline::new(),
            profiling_start_ns: None,
            writers: Vec::new(),
            records_http_trace: None,
            records_path: None,
            #[cfg(feature = "parquet")]
            parquet_after_run: None,
            clock: None,
            cli_command: None,
            slices: None,
            live: None,
            export_failure: None,
            stop_on_export_failure: None,
            stop_on_failures: None,
            failure_threshold_exceeded: None,
            grading: None,
        }
    }

    /// Cancels `stop` once more than `load.failed_request_threshold` of the profiling
    /// records failed, counted from the `max(concurrency, 10)`-th record on (the Python
    /// AIPerf 0.13's rule); [`Summary::failure_threshold_exceeded`] then says so. No
    /// effect without a threshold.
    #[must_use]
    pub fn stop_sending_on_failure_threshold(mut self, stop: CancellationToken) -> Self {
        self.stop_on_failures = Some(stop);
        self
    }

    fn check_failure_threshold(&mut self) {
        let (Some(threshold), Some(stop)) = (
            self.config.load.failed_request_threshold,
            &self.stop_on_failures,
        ) else {
            return;
        };
        let failed = self.totals.errors;
        let total = self.totals.valid + failed;
        let floor = self.config.load.concurrency.unwrap_or(1).max(10) as u64;
        if self.failure_threshold_exceeded.is_some()
            || total < floor
            || failed as f64 / total as f64 <= threshold
        {
            return;
        }
        let reason = format!(
            "{failed} of {total} requests failed ({:.0} %), more than the threshold of {:.0} %",
            failed as f64 * 100.0 / total as f64,
            threshold * 100.0
        );
        tracing::error!("{reason}: sending stopped");
        self.failure_threshold_exceeded = Some(reason);
        stop.cancel();
    }

    /// Cancels `stop` when writing a per-record export fails (a full disk), so the run
    /// stops sending requests whose records could not be kept. Without it the run goes
    /// on and only the summary counts the rest. Either way every complete line written
    /// so far stays, and the summary reports the failure ([`Summary::export_failure`]).
    #[must_use]
    pub fn stop_sending_on_export_failure(mut self, stop: CancellationToken) -> Self {
        self.stop_on_export_failure = Some(stop);
        self
    }

    /// Also summarises each `width` of the profiling phase on its own (`--slice-duration`):
    /// [`Summary::timeslices`].
    #[must_use]
    pub fn with_time_slices(mut self, width: std::time::Duration) -> Self {
        let width_ns = u64::try_from(width.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.slices = Some(Box::new(Slices {
            width_ns,
            origin_ns: None,
            sinks: std::collections::BTreeMap::new(),
            closed: Vec::new(),
        }));
        self
    }

    /// Records where the profiling phase starts (slice 0 of the time slices).
    pub fn phase_started(&mut self, phase: Phase, start_ns: u64) {
        if phase == Phase::Profiling {
            self.profiling_start_ns = Some(start_ns);
            if let Some(slices) = &mut self.slices {
                slices.origin_ns = Some(start_ns);
            }
        }
    }

    /// Every profiling record not absorbed yet starts at or after `watermark_ns`: the
    /// time-weighted metrics sweep what lies before it now and let those requests go,
    /// so their memory stays bounded by the requests in flight instead of growing with
    /// the run ([`Timeline::advance`]), and time slices that no record can reach any
    /// more are summarised and let their records go.
    pub fn watermark(&mut self, watermark_ns: u64) -> Result<(), MetricsError> {
        if let Some(start) = self.profiling_start_ns {
            self.timeline.advance(watermark_ns, start);
        }
        if let (Some(slices), Some(clock)) = (&mut self.slices, self.clock) {
            slices.summarize_closed(watermark_ns, clock)?;
        }
        Ok(())
    }

    /// An empty sink for one time slice: the same configuration, no files.
    fn slice_sink(&self) -> MetricsSink {
        Self::empty(
            self.ctx,
            self.config.clone(),
            Arc::clone(&self.counter),
            self.slos.clone(),
        )
    }

    /// Streams one JSON line per profiling record to `path` (created or truncated) as
    /// records arrive, flushed at least every 100 records and at the end.
    pub fn export_records_to(mut self, path: impl AsRef<Path>) -> Result<Self, MetricsError> {
        let writer = JsonlWriter::create(path.as_ref())?;
        self.records_http_trace = Some(writer.http_trace_switch());
        self.records_path = Some(path.as_ref().to_path_buf());
        Ok(self.with_writer(Box::new(writer)))
    }

    /// Also writes each profiling record as a row of `path` (`profile_export.parquet`,
    /// created or truncated now), in row groups of at most
    /// [`ROW_GROUP_ROWS`](crate::export::parquet::ROW_GROUP_ROWS) records. Needs the
    /// `parquet` feature (on by default).
    ///
    /// After [`MetricsSink::export_records_to`], the rows are written in
    /// [`MetricsSink::summarize`] from the JSONL file, with the same values. Encoding
    /// Parquet as records arrived cost a tenth of the client's CPU per request on a
    /// saturated client; reading the lines back costs about 6 s per million records once
    /// the run is over (bench/README.md, 2026-11-27). Without the JSONL export, each
    /// record's row is written as it arrives.
    #[cfg(feature = "parquet")]
    pub fn export_parquet_to(mut self, path: impl AsRef<Path>) -> Result<Self, MetricsError> {
        let writer = ParquetWriter::create(path.as_ref())?;
        if self.records_path.is_some() {
            self.parquet_after_run = Some(writer);
            return Ok(self);
        }
        Ok(self.with_writer(Box::new(writer)))
    }

    /// Streams one raw JSON line per record of every phase, warmup included, to `path`
    /// (`profile_export_raw.jsonl`, created or truncated). The records carry their wire
    /// data only when the engine keeps raw exchanges
    /// ([`BenchmarkBuilder::keep_raw_exchanges`](aiperf_core::BenchmarkBuilder::keep_raw_exchanges)).
    pub fn export_raw_records_to(self, path: impl AsRef<Path>) -> Result<Self, MetricsError> {
        let writer = RawJsonlWriter::create(path.as_ref())?;
        Ok(self.with_writer(Box::new(writer)))
    }

    /// Writes the text generated for each profiling record to `path` (`outputs.json`,
    /// created or truncated when the sink is summarised; `--export-outputs-json`).
    #[must_use]
    pub fn export_outputs_to(self, path: impl AsRef<Path>) -> Self {
        self.with_writer(Box::new(OutputsJsonWriter::new(path.as_ref())))
    }

    /// Adds the transport's stamps of each request to its JSONL line as `trace_data`
    /// (`--export-http-trace`); no effect unless [`MetricsSink::export_records_to`] came
    /// first.
    #[must_use]
    pub fn export_http_trace(self, enabled: bool) -> Self {
        if let Some(switch) = &self.records_http_trace {
            switch.store(enabled, Ordering::Relaxed);
        }
        self
    }

    /// Also hands every record to `writer`, after the writers added before it, and
    /// finishes it in [`MetricsSink::summarize`]. Profiling records come with their
    /// computed metrics; warmup records only if the writer asks for them.
    #[must_use]
    pub fn with_writer(mut self, writer: Box<dyn RecordWriter>) -> Self {
        self.writers.push(writer);
        self
    }

    /// The command line to echo in `run_info.cli_command`.
    #[must_use]
    pub fn with_cli_command(mut self, command: impl Into<String>) -> Self {
        self.cli_command = Some(command.into());
        self
    }

    /// Also feeds `live` once per processed profiling record, for a live display.
    #[must_use]
    pub fn with_live_stats(mut self, live: Arc<LiveStats>) -> Self {
        self.live = Some(live);
        self
    }

    /// The applicability context in use.
    pub fn context(&self) -> &MetricsContext {
        &self.ctx
    }

    fn dist(&mut self, id: MetricId) -> &mut Distribution {
        self.dists[id.index()].get_or_insert_with(Distribution::new)
    }

    /// Accuracy mode: grades the reply of every valid profiling record whose conversation
    /// `sheet` has an answer for, after the request completed (here, on the processing
    /// task); the grade goes into the record's metrics (`profile_export.jsonl`) and the
    /// summary gets [`Summary::accuracy`]. Failed requests are not graded: they count as
    /// errors, not as wrong answers.
    #[must_use]
    pub fn grade_answers(mut self, sheet: AnswerSheet) -> Self {
        self.grading = Some(Box::new(Grading {
            sheet,
            tally: AccuracyTally::default(),
            writer: None,
        }));
        self
    }

    /// Writes each grade to `path` (`accuracy_export.jsonl`, created or truncated). No
    /// effect without [`MetricsSink::grade_answers`].
    pub fn export_grades_to(mut self, path: impl AsRef<Path>) -> Result<Self, MetricsError> {
        if let Some(grading) = &mut self.grading {
            grading.writer = Some(AccuracyJsonlWriter::create(
                path.as_ref(),
                grading.sheet.grader,
            )?);
        }
        Ok(self)
    }

    /// Grades `record`'s reply when accuracy mode knows its question.
    fn grade(&mut self, record: &RequestRecord, metrics: &mut RecordMetrics) {
        let Some(grading) = self.grading.as_deref_mut() else {
            return;
        };
        let session = &record.credit.conversation.session_id;
        let Some(key) = grading.sheet.keys.get(session).filter(|_| metrics.valid) else {
            return;
        };
        let output: String = record
            .responses
            .iter()
            .map(|r| r.response.text.as_str())
            .collect();
        let thinking: String = record
            .responses
            .iter()
            .map(|r| r.response.reasoning.as_str())
            .collect();
        let grade = crate::accuracy::grade(grading.sheet.grader, &output, &key.answer);
        if grading.sheet.verbose {
            tracing::info!(
                "[accuracy] session={session} task={} correct={} unparsed={} {}",
                key.task,
                grade.correct,
                grade.unparsed,
                grade.explanation
            );
        }
        grading.tally.add(&key.task, &grade);
        let written = grading
            .writer
            .as_mut()
            .map(|w| w.write(record, key, &grade, &output, &thinking));
        metrics.grade = Some(TaskGrade {
            task: key.task.clone(),
            grade,
        });
        if let Some(Err(error)) = written {
            self.export_failed(error);
        }
    }

    /// Processes one record (what [`RecordSink::on_record`] does), with typed errors.
    pub fn process(&mut self, record: &RequestRecord) -> Result<(), MetricsError> {
        if record.credit.phase == Phase::Warmup {
            let written = self
                .writers
                .iter_mut()
                .try_for_each(|writer| writer.write_warmup_record(record));
            if let Err(error) = written {
                self.export_failed(error);
            }
            return Ok(());
        }
        let tokens = count_tokens(record, Some(self.counter.as_ref()), &self.ctx);
        let usage = record.last_usage().map(UsageTokens::of);
        let mut metrics =
            compute_record_metrics_with_usage(record, &tokens, usage.as_ref(), &self.ctx);
        self.grade(record, &mut metrics);
        if !self.hinted_cache_reporting
            && metrics.valid
            && usage.is_some_and(|usage| usage.lacks_cache_reporting())
        {
            // Mid-run, so a long run can be stopped and started again with the flag set.
            self.hinted_cache_reporting = true;
            tracing::warn!("{CACHE_REPORTING_HINT}");
        }
        if let Some(live) = &self.live {
            crate::live::feed(live, record, &metrics);
        }
        self.clock.get_or_insert(record.clock);
        self.absorb_sliced(&RecordFacts::with_usage(record, usage), &metrics);
        self.check_failure_threshold();
        let phase_index = self.phase_index;
        let written = self
            .writers
            .iter_mut()
            .try_for_each(|writer| writer.write_record(record, &metrics, phase_index));
        if let Err(error) = written {
            self.export_failed(error);
        }
        Ok(())
    }

    /// The first write error of a per-record export: close every export (each keeps
    /// what it wrote), write nothing more, and stop sending when asked to. The records
    /// still reach the summary.
    fn export_failed(&mut self, error: MetricsError) {
        tracing::error!("{error}: no more records are written");
        for writer in std::mem::take(&mut self.writers) {
            if let Err(error) = writer.finish() {
                tracing::debug!(%error, "closing an export after a write error");
            }
        }
        let grades = self.grading.as_deref_mut().and_then(|g| g.writer.take());
        if let Some(Err(error)) = grades.map(AccuracyJsonlWriter::finish) {
            tracing::debug!(%error, "closing an export after a write error");
        }
        self.export_failure.get_or_insert_with(|| error.to_string());
        if let Some(stop) = &self.stop_on_export_failure {
            stop.cancel();
        }
    }

    /// Adds one profiling record of another process, digested there
    /// ([`MetricsSink::export_digests_to`]), to the totals, distributions and time
    /// slices, as if it had run here. The sink must be one made by
    /// [`MetricsSink::for_digests`].
    pub fn absorb_digest(&mut self, digest: &RecordDigest) {
        self.absorb_sliced(&digest.facts(), &digest.metrics);
        if let (Some(grading), Some(graded)) = (self.grading.as_deref_mut(), &digest.metrics.grade)
        {
            grading.tally.add(&graded.task, &graded.grade);
        }
    }

    /// Accuracy mode for digests ([`MetricsSink::for_digests`]): the grades they carry,
    /// given by `grader` in the processes that digested them, are tallied into
    /// [`Summary::accuracy`] as [`MetricsSink::grade_answers`] tallies its own.
    #[must_use]
    pub fn tally_digested_grades(self, grader: aiperf_core::config::AccuracyGrader) -> Self {
        self.grade_answers(AnswerSheet {
            grader,
            verbose: false,
            keys: std::collections::HashMap::new(),
        })
    }

    /// A sink for records digested by other processes ([`MetricsSink::absorb_digest`]),
    /// on their Unix-ns time axis: summary times and time slices are Unix ns, and
    /// [`MetricsSink::phase_started`] takes a Unix-ns start. It counts no tokens itself;
    /// digests carry their counts.
    pub fn for_digests(
        config: &BenchmarkConfig,
        ctx: MetricsContext,
    ) -> Result<Self, MetricsError> {
        let mut sink = Self::with_context(config, ctx, Arc::new(DigestsCarryCounts))?;
        sink.clock = Some(Clock::unix());
        Ok(sink)
    }

    /// Also writes a [`RecordDigest`] line per profiling record to `path`
    /// (`profile_export_digest.jsonl`), for merging this run with others
    /// ([`MetricsSink::absorb_digest`]).
    pub fn export_digests_to(self, path: impl AsRef<Path>) -> Result<Self, MetricsError> {
        let writer = DigestWriter::create(path.as_ref())?;
        Ok(self.with_writer(Box::new(writer)))
    }

    /// Absorbs one record into its time slice, if slicing, and into the whole run.
    fn absorb_sliced(&mut self, facts: &RecordFacts<'_>, metrics: &RecordMetrics) {
        if let Some(mut slices) = self.slices.take() {
            let origin = *slices.origin_ns.get_or_insert(facts.start_ns);
            let index = facts.start_ns.saturating_sub(origin) / slices.width_ns;
            slices
                .sinks
                .entry(index)
                .or_insert_with(|| self.slice_sink())
                .absorb(facts, metrics);
            self.slices = Some(slices);
        }
        self.absorb(facts, metrics);
    }

    /// Adds one profiling record's computed metrics to the totals and distributions.
    fn absorb(&mut self, facts: &RecordFacts<'_>, metrics: &RecordMetrics) {
        let tokens = &metrics.tokens;
        let lag = facts.lag_ns;
        self.lag.push(lag as f64 / 1e6);
        if lag > LATE_THRESHOLD_NS {
            self.late += 1;
        }
        self.retries += u64::from(facts.retries);
        if metrics.valid {
            self.totals.valid += 1;
            let t = &mut self.totals;
            add(&mut t.isl, tokens.input);
            add(&mut t.output, tokens.output);
            add(&mut t.reasoning, tokens.reasoning);
            add(&mut t.osl, tokens.osl());
            if let Some(usage) = &facts.usage {
                // Summed whether or not the usage metrics apply: the summary reports a
                // total only where its record metric applies (same applicability flags).
                t.usage.add(usage);
            }
            let usage_diff = |id: MetricId| {
                matches!(
                    id,
                    MetricId::UsagePromptTokensDiffPct
                        | MetricId::UsageCompletionTokensDiffPct
                        | MetricId::UsageReasoningTokensDiffPct
                )
            };
            if metrics.values.iter().any(|(d, _)| usage_diff(d.id)) {
                add(
                    &mut t.usage_discrepancies,
                    Some(u64::from(metrics.usage_discrepancy)),
                );
            }
            if let Some(m) = metrics.osl_mismatch {
                add(&mut t.osl_mismatches, Some(u64::from(m)));
            }
            let (first, last) = (facts.first_content_ns, facts.last_content_ns);
            // one run, one clock: perf ns order equals wall order
            if t.min_start.is_none_or(|s| facts.start_ns < s) {
                t.min_start = Some(facts.start_ns);
            }
            if t.max_end.is_none_or(|e| last > e) {
                t.max_end = Some(last);
            }
            self.timeline.push(
                facts.start_ns,
                self.ctx.streaming.then_some(first),
                last,
                tokens.input.filter(|_| self.ctx.tokenizes_input),
                tokens.osl().filter(|_| self.ctx.produces_tokens),
            );
            if !self.slos.is_empty() {
                let good = self.slos.iter().all(|slo| match metrics.scalar(slo.id) {
                    Some(v) if slo.larger_is_better => v >= slo.threshold,
                    Some(v) => v <= slo.threshold,
                    None => false,
                });
                if good {
                    self.totals.good += 1;
                }
            }
        } else {
            self.totals.errors += 1;
            add(
                &mut self.totals.error_isl,
                tokens.input.filter(|_| self.ctx.tokenizes_input),
            );
            let error = facts
                .error
                .cloned()
                .unwrap_or_else(ErrorDetails::invalid_result);
            let next = self.errors.len();
            self.errors
                .entry(ErrorGroup::of(&error))
                .or_insert((0, next, error))
                .0 += 1;
        }
        for (def, value) in &metrics.values {
            match value {
                MetricValue::Scalar(v) => self.dist(def.id).push(*v),
                MetricValue::List(vs) => {
                    let d = self.dist(def.id);
                    for v in vs {
                        d.push(*v);
                    }
                }
            }
        }
    }

    /// The Parquet rows of the records in the JSONL file (see
    /// [`MetricsSink::export_parquet_to`]); after a failed write, of the lines it kept.
    #[cfg(feature = "parquet")]
    fn write_parquet_after_run(&mut self) -> Result<(), MetricsError> {
        let (Some(writer), Some(jsonl)) = (self.parquet_after_run.take(), &self.records_path)
        else {
            return Ok(());
        };
        let started = std::time::Instant::now();
        let rows = writer.write_from_jsonl(jsonl)?;
        tracing::info!(
            rows,
            seconds = started.elapsed().as_secs_f64(),
            "wrote the Parquet records from {}",
            jsonl.display()
        );
        Ok(())
    }

    /// Computes the summary (what [`RecordSink::finish`] does), with typed errors.
    pub fn summarize(mut self, run: &RunInfo) -> Result<Summary, MetricsError> {
        for writer in std::mem::take(&mut self.writers) {
            if let Err(error) = writer.finish() {
                tracing::error!("{error}");
                self.export_failure.get_or_insert_with(|| error.to_string());
            }
        }
        #[cfg(feature = "parquet")]
        if let Err(error) = self.write_parquet_after_run() {
            tracing::error!("{error}");
            self.export_failure.get_or_insert_with(|| error.to_string());
        }
        let accuracy = self.grading.take().map(|grading| {
            if let Some(Err(error)) = grading.writer.map(AccuracyJsonlWriter::finish) {
                tracing::error!("{error}");
                self.export_failure.get_or_insert_with(|| error.to_string());
            }
            grading.tally.summarize(grading.sheet.grader)
        });
        let slices = self.slices.take();
        let ctx = self.ctx;
        let t = &self.totals;
        let mut results: Vec<(MetricId, MetricResult)> = Vec::new();
        let mut single = |id: MetricId, value: Option<f64>| {
            let def = id.def();
            if let Some(v) = value.filter(|v| v.is_finite() && ctx.applies(def)) {
                results.push((id, MetricResult::single(def, v)));
            }
        };
        let f = |v: Option<u64>| v.map(|v| v as f64);
        single(MetricId::RequestCount, Some(t.valid as f64));
        single(
            MetricId::ErrorRequestCount,
            (t.errors > 0).then_some(t.errors as f64),
        );
        let completed = t.valid + t.errors;
        single(MetricId::CompletedRequestCount, Some(completed as f64));
        single(
            MetricId::RequestErrorRate,
            (completed > 0).then(|| percent(t.errors, completed)),
        );
        let bench = match (t.min_start, t.max_end) {
            (Some(a), Some(b)) if b > a => Some((b - a) as f64 / 1e9),
            _ => None,
        };
        single(MetricId::BenchmarkDuration, bench);
        // Throughputs divide by the profiling phase window (AIPerf 0.13), falling back to
        // the span of the valid requests.
        let window = run
            .phase(Phase::Profiling)
            .filter(|p| p.end_ns > p.start_ns)
            .map(|p| (p.start_ns, p.end_ns))
            .or(match (t.min_start, t.max_end) {
                (Some(a), Some(b)) if b > a => Some((a, b)),
                _ => None,
            });
        let secs = window
            .map(|(a, b)| (b - a) as f64 / 1e9)
            .filter(|s| *s > 0.0);
        let per_sec = |v: Option<u64>| match (v, secs) {
            (Some(v), Some(s)) if t.valid > 0 => Some(v as f64 / s),
            _ => None,
        };
        single(MetricId::RequestThroughput, per_sec(Some(t.valid)));
        single(MetricId::OutputTokenThroughput, per_sec(t.osl));
        single(MetricId::InputTokenThroughput, per_sec(t.isl));
        single(
            MetricId::TotalTokenThroughput,
            per_sec(t.osl.map(|o| o + t.isl.unwrap_or(0))),
        );
        if ctx.goodput {
            single(MetricId::Goodput, per_sec(Some(t.good)).or(Some(0.0)));
            single(MetricId::GoodRequestCount, Some(t.good as f64));
            single(
                MetricId::GoodRequestFraction,
                Some(if completed > 0 {
                    t.good as f64 / completed as f64
                } else {
                    0.0
                }),
            );
        }
        single(MetricId::TotalIsl, f(t.isl));
        single(MetricId::TotalOutputTokens, f(t.output));
        single(MetricId::TotalReasoningTokens, f(t.reasoning));
        single(MetricId::TotalOsl, f(t.osl));
        single(MetricId::TotalErrorIsl, f(t.error_isl));
        for (_, total, v) in t.usage.by_metric() {
            single(total, f(v));
        }
        single(
            MetricId::OverallUsagePromptCacheReadPct,
            match (t.usage.prompt_cache_read, t.usage.prompt) {
                (Some(read), Some(prompt)) if prompt > 0 => {
                    Some(read as f64 / prompt as f64 * 100.0)
                }
                _ => None,
            },
        );
        single(MetricId::UsageDiscrepancyCount, f(t.usage_discrepancies));
        single(MetricId::OslMismatchCount, f(t.osl_mismatches));

        for (id, dist) in MetricId::ALL.iter().zip(&self.dists) {
            if let Some(stats) = dist.as_ref().and_then(Distribution::stats) {
                results.push((*id, MetricResult::from_stats(id.def(), &stats)));
            }
        }
        if let Some(window) = window {
            for (id, stats) in self.timeline.compute(window) {
                if ctx.applies(id.def()) {
                    results.push((id, MetricResult::from_weighted(id.def(), &stats)));
                }
            }
        }
        // catalogue order
        results.sort_by_key(|(id, _)| *id);

        let mut errors: Vec<(u64, usize, ErrorDetails)> = self.errors.into_values().collect();
        errors.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        let schedule_lag = self.lag.stats().map(|s| ScheduleLag {
            p50_ms: s.p50(),
            p99_ms: s.p99(),
            max_ms: s.max,
            late_count: self.late,
            count: s.count,
        });
        let clock = run.clock.or(self.clock);
        let wall = |perf: u64| clock.map(|c| c.wall_of_perf(perf));
        let mut summary = Summary::new(self.config, ctx);
        summary.metrics = results.into_iter().map(|(_, r)| r).collect();
        summary.errors = errors
            .into_iter()
            .map(|(count, _, error)| ErrorCount { error, count })
            .collect();
        summary.schedule_lag = schedule_lag;
        summary.connection_retries = self.retries;
        summary.export_failure = self.export_failure.take();
        summary.failure_threshold_exceeded = self.failure_threshold_exceeded.take();
        summary.was_cancelled = run.was_cancelled;
        summary.is_complete = !run.was_cancelled;
        if let Some(profiling) = run.phase(Phase::Profiling) {
            summary.cancelled_in_flight = profiling.cancelled;
            summary.grace_period_expired = profiling.grace_expired;
        }
        summary.start_time_ns = window.and_then(|w| wall(w.0));
        summary.end_time_ns = window.and_then(|w| wall(w.1));
        summary.cli_command = self.cli_command;
        summary.accuracy = accuracy;
        if let (Some(slices), Some(clock)) = (slices, clock) {
            let phase_end = window.map_or(u64::MAX, |w| w.1);
            summary.timeslices = slices.summarize(clock, phase_end)?;
        }
        Ok(summary)
    }
}

/// The token counter of a sink fed digests only: never asked, since every digest carries
/// the counts its process made.
struct DigestsCarryCounts;

impl TokenCounter for DigestsCarryCounts {
    fn count_tokens(&self, _text: &str) -> usize {
        0
    }
}

/// `part` of `whole` in percent, multiplied first so that exact shares stay exact (14 of
/// 50 is 28, where dividing first gives 28.000000000000004).
fn percent(part: u64, whole: u64) -> f64 {
    part as f64 * 100.0 / whole as f64
}

/// The applicability context with the goodput flag set, and the goodput thresholds of
/// `config`; fails when a threshold names an unknown or inapplicable metric.
fn goodput_of(
    config: &BenchmarkConfig,
    mut ctx: MetricsContext,
) -> Result<(MetricsContext, Vec<Slo>), MetricsError> {
    ctx.goodput = !config.goodput.is_empty();
    validate_goodput(&config.goodput, &ctx)?;
    let slos = config
        .goodput
        .iter()
        .filter_map(|(tag, threshold)| {
            let id = MetricId::from_tag(tag)?;
            Some(Slo {
                id,
                threshold: *threshold,
                larger_is_better: id.def().flags.contains(MetricFlags::LARGER_IS_BETTER),
            })
        })
        .collect();
    Ok((ctx, slos))
}

impl RecordSink for MetricsSink {
    type Output = Summary;

    fn start(&mut self, run: &RunContext<'_>) -> Result<(), SinkError> {
        self.adopt(run).map_err(|e| Box::new(e) as SinkError)
    }

    fn on_record(&mut self, record: RequestRecord) -> Result<(), SinkError> {
        self.process(&record).map_err(|e| Box::new(e) as SinkError)
    }

    fn on_phase_start(&mut self, phase: Phase, start_ns: u64) -> Result<(), SinkError> {
        self.phase_started(phase, start_ns);
        Ok(())
    }

    fn on_watermark(&mut self, start_ns: u64) -> Result<(), SinkError> {
        self.watermark(start_ns)
            .map_err(|e| Box::new(e) as SinkError)
    }

    fn finish(self, run: &RunInfo) -> Result<Summary, SinkError> {
        self.summarize(run).map_err(|e| Box::new(e) as SinkError)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;
    use crate::record_metrics::testkit::*;
    use aiperf_core::PhaseStats;

    const MS: u64 = 1_000_000;

    /// A streaming record: start at `start_ms`, first token after `ttft_ms`, then one
    /// chunk every `gap_ms`, `chunks` chunks of one word each.
    fn streamed(start_ms: u64, ttft_ms: u64, gap_ms: u64, chunks: u64) -> RequestRecord {
        let responses = (0..chunks)
            .map(|i| resp((start_ms + ttft_ms + i * gap_ms) * MS, "w ", "", None))
            .collect();
        record(start_ms * MS, "a b c d", responses)
    }

    fn config(goodput: Vec<(String, f64)>) -> BenchmarkConfig {
        let mut c = BenchmarkConfig::default();
        c.endpoint.models = vec!["m".into()];
        c.endpoint.streaming = true;
        c.goodput = goodput;
        c
    }

    fn sink(goodput: Vec<(String, f64)>) -> MetricsSink {
        MetricsSink::with_context(
            &config(goodput),
            MetricsContext::streaming_chat(),
            Arc::new(Words),
        )
        .unwrap()
    }

    fn run(window_ms: (u64, u64)) -> RunInfo {
        RunInfo {
            clock: None,
            phases: vec![PhaseStats::window(
                Phase::Profiling,
                window_ms.0 * MS,
                window_ms.1 * MS,
            )],
            was_cancelled: false,
        }
    }

    /// Time slices summarised as watermarks close them are exactly those summarised at
    /// the end, and a closed slice's records are let go.
    #[test]
    fn time_slices_closed_by_watermarks_equal_those_summarised_at_the_end() {
        let sliced = || {
            let mut s = sink(vec![("time_to_first_token".into(), 70.0)])
                .with_time_slices(std::time::Duration::from_millis(50));
            s.phase_started(Phase::Profiling, 0);
            s
        };
        // Starts 0, 7, 14, … ms, finished (so processed) out of start order.
        let mut records: Vec<RequestRecord> = (0..120u64)
            .map(|i| streamed(i * 7, 40 + (i * 31) % 60, 3 + i % 4, 1 + i % 5))
            .collect();
        records.sort_by_key(|r| r.end_ns);
        let mut closing = sliced();
        let mut at_end = sliced();
        let mut most_open = 0;
        for (done, record) in records.iter().enumerate() {
            closing.process(record).unwrap();
            at_end.process(record).unwrap();
            // The promise the engine keeps: no record still to come starts earlier.
            let watermark = records[done + 1..].iter().map(|r| r.start_ns).min();
            closing.watermark(watermark.unwrap_or(u64::MAX)).unwrap();
            let open = closing.slices.as_ref().unwrap().sinks.len();
            most_open = most_open.max(open);
        }
        let slices = closing.slices.as_ref().unwrap();
        assert_eq!(slices.closed.len(), 16);
        assert_eq!(
            slices.sinks.len(),
            1,
            "the last slice waits for the phase end"
        );
        assert!(most_open <= 4, "{most_open} slices were open at once");
        let closing = closing.summarize(&run((0, 900))).unwrap();
        let at_end = at_end.summarize(&run((0, 900))).unwrap();
        // Everything but the summaries' random benchmark ids.
        let figures = |slices: &[TimeSlice]| -> Vec<String> {
            slices
                .iter()
                .map(|slice| {
                    let s = &slice.summary;
                    format!(
                        "{} {} {:?} {:?} {:?}",
                        slice.start_ns, slice.end_ns, s.metrics, s.errors, s.schedule_lag
                    )
                })
                .collect()
        };
        assert_eq!(closing.timeslices.len(), 17);
        assert_eq!(figures(&closing.timeslices), figures(&at_end.timeslices));
    }

    #[test]
    fn goodput_counts_exactly_the_records_meeting_every_slo() {
        let mut s = sink(vec![
            ("time_to_first_token".into(), 120.0),
            ("output_token_throughput_per_user".into(), 50.0),
        ]);
        // TTFT 50 ms, 10 ms gaps → ITL 10 ms, 100 tok/s/user: good
        s.process(&streamed(0, 50, 10, 5)).unwrap();
        // TTFT 150 ms: bad on TTFT
        s.process(&streamed(0, 150, 10, 5)).unwrap();
        // TTFT 100 ms, 40 ms gaps → 25 tok/s/user: bad on throughput
        s.process(&streamed(0, 100, 40, 5)).unwrap();
        // TTFT 120 ms exactly, 5 ms gaps: good (≤ and ≥ are inclusive)
        s.process(&streamed(0, 120, 5, 5)).unwrap();
        // one chunk only: no ITL → the throughput SLO has no value → bad
        s.process(&streamed(0, 10, 10, 1)).unwrap();
        let summary = s.summarize(&run((0, 1000))).unwrap();
        assert_eq!(summary.metric("good_request_count").unwrap().avg, 2.0);
        assert_eq!(summary.metric("goodput").unwrap().avg, 2.0); // 2 per 1 s window
        assert_eq!(summary.metric("good_request_fraction").unwrap().avg, 0.4);
        assert_eq!(summary.request_count(), 5);
    }

    #[test]
    fn token_count_discrepancies_and_osl_mismatches_end_the_console_with_warnings() {
        let mut s = sink(vec![]);
        // The client counts 4 input and 3 output words; the server says 4 and 3.
        let agreeing = resp(
            300 * MS,
            "",
            "",
            Some(r#"{"prompt_tokens":4,"completion_tokens":3}"#),
        );
        // Here the server says 9 output tokens: 200 % off.
        let disagreeing = resp(
            300 * MS,
            "",
            "",
            Some(r#"{"prompt_tokens":4,"completion_tokens":9}"#),
        );
        for usage in [agreeing.clone(), disagreeing, agreeing] {
            let mut r = streamed(0, 100, 50, 3);
            r.responses.push(usage);
            // Asked for 3 tokens, got 3 — except the last record, which asked for 20.
            r.requested_max_tokens = Some(3);
            s.process(&r).unwrap();
        }
        let mut short = streamed(0, 100, 50, 3);
        short.requested_max_tokens = Some(20);
        s.process(&short).unwrap();
        let summary = s.summarize(&run((0, 1000))).unwrap();
        assert_eq!(summary.metric("usage_discrepancy_count").unwrap().avg, 1.0);
        assert_eq!(summary.metric("osl_mismatch_count").unwrap().avg, 1.0);
        let console = crate::export::console::render_console(&summary);
        assert!(console.contains(
            "Token Count Discrepancy Warning: 1 requests differ by more than 10% between \
             client and server token counts"
        ));
        assert!(console.contains(
            "OSL Mismatch Warning: 1 requests produced an output length far from the \
             requested max tokens"
        ));
    }

    #[test]
    fn aggregates_and_throughputs() {
        let mut s = sink(vec![]);
        s.process(&streamed(0, 100, 50, 3)).unwrap(); // latency 200, OSL 3, ISL 4
        s.process(&streamed(100, 100, 100, 5)).unwrap(); // latency 500, OSL 5
        let mut warm = streamed(0, 1, 1, 2);
        warm.credit.phase = Phase::Warmup;
        s.process(&warm).unwrap();
        let summary = s.summarize(&run((0, 2000))).unwrap();
        let v = |tag: &str| summary.metric(tag).unwrap().avg;
        assert_eq!(v("request_count"), 2.0);
        assert_eq!(v("completed_request_count"), 2.0);
        assert_eq!(v("request_error_rate"), 0.0);
        assert_eq!(v("total_osl"), 8.0);
        assert_eq!(v("total_isl"), 8.0);
        assert_eq!(v("request_throughput"), 1.0);
        assert_eq!(v("output_token_throughput"), 4.0);
        assert_eq!(v("input_token_throughput"), 4.0);
        assert_eq!(v("total_token_throughput"), 8.0);
        // benchmark duration: first start 0 → last content 600 ms
        assert_eq!(v("benchmark_duration"), 0.6);
        let lat = summary.metric("request_latency").unwrap();
        assert_eq!(
            (lat.min, lat.max, lat.count, lat.sum),
            (Some(200.0), Some(500.0), Some(2), Some(700.0))
        );
        assert_eq!(lat.p50, Some(350.0));
        let icl = summary.metric("inter_chunk_latency").unwrap();
        assert_eq!(icl.count, Some(6));
        // effective concurrency: Σ latency / window = 0.7 s / 2 s
        assert!((v("effective_concurrency") - 0.35).abs() < 1e-12);
        assert!(summary.metric("error_request_count").is_none());
        assert!(summary.metric("goodput").is_none());
    }

    #[test]
    fn errors_are_grouped_and_counted() {
        let mut s = sink(vec![]);
        s.process(&streamed(0, 10, 10, 2)).unwrap();
        s.process(&failed(0, "x y", 500, "boom")).unwrap();
        s.process(&failed(0, "x y z", 429, "slow down")).unwrap();
        // Same type and code, another message: one entry, the first message its sample.
        s.process(&failed(0, "x", 500, "boom at request 17"))
            .unwrap();
        s.process(&record(
            0,
            "q",
            vec![resp(5 * MS, "", "", Some(r#"{"prompt_tokens":1}"#))],
        ))
        .unwrap();
        let summary = s.summarize(&run((0, 100))).unwrap();
        assert_eq!(summary.error_count(), 4);
        let e = summary.error_summary();
        assert_eq!(e.len(), 3);
        assert_eq!((e[0].error.code, e[0].count), (Some(500), 2));
        assert_eq!(e[0].error.message, "boom");
        assert_eq!((e[1].error.code, e[1].count), (Some(429), 1));
        assert_eq!(
            e[2].error.kind.as_deref(),
            Some("InvalidInferenceResultError")
        );
        assert_eq!(summary.metric("error_request_count").unwrap().avg, 4.0);
        assert_eq!(summary.metric("request_error_rate").unwrap().avg, 80.0);
        assert_eq!(percent(14, 50), 28.0);
        assert_eq!(summary.metric("total_error_isl").unwrap().avg, 7.0);
        assert_eq!(summary.metric("error_isl").unwrap().count, Some(4));
    }

    #[test]
    fn schedule_lag_is_measured() {
        let mut s = sink(vec![]);
        let mut r = streamed(10, 10, 10, 2);
        r.scheduled_ns = 7 * MS; // 3 ms late
        s.process(&r).unwrap();
        s.process(&streamed(0, 10, 10, 2)).unwrap();
        let lag = s.summarize(&run((0, 100))).unwrap().schedule_lag.unwrap();
        assert_eq!(
            (lag.p50_ms, lag.max_ms, lag.late_count, lag.count),
            (1.5, 3.0, 1, 2)
        );
    }

    #[test]
    fn connection_retries_of_profiling_records_are_counted() {
        let mut s = sink(vec![]);
        for (retries, phase) in [
            (1, Phase::Profiling),
            (0, Phase::Profiling),
            (1, Phase::Warmup),
        ] {
            let mut r = streamed(0, 10, 10, 2);
            r.retries = retries;
            r.credit.phase = phase;
            s.process(&r).unwrap();
        }
        let summary = s.summarize(&run((0, 100))).unwrap();
        assert_eq!(summary.connection_retries, 1);
        let json = crate::export::json::to_json_string(&summary).unwrap();
        assert!(json.contains("\"connection_retries\": 1,"), "{json}");
    }

    #[test]
    fn usage_without_cached_tokens_calls_for_the_cache_reporting_hint() {
        let summarize = |usage: &str| {
            let mut s = sink(vec![]);
            s.process(&record(
                0,
                "a b",
                vec![resp(10 * MS, "w ", "", Some(usage))],
            ))
            .unwrap();
            s.summarize(&run((0, 100))).unwrap()
        };
        let without = summarize(r#"{"prompt_tokens":2,"completion_tokens":1}"#);
        assert!(without.lacks_cache_reporting());
        let console = crate::export::console::render_console(&without);
        assert!(console.contains(CACHE_REPORTING_HINT), "{console}");
        let zero_hits = summarize(
            r#"{"prompt_tokens":2,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":0}}"#,
        );
        assert!(!zero_hits.lacks_cache_reporting());
        assert!(!crate::export::console::render_console(&zero_hits).contains(CACHE_REPORTING_HINT));
        let no_usage = sink(vec![]).summarize(&run((0, 100))).unwrap();
        assert!(!no_usage.lacks_cache_reporting());
    }

    #[test]
    fn usage_counts_reach_the_record_metrics_and_the_run_totals() {
        let mut s = sink(vec![]);
        for (start, usage) in [
            (
                0,
                r#"{"prompt_tokens":4,"completion_tokens":1,"prompt_tokens_details":{"cached_tokens":1}}"#,
            ),
            (
                1,
                r#"{"prompt_tokens":6,"completion_tokens":1,"cache_read_input_tokens":3}"#,
            ),
        ] {
            s.process(&record(
                start,
                "a b",
                vec![resp(10 * MS, "w ", "", Some(usage))],
            ))
            .unwrap();
        }
        let summary = s.summarize(&run((0, 100))).unwrap();
        let metric = |id: MetricId| summary.metric(id.tag()).unwrap();
        let prompt = metric(MetricId::UsagePromptTokens);
        assert_eq!(
            (prompt.avg, prompt.min, prompt.max),
            (5.0, Some(4.0), Some(6.0))
        );
        assert_eq!(metric(MetricId::UsagePromptCacheReadTokens).avg, 2.0);
        assert_eq!(metric(MetricId::TotalUsagePromptTokens).avg, 10.0);
        assert_eq!(metric(MetricId::TotalUsagePromptCacheReadTokens).avg, 4.0);
        // The client counted 2 input tokens ("a b") and 1 output token against the
        // server's 4 and 6 prompt tokens and 1 completion token.
        let prompt_diff = metric(MetricId::UsagePromptTokensDiffPct);
        assert_eq!(
            (prompt_diff.min, prompt_diff.max),
            (Some(100.0), Some(200.0))
        );
        assert_eq!(metric(MetricId::UsageCompletionTokensDiffPct).avg, 0.0);
        assert!(!summary.lacks_cache_reporting());
    }

    #[test]
    fn goodput_validation_names_the_bad_tags() {
        let ctx = MetricsContext {
            streaming: false,
            ..MetricsContext::streaming_chat()
        };
        let err = validate_goodput(&[("nope".into(), 1.0), ("request_count".into(), 1.0)], &ctx)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Unknown metric tag(s) in --goodput: nope, request_count"
        );
        let err = validate_goodput(&[("time_to_first_token".into(), 1.0)], &ctx).unwrap_err();
        assert_eq!(
            err.to_string(),
            "Metric tag(s) in --goodput not applicable to this run: time_to_first_token (needs --streaming)"
        );
        assert!(validate_goodput(&[("request_latency".into(), 1.0)], &ctx).is_ok());
    }

    /// A streamed record that gives every record metric a value: reasoning, two content
    /// chunks, a usage chunk with every usage field, transport stamps and a requested
    /// length it misses.
    fn exhaustive_record() -> RequestRecord {
        let usage = r#"{"prompt_tokens":5,"completion_tokens":9,"total_tokens":14,
            "prompt_tokens_details":{"cached_tokens":2},"cache_creation_input_tokens":1,
            "prompt_cache_miss_tokens":3,"completion_tokens_details":{"reasoning_tokens":1,
            "accepted_prediction_tokens":1,"rejected_prediction_tokens":1}}"#;
        let mut r = record(
            0,
            "a b c d",
            vec![
                resp(10 * MS, "", "think", None),
                resp(20 * MS, "w w ", "", None),
                resp(30 * MS, "w", "", None),
                resp(40 * MS, "", "", Some(usage)),
            ],
        );
        r.requested_max_tokens = Some(100);
        // A chat answer carries no video report; the record stands for every field.
        r.responses[1].response.video = Some(aiperf_core::VideoReport {
            inference_time_s: Some(0.5),
            peak_memory_mb: Some(100.0),
        });
        // Nor a transcription's clip length.
        r.credit.conversation = std::sync::Arc::new(aiperf_core::Conversation {
            turns: vec![aiperf_core::Turn {
                audio_duration_s: Some(2.0),
                ..aiperf_core::Turn::default()
            }],
            ..aiperf_core::Conversation::default()
        });
        r.http = Some(aiperf_core::HttpTiming {
            connection_reused: false,
            connect_ns: Some((MS / 10, MS)),
            request_sent_ns: Some(2 * MS),
            first_chunk_ns: Some(10 * MS),
            request_bytes: 512,
            response_head_bytes: 100,
        });
        r
    }

    #[test]
    fn every_catalogue_metric_comes_from_the_computation_its_kind_names() {
        // An id is a catalogue row by construction (`MetricId`), so a computation cannot
        // produce a metric the catalogue lacks. What is left to check is the other way:
        // that each row is produced, by the one computation its kind names:
        // - `Record`: `compute_record_metrics`, once per record;
        // - `TimeWeighted`: `Timeline::compute` (`TIMELINE_METRICS`);
        // - `Aggregate` and `Derived`: the run totals of `MetricsSink::summarize`.
        let records = [exhaustive_record(), failed(0, "x y", 500, "boom")];
        let ctx = MetricsContext::streaming_chat();
        let per_record: BTreeSet<MetricId> = records
            .iter()
            .flat_map(|r| {
                let tokens = count_tokens(r, Some(&Words), &ctx);
                crate::compute_record_metrics(r, &tokens, &ctx).values
            })
            .map(|(def, _)| def.id)
            .collect();
        let timeline: BTreeSet<MetricId> = crate::timeline::TIMELINE_METRICS.into();

        let mut s = sink(vec![("request_latency".into(), 1000.0)]);
        for r in &records {
            s.process(r).unwrap();
        }
        let summary = s.summarize(&run((0, 1000))).unwrap();
        let summarized: BTreeSet<MetricId> = summary
            .metrics
            .iter()
            .map(|m| MetricId::from_tag(m.tag).unwrap())
            .collect();
        let run_totals: BTreeSet<MetricId> = summarized
            .iter()
            .filter(|id| !per_record.contains(id) && !timeline.contains(id))
            .copied()
            .collect();

        for &id in MetricId::ALL {
            let produced_by = [
                (per_record.contains(&id), "compute_record_metrics"),
                (timeline.contains(&id), "Timeline::compute"),
                (run_totals.contains(&id), "MetricsSink::summarize"),
            ];
            let producers: Vec<&str> = produced_by
                .iter()
                .filter(|(produces, _)| *produces)
                .map(|(_, name)| *name)
                .collect();
            let expected = match id.def().kind {
                MetricKind::Record => "compute_record_metrics",
                MetricKind::TimeWeighted => "Timeline::compute",
                MetricKind::Aggregate | MetricKind::Derived => "MetricsSink::summarize",
            };
            assert_eq!(producers, [expected], "{}", id.tag());
        }
        // and every value computed reaches the summary
        assert_eq!(summarized.len(), MetricId::ALL.len());
    }

    /// What a [`Tally`] writer saw, shared with the test.
    #[derive(Debug, Default)]
    struct Seen {
        /// `(session_num, phase_index)` of each profiling record, in arrival order.
        records: Vec<(u64, u32)>,
        finishes: usize,
    }

    /// A writer of an embedder: keeps which records it got.
    #[derive(Debug)]
    struct Tally(Arc<std::sync::Mutex<Seen>>);

    impl RecordWriter for Tally {
        fn write_record(
            &mut self,
            record: &RequestRecord,
            _metrics: &RecordMetrics,
            phase_index: u32,
        ) -> Result<(), MetricsError> {
            let mut seen = self.0.lock().expect("no test thread panicked");
            seen.records.push((record.credit.id, phase_index));
            Ok(())
        }

        fn finish(self: Box<Self>) -> Result<(), MetricsError> {
            self.0.lock().expect("no test thread panicked").finishes += 1;
            Ok(())
        }
    }

    #[test]
    fn a_custom_writer_gets_the_records_of_the_jsonl_export_and_is_finished_once() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile_export.jsonl");
        let seen = Arc::new(std::sync::Mutex::new(Seen::default()));
        let mut config = config(vec![]);
        config.load.warmup.request_count = Some(1);
        let mut s =
            MetricsSink::with_context(&config, MetricsContext::streaming_chat(), Arc::new(Words))
                .unwrap()
                .export_records_to(&path)
                .unwrap()
                .with_writer(Box::new(Tally(Arc::clone(&seen))));
        let mut warm = streamed(0, 1, 1, 2);
        warm.credit.phase = Phase::Warmup;
        warm.credit.id = 99;
        s.process(&warm).unwrap();
        for id in [3, 1, 2] {
            let mut r = streamed(id, 10, 10, 3);
            r.credit.id = id;
            s.process(&r).unwrap();
        }
        let mut bad = failed(0, "x y", 500, "boom");
        bad.credit.id = 7;
        s.process(&bad).unwrap();
        assert_eq!(seen.lock().unwrap().finishes, 0);
        s.summarize(&run((0, 1000))).unwrap();

        let jsonl: Vec<(u64, u32)> = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .map(|l| {
                let line: serde_json::Value = serde_json::from_str(l).unwrap();
                let meta = &line["metadata"];
                let index = meta["phase_index"].as_u64().unwrap();
                (meta["session_num"].as_u64().unwrap(), index as u32)
            })
            .collect();
        assert_eq!(jsonl, vec![(3, 1), (1, 1), (2, 1), (7, 1)]);
        let seen = seen.lock().unwrap();
        assert_eq!(seen.records, jsonl);
        assert_eq!(seen.finishes, 1);
    }

    #[test]
    fn records_stream_to_jsonl_as_they_arrive() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("profile_export.jsonl");
        let mut s = sink(vec![]).export_records_to(&path).unwrap();
        for i in 0..150 {
            s.process(&streamed(i, 10, 10, 3)).unwrap();
        }
        s.process(&failed(0, "x y", 500, "boom")).unwrap();
        // flushed after the 100th record, before finish
        let partial = std::fs::read_to_string(&path).unwrap();
        assert!(partial.lines().count() >= 100);
        s.summarize(&run((0, 1000))).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 151);
        let ok = &lines[0];
        let meta = ok["metadata"].as_object().unwrap();
        for key in [
            "session_num",
            "x_request_id",
            "x_correlation_id",
            "conversation_id",
            "turn_index",
            "credit_issued_ns",
            "request_start_ns",
            "request_ack_ns",
            "request_end_ns",
            "benchmark_phase",
        ] {
            assert!(meta.contains_key(key), "{key}");
        }
        assert_eq!(ok["metadata"]["benchmark_phase"], "profiling");
        assert_eq!(
            ok["metrics"]["input_sequence_length"],
            serde_json::json!({"value": 4, "unit": "tokens"})
        );
        assert_eq!(
            ok["metrics"]["time_to_first_token"],
            serde_json::json!({"value": 10.0, "unit": "ms"})
        );
        assert_eq!(
            ok["metrics"]["inter_chunk_latency"]["value"],
            serde_json::json!([10.0, 10.0])
        );
        assert!(ok["metrics"].get("credit_to_start_latency").is_none());
        assert!(ok.get("error").is_none());
        let bad = &lines[150];
        assert_eq!(
            bad["error"],
            serde_json::json!({"code": 500, "type": "Internal Server Error", "message": "boom"})
        );
        assert_eq!(
            bad["metrics"],
            serde_json::json!({"error_isl": {"value": 2, "unit": "tokens"}})
        );
    }
}
