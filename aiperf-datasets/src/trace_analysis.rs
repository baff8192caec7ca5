//! Prefix-cache statistics of a mooncake-style trace (`aiperf analyze-trace`).
//!
//! A trace is JSONL, one request per line: `input_length`, `output_length`, optional
//! `hash_ids` (one id per `block_size`-token block of the prompt) and optional `timestamp`
//! (ms); other keys are ignored. [`analyze_trace_file`] streams the file once and returns
//! an [`AnalysisStats`], the same numbers (and JSON keys) as the Python AIPerf's report,
//! computed for an infinite prefix cache:
//!
//! * `unique_prefixes`: distinct prefixes `hash_ids[..i]` over all requests;
//!   `num_prefix_groups`: distinct first blocks that start at least two requests;
//! * per-request theoretical hit rate (file order): the index of the first hash id not seen
//!   in any earlier request, divided by the number of hash ids (requests without hash ids
//!   are skipped); `cache_hit_rate` is their mean;
//! * `prefix_reuse_ratio`: occurrences of prefixes seen more than once ÷ all occurrences;
//! * context length: a `(position, hash_id)` pair is repeated when it occurs in at least two
//!   requests; a request whose pairs are all repeated has context = ISL and unique prompt 0,
//!   otherwise context = repeated pairs × `block_size` and unique prompt = ISL − context.
//!
//! Distribution statistics use the population standard deviation and numpy's default
//! (linear) percentiles.
//!
//! ```
//! use aiperf_datasets::analyze_trace_reader;
//!
//! let trace = "{\"input_length\": 1000, \"output_length\": 10, \"hash_ids\": [1, 2]}\n\
//!              {\"input_length\": 1100, \"output_length\": 20, \"hash_ids\": [1, 2, 3]}\n";
//! let stats = analyze_trace_reader(trace.as_bytes(), "trace.jsonl", 512)?;
//! assert_eq!(stats.total_requests, 2);
//! assert_eq!(stats.unique_prefixes, 3);
//! assert_eq!(stats.num_prefix_groups, 1);
//! assert!((stats.cache_hit_rate - (0.0 + 2.0 / 3.0) / 2.0).abs() < 1e-12);
//! # Ok::<(), aiperf_datasets::TraceError>(())
//! ```

use std::collections::hash_map::Entry;
use std::collections::HashMap;
use std::fs::File;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Why a trace could not be analysed. Every data error names the file and the line.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// The file could not be opened or read.
    #[error("cannot read trace file {path}: {source}")]
    Io {
        /// The trace file.
        path: PathBuf,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line is not valid JSON, or not a JSON object.
    #[error("{file}:{line}: {message}")]
    Syntax {
        /// The trace file, as named by the caller.
        file: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        message: String,
    },
    /// A field is missing or has the wrong type.
    #[error("{file}:{line}: field \"{field}\": {expected}")]
    Field {
        /// The trace file, as named by the caller.
        file: String,
        /// 1-based line number.
        line: usize,
        /// The JSON key.
        field: &'static str,
        /// What was expected, e.g. `expected an integer`.
        expected: &'static str,
    },
    /// The trace holds no request (empty or only blank lines).
    #[error("trace file {file} holds no requests (it is empty or has only blank lines)")]
    Empty {
        /// The trace file, as named by the caller.
        file: String,
    },
    /// `block_size` was zero.
    #[error("block size must be at least 1")]
    InvalidBlockSize,
}

/// One request of a mooncake-style trace, as far as the analysis needs it.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TraceRecord {
    /// Arrival time in ms, when the line has one.
    pub timestamp: Option<f64>,
    /// Prompt length in tokens (ISL).
    pub input_length: u64,
    /// Requested output length in tokens (OSL).
    pub output_length: u64,
    /// One id per `block_size`-token block of the prompt; empty when the line has none.
    pub hash_ids: Vec<u64>,
}

/// Mean, population standard deviation, min, quartiles (numpy-linear) and max of a sample.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DistributionStats {
    /// Arithmetic mean.
    pub mean: f64,
    /// Population standard deviation (divides by n).
    pub std_dev: f64,
    /// Smallest value.
    pub min: f64,
    /// 25th percentile, linear interpolation.
    pub p25: f64,
    /// 50th percentile, linear interpolation.
    pub median: f64,
    /// 75th percentile, linear interpolation.
    pub p75: f64,
    /// Largest value.
    pub max: f64,
}

impl DistributionStats {
    /// Statistics of `values` (sorted in place); `None` when it is empty or holds a NaN.
    pub fn from_values(values: &mut [f64]) -> Option<Self> {
        if values.is_empty() || values.iter().any(|v| v.is_nan()) {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let variance = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n;
        Some(Self {
            mean,
            std_dev: variance.sqrt(),
            min: values[0],
            p25: aiperf_stats::percentile_sorted(values, 25.0).unwrap_or(f64::NAN),
            median: aiperf_stats::percentile_sorted(values, 50.0).unwrap_or(f64::NAN),
            p75: aiperf_stats::percentile_sorted(values, 75.0).unwrap_or(f64::NAN),
            max: values[values.len() - 1],
        })
    }
}

/// The report of `aiperf analyze-trace`: the Python AIPerf's `AnalysisStats`, key for key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalysisStats {
    /// Requests (non-blank lines).
    pub total_requests: u64,
    /// Distinct hash-id prefixes `hash_ids[..i]`, `i ≥ 1`, over all requests.
    pub unique_prefixes: u64,
    /// Distinct first hash ids shared by at least two requests.
    pub num_prefix_groups: u64,
    /// Mean theoretical hit rate of the requests with hash ids (0 when none has any).
    pub cache_hit_rate: f64,
    /// Smallest input length.
    pub min_isl: u64,
    /// Largest input length.
    pub max_isl: u64,
    /// Mean input length.
    pub avg_isl: f64,
    /// Smallest output length.
    pub min_osl: u64,
    /// Largest output length.
    pub max_osl: u64,
    /// Mean output length.
    pub avg_osl: f64,
    /// Occurrences of prefixes seen more than once ÷ occurrences of all prefixes.
    pub prefix_reuse_ratio: f64,
    /// Input lengths.
    pub isl_stats: Option<DistributionStats>,
    /// Output lengths.
    pub osl_stats: Option<DistributionStats>,
    /// Cacheable context per request.
    pub context_length_stats: Option<DistributionStats>,
    /// Uncached prompt tokens per request.
    pub unique_prompt_length_stats: Option<DistributionStats>,
    /// Theoretical hit rate per request with hash ids.
    pub hit_rate_stats: Option<DistributionStats>,
}

/// A small, fast, non-cryptographic hasher for the integer keys of the analysis
/// (the trace is local data, not an adversary; SipHash would dominate the run time).
#[derive(Debug, Default, Clone, Copy)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.write_u64(u64::from(byte));
        }
    }
    fn write_u32(&mut self, value: u32) {
        self.write_u64(u64::from(value));
    }
    fn write_u64(&mut self, value: u64) {
        self.0 = (self.0.rotate_left(5) ^ value).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
    fn write_usize(&mut self, value: usize) {
        self.write_u64(value as u64);
    }
}

type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

/// Parent of the one-block prefixes in the prefix tree.
const ROOT: u32 = u32::MAX;
/// Marks a `(position, hash_id)` pair already seen in two or more requests.
const REPEATED: u32 = u32::MAX;

/// What is kept per request until the end (the pair counts are only final then).
#[derive(Debug, Clone, Copy)]
struct RequestSummary {
    input_length: u64,
    output_length: u64,
    blocks: u32,
    repeated_pairs: u32,
}

/// Streaming accumulator: [`push`](Self::push) each request in file order, then
/// [`finish`](Self::finish). Memory grows with the distinct prefixes and pairs and a few
/// bytes per request, never with the text of the trace.
#[derive(Debug)]
pub struct TraceAnalyzer {
    block_size: u64,
    requests: Vec<RequestSummary>,
    hit_rates: Vec<f64>,
    /// `(parent prefix id, hash id)` → prefix id.
    prefixes: IdMap<(u32, u64), u32>,
    /// Occurrences per prefix id.
    prefix_counts: Vec<u32>,
    /// Ids of the one-block prefixes.
    first_blocks: Vec<u32>,
    /// Every hash id seen so far, with the first position it was seen at and the state of
    /// that `(position, hash id)` pair. (One map serves both the hit rates and the pairs:
    /// in real traces a hash id nearly always sits at one position.)
    ids: IdMap<u64, PairState>,
    /// The state of the other pairs: hash ids seen at a second position.
    other_pairs: IdMap<(u32, u64), u32>,
}

/// The first position of a hash id and its pair's state.
#[derive(Debug, Clone, Copy)]
struct PairState {
    position: u32,
    /// The one request holding the pair, or [`REPEATED`].
    owner: u32,
}

/// Marks a pair held by one more request as repeated, crediting its first holder when it
/// just became so.
fn touch_pair(owner: &mut u32, requests: &mut [RequestSummary]) {
    if *owner != REPEATED {
        if let Some(first) = requests.get_mut(*owner as usize) {
            first.repeated_pairs += 1;
        }
        *owner = REPEATED;
    }
}

impl TraceAnalyzer {
    /// An analyzer for `block_size`-token cache blocks (mooncake: 512).
    pub fn new(block_size: u64) -> Result<Self, TraceError> {
        if block_size == 0 {
            return Err(TraceError::InvalidBlockSize);
        }
        Ok(Self {
            block_size,
            requests: Vec::new(),
            hit_rates: Vec::new(),
            prefixes: IdMap::default(),
            prefix_counts: Vec::new(),
            first_blocks: Vec::new(),
            ids: IdMap::default(),
            other_pairs: IdMap::default(),
        })
    }

    /// Adds the next request of the trace.
    pub fn push(&mut self, record: &TraceRecord) {
        let index = u32::try_from(self.requests.len()).unwrap_or(REPEATED - 1);
        let hash_ids = &record.hash_ids;

        // Theoretical hit rate against every earlier request.
        if !hash_ids.is_empty() {
            let hits = hash_ids
                .iter()
                .position(|id| !self.ids.contains_key(id))
                .unwrap_or(hash_ids.len());
            self.hit_rates.push(hits as f64 / hash_ids.len() as f64);
        }

        let mut repeated_pairs = 0u32;
        let mut parent = ROOT;
        for (position, &id) in hash_ids.iter().enumerate() {
            // Prefix tree: one node per distinct prefix.
            let next_id = self.prefix_counts.len() as u32;
            let node = *self.prefixes.entry((parent, id)).or_insert(next_id);
            if node == next_id {
                self.prefix_counts.push(0);
                if parent == ROOT {
                    self.first_blocks.push(node);
                }
            }
            self.prefix_counts[node as usize] += 1;
            parent = node;

            // (position, hash id) pairs: repeated once a second request holds one.
            let position = u32::try_from(position).unwrap_or(u32::MAX);
            match self.ids.entry(id) {
                Entry::Vacant(slot) => {
                    slot.insert(PairState {
                        position,
                        owner: index,
                    });
                }
                Entry::Occupied(mut slot) if slot.get().position == position => {
                    touch_pair(&mut slot.get_mut().owner, &mut self.requests);
                    repeated_pairs += 1;
                }
                Entry::Occupied(_) => match self.other_pairs.entry((position, id)) {
                    Entry::Vacant(slot) => {
                        slot.insert(index);
                    }
                    Entry::Occupied(mut slot) => {
                        touch_pair(slot.get_mut(), &mut self.requests);
                        repeated_pairs += 1;
                    }
                },
            }
        }

        self.requests.push(RequestSummary {
            input_length: record.input_length,
            output_length: record.output_length,
            blocks: u32::try_from(hash_ids.len()).unwrap_or(u32::MAX),
            repeated_pairs,
        });
    }

    /// Requests pushed so far.
    pub fn len(&self) -> usize {
        self.requests.len()
    }

    /// Whether no request was pushed yet.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty()
    }

    /// The statistics; `None` when no request was pushed.
    pub fn finish(self) -> Option<AnalysisStats> {
        let requests = &self.requests;
        if requests.is_empty() {
            return None;
        }
        let n = requests.len() as f64;
        let block_size = self.block_size as f64;

        let mut isl: Vec<f64> = requests.iter().map(|r| r.input_length as f64).collect();
        let mut osl: Vec<f64> = requests.iter().map(|r| r.output_length as f64).collect();
        let (mut context, mut unique): (Vec<f64>, Vec<f64>) = requests
            .iter()
            .map(|r| {
                let input = r.input_length as f64;
                if r.blocks > 0 && r.repeated_pairs == r.blocks {
                    (input, 0.0)
                } else {
                    let context = f64::from(r.repeated_pairs) * block_size;
                    (context, input - context)
                }
            })
            .unzip();

        let total_occurrences: u64 = self.prefix_counts.iter().map(|&c| u64::from(c)).sum();
        let reused_occurrences: u64 = self
            .prefix_counts
            .iter()
            .filter(|&&c| c > 1)
            .map(|&c| u64::from(c))
            .sum();
        let num_prefix_groups = self
            .first_blocks
            .iter()
            .filter(|&&node| self.prefix_counts[node as usize] >= 2)
            .count() as u64;

        let cache_hit_rate = if self.hit_rates.is_empty() {
            0.0
        } else {
            self.hit_rates.iter().sum::<f64>() / self.hit_rates.len() as f64
        };
        let mut hit_rates = self.hit_rates.clone();

        Some(AnalysisStats {
            total_requests: requests.len() as u64,
            unique_prefixes: self.prefix_counts.len() as u64,
            num_prefix_groups,
            cache_hit_rate,
            min_isl: requests.iter().map(|r| r.input_length).min().unwrap_or(0),
            max_isl: requests.iter().map(|r| r.input_length).max().unwrap_or(0),
            avg_isl: isl.iter().sum::<f64>() / n,
            min_osl: requests.iter().map(|r| r.output_length).min().unwrap_or(0),
            max_osl: requests.iter().map(|r| r.output_length).max().unwrap_or(0),
            avg_osl: osl.iter().sum::<f64>() / n,
            prefix_reuse_ratio: if total_occurrences == 0 {
                0.0
            } else {
                reused_occurrences as f64 / total_occurrences as f64
            },
            isl_stats: DistributionStats::from_values(&mut isl),
            osl_stats: DistributionStats::from_values(&mut osl),
            context_length_stats: DistributionStats::from_values(&mut context),
            unique_prompt_length_stats: DistributionStats::from_values(&mut unique),
            hit_rate_stats: DistributionStats::from_values(&mut hit_rates),
        })
    }
}

/// The shape of a well-formed line, parsed without building a `Value` tree (the fast path;
/// anything it rejects is parsed again by [`parse_trace_line_slow`] for a precise error).
#[derive(Deserialize)]
struct WellFormedLine {
    input_length: u64,
    output_length: u64,
    #[serde(default)]
    timestamp: Option<f64>,
    #[serde(default)]
    hash_ids: Option<Vec<u64>>,
}

/// Parses one non-blank trace line; `file` and `line` only label the error.
pub fn parse_trace_line(text: &str, file: &str, line: usize) -> Result<TraceRecord, TraceError> {
    // serde would also accept a struct written as a JSON array: only objects take the fast path.
    let fast = if text.starts_with('{') {
        serde_json::from_str::<WellFormedLine>(text).ok()
    } else {
        None
    };
    match fast {
        Some(fast) => Ok(TraceRecord {
            timestamp: fast.timestamp,
            input_length: fast.input_length,
            output_length: fast.output_length,
            hash_ids: fast.hash_ids.unwrap_or_default(),
        }),
        None => parse_trace_line_slow(text, file, line),
    }
}

/// Field-by-field parse through a `Value`, naming the field that is wrong.
fn parse_trace_line_slow(text: &str, file: &str, line: usize) -> Result<TraceRecord, TraceError> {
    let field_error = |field: &'static str, expected: &'static str| TraceError::Field {
        file: file.to_owned(),
        line,
        field,
        expected,
    };
    let value: Value = serde_json::from_str(text).map_err(|error| TraceError::Syntax {
        file: file.to_owned(),
        line,
        message: format!("invalid JSON at column {}: {error}", error.column()),
    })?;
    let Value::Object(mut object) = value else {
        return Err(TraceError::Syntax {
            file: file.to_owned(),
            line,
            message: "expected a JSON object".to_owned(),
        });
    };

    let integer = |value: Option<&Value>, field: &'static str| match value {
        None => Err(field_error(field, "missing (required)")),
        Some(value) => value
            .as_u64()
            .ok_or_else(|| field_error(field, "expected an integer")),
    };
    let input_length = integer(object.get("input_length"), "input_length")?;
    let output_length = integer(object.get("output_length"), "output_length")?;
    let timestamp = match object.get("timestamp") {
        None | Some(Value::Null) => None,
        Some(value) => Some(
            value
                .as_f64()
                .ok_or_else(|| field_error("timestamp", "expected a number (ms)"))?,
        ),
    };
    let hash_ids = match object.remove("hash_ids") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(Value::as_u64)
            .collect::<Option<Vec<u64>>>()
            .ok_or_else(|| field_error("hash_ids", "expected a list of integers"))?,
        Some(_) => return Err(field_error("hash_ids", "expected a list of integers")),
    };
    Ok(TraceRecord {
        timestamp,
        input_length,
        output_length,
        hash_ids,
    })
}

/// Analyses a trace read from `reader`, line by line; `file` names it in errors.
pub fn analyze_trace_reader<R: BufRead>(
    mut reader: R,
    file: &str,
    block_size: u64,
) -> Result<AnalysisStats, TraceError> {
    let mut analyzer = TraceAnalyzer::new(block_size)?;
    crate::text_file::skip_bom(&mut reader).map_err(|source| TraceError::Io {
        path: PathBuf::from(file),
        source,
    })?;
    let mut buffer = String::new();
    let mut line = 0usize;
    loop {
        buffer.clear();
        let read = reader
            .read_line(&mut buffer)
            .map_err(|source| TraceError::Io {
                path: PathBuf::from(file),
                source,
            })?;
        if read == 0 {
            break;
        }
        line += 1;
        let text = buffer.trim();
        if text.is_empty() {
            continue;
        }
        analyzer.push(&parse_trace_line(text, file, line)?);
    }
    analyzer.finish().ok_or_else(|| TraceError::Empty {
        file: file.to_owned(),
    })
}

/// Analyses the trace file at `path` (streamed, read once).
pub fn analyze_trace_file(path: &Path, block_size: u64) -> Result<AnalysisStats, TraceError> {
    let handle = File::open(path).map_err(|source| TraceError::Io {
        path: path.to_owned(),
        source,
    })?;
    let reader = BufReader::with_capacity(1 << 20, handle);
    analyze_trace_reader(reader, &path.display().to_string(), block_size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::Instant;

    fn shared(relative: &str) -> Option<PathBuf> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared")
            .join(relative);
        if path.exists() {
            return Some(path);
        }
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "{} is missing and CI=true",
            path.display()
        );
        eprintln!("skipping: {} not found", path.display());
        None
    }

    fn close(actual: f64, expected: f64) -> bool {
        (actual - expected).abs() <= 1e-9 * expected.abs().max(1e-300)
    }

    fn assert_stats_equal(actual: &Value, expected: &Value, key: &str) {
        match (actual, expected) {
            (Value::Object(a), Value::Object(e)) => {
                assert_eq!(
                    a.keys().collect::<Vec<_>>(),
                    e.keys().collect::<Vec<_>>(),
                    "keys of {key}"
                );
                for (k, v) in e {
                    assert_stats_equal(&a[k], v, &format!("{key}.{k}"));
                }
            }
            (Value::Number(a), Value::Number(e)) if e.is_u64() => {
                assert_eq!(a.as_u64(), e.as_u64(), "{key}");
            }
            (Value::Number(a), Value::Number(e)) => {
                let (a, e) = (a.as_f64().unwrap(), e.as_f64().unwrap());
                assert!(close(a, e), "{key}: {a} != {e}");
            }
            _ => assert_eq!(actual, expected, "{key}"),
        }
    }

    #[test]
    fn example_trace_matches_the_python_report_number_for_number() {
        let (Some(trace), Some(report)) = (
            shared("traces/mooncake_synthetic_trace.jsonl"),
            shared("examples/analyze-trace/mooncake_synthetic_trace.report.json"),
        ) else {
            return;
        };
        let stats = analyze_trace_file(&trace, 512).unwrap();
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(report).unwrap()).unwrap();
        let actual = serde_json::to_value(&stats).unwrap();
        assert_stats_equal(&actual, &expected, "report");
        assert_eq!(stats.total_requests, 3993);
        assert_eq!(stats.unique_prefixes, 43924);
        assert_eq!(stats.num_prefix_groups, 408);
    }

    #[test]
    fn small_trace_by_hand() {
        let trace = "{\"timestamp\": 0, \"input_length\": 1200, \"output_length\": 5, \"hash_ids\": [1, 2, 3]}\n\
                     \n\
                     {\"timestamp\": 10, \"input_length\": 1100, \"output_length\": 7, \"hash_ids\": [1, 2, 4]}\n\
                     {\"input_length\": 30, \"output_length\": 9}\n\
                     {\"input_length\": 600, \"output_length\": 1, \"hash_ids\": [1, 2]}\n";
        let stats = analyze_trace_reader(trace.as_bytes(), "t.jsonl", 512).unwrap();
        assert_eq!(stats.total_requests, 4);
        // [1], [1,2], [1,2,3], [1,2,4]
        assert_eq!(stats.unique_prefixes, 4);
        assert_eq!(stats.num_prefix_groups, 1);
        // hit rates: 0, 2/3, 1
        assert!(close(stats.cache_hit_rate, (2.0 / 3.0 + 1.0) / 3.0));
        // prefix counts: [1]:3, [1,2]:3, [1,2,3]:1, [1,2,4]:1
        assert!(close(stats.prefix_reuse_ratio, 6.0 / 8.0));
        // context: 1024, 1024, 0, 600 (all repeated); unique: 176, 76, 30, 0
        let context = stats.context_length_stats.unwrap();
        assert!(close(context.mean, (1024.0 * 2.0 + 600.0) / 4.0));
        assert_eq!(context.min, 0.0);
        assert_eq!(context.max, 1024.0);
        let unique = stats.unique_prompt_length_stats.unwrap();
        assert!(close(unique.mean, (176.0 + 76.0 + 30.0) / 4.0));
        assert_eq!((stats.min_isl, stats.max_isl), (30, 1200));
        assert_eq!((stats.min_osl, stats.max_osl), (1, 9));
    }

    #[test]
    fn a_hash_id_at_two_positions_is_two_pairs() {
        // (0,7) and (1,7) in the first request; the second holds (0,7) and (1,8).
        let trace = "{\"input_length\": 1000, \"output_length\": 1, \"hash_ids\": [7, 7]}\n\
                     {\"input_length\": 1000, \"output_length\": 1, \"hash_ids\": [7, 8]}\n\
                     {\"input_length\": 1000, \"output_length\": 1, \"hash_ids\": [9, 7]}\n";
        let stats = analyze_trace_reader(trace.as_bytes(), "t.jsonl", 512).unwrap();
        // repeated pairs: (0,7) in requests 1 and 2, (1,7) in requests 1 and 3.
        let context = stats.context_length_stats.unwrap();
        assert_eq!(context.max, 1000.0); // request 1: all pairs repeated → ISL
        assert!(close(context.mean, (1000.0 + 512.0 + 512.0) / 3.0));
        // hit rates: 0 (7 unseen), 1/2 (8 unseen), 0 (9 unseen)
        assert!(close(stats.cache_hit_rate, 0.5 / 3.0));
    }

    #[test]
    fn numpy_linear_percentiles_and_population_std() {
        let mut values = [4.0, 1.0, 3.0, 2.0];
        let stats = DistributionStats::from_values(&mut values).unwrap();
        assert_eq!((stats.p25, stats.median, stats.p75), (1.75, 2.5, 3.25));
        assert!(close(stats.std_dev, 1.25f64.sqrt()));
        assert!(DistributionStats::from_values(&mut []).is_none());
    }

    #[test]
    fn malformed_lines_name_file_line_and_field() {
        let cases = [
            (
                "{\"input_length\": \"x\", \"output_length\": 1}",
                "t.jsonl:2: field \"input_length\": expected an integer",
            ),
            (
                "{\"input_length\": 5}",
                "t.jsonl:2: field \"output_length\": missing (required)",
            ),
            (
                "{\"input_length\": 5, \"output_length\": 1, \"hash_ids\": [1, \"a\"]}",
                "t.jsonl:2: field \"hash_ids\": expected a list of integers",
            ),
            (
                "{\"input_length\": 5, \"output_length\": 1, \"timestamp\": \"now\"}",
                "t.jsonl:2: field \"timestamp\": expected a number (ms)",
            ),
            ("[1, 2]", "t.jsonl:2: expected a JSON object"),
        ];
        for (bad, message) in cases {
            let trace = format!("{{\"input_length\": 5, \"output_length\": 1}}\n{bad}\n");
            let error = analyze_trace_reader(trace.as_bytes(), "t.jsonl", 512).unwrap_err();
            assert_eq!(error.to_string(), message);
        }
        let error = analyze_trace_reader("\n\n{oops\n".as_bytes(), "t.jsonl", 512).unwrap_err();
        assert!(
            error
                .to_string()
                .starts_with("t.jsonl:3: invalid JSON at column 2"),
            "{error}"
        );
    }

    #[test]
    fn empty_trace_and_missing_file_are_clear_errors() {
        let error = analyze_trace_reader("\n  \n".as_bytes(), "e.jsonl", 512).unwrap_err();
        assert_eq!(
            error.to_string(),
            "trace file e.jsonl holds no requests (it is empty or has only blank lines)"
        );
        let error = analyze_trace_file(Path::new("/nonexistent/x.jsonl"), 512).unwrap_err();
        assert!(error
            .to_string()
            .starts_with("cannot read trace file /nonexistent/x.jsonl"));
        assert!(matches!(
            TraceAnalyzer::new(0),
            Err(TraceError::InvalidBlockSize)
        ));
    }

    /// `cargo test -p aiperf-datasets --release -- --ignored one_million --nocapture`
    #[test]
    #[ignore = "timing: writes and analyses a 1,000,000-line trace"]
    fn one_million_lines() {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        {
            let mut out = std::io::BufWriter::new(file.as_file_mut());
            let mut next_id = 0u64;
            for i in 0..1_000_000u64 {
                // 1 in 4 requests reuse a shared 8-block prefix of one of 100 groups.
                let blocks = 4 + i % 28;
                let mut ids: Vec<u64> = Vec::new();
                if i % 4 == 0 {
                    ids.extend((0..8).map(|b| 10_000_000_000 + (i % 100) * 8 + b));
                }
                while (ids.len() as u64) < blocks {
                    ids.push(next_id);
                    next_id += 1;
                }
                let list: Vec<String> = ids.iter().map(u64::to_string).collect();
                writeln!(
                    out,
                    "{{\"timestamp\": {i}, \"input_length\": {}, \"output_length\": {}, \"hash_ids\": [{}]}}",
                    blocks * 512 - 100,
                    1 + i % 500,
                    list.join(", ")
                )
                .unwrap();
            }
            out.flush().unwrap();
        }
        let started = Instant::now();
        let reader = std::io::BufReader::new(File::open(file.path()).unwrap());
        let mut blocks = 0usize;
        for (i, line) in reader.lines().enumerate() {
            blocks += parse_trace_line(&line.unwrap(), "t", i + 1)
                .unwrap()
                .hash_ids
                .len();
        }
        eprintln!("parse only ({blocks} hash ids): {:.2?}", started.elapsed());
        let started = Instant::now();
        let stats = analyze_trace_file(file.path(), 512).unwrap();
        eprintln!(
            "1M-line trace ({} MB): {:.2?}",
            file.as_file().metadata().unwrap().len() / 1_000_000,
            started.elapsed()
        );
        assert_eq!(stats.total_requests, 1_000_000);
    }
}
