//! The unit of a server metric, inferred from its HELP text and its name, by the rules of
//! the Python AIPerf 0.13 (`server_metrics/units.py`), so both tools label the same metric
//! the same way in `server_metrics_export.{json,csv}`.
//!
//! Three sources, first hit wins:
//! 1. a range in the description: `(0-1)`, `0.0 to 1.0`, `1 means 100 percent` → `ratio`;
//!    `(0-100)`, `0-100%` → `percent`;
//! 2. a unit in the description: first a DCGM-style `(in <unit>)` tag ([`UNIT_TAGS`],
//!    case-sensitive), then phrases such as `in seconds`, `(ms)`, `in tokens/s`;
//! 3. the metric name: the longest matching suffix of [`NAME_SUFFIXES`] (case-insensitive),
//!    then the pattern `*num_requests_*`.
//!
//! The rules are generic, not per server: they cover vLLM (`vllm:*_seconds`,
//! `vllm:num_requests_*`, `vllm:*_usage_perc` whose HELP says "1 means 100 percent"),
//! SGLang (`sglang:*_reqs`), TensorRT-LLM (`*request_success`), llama.cpp
//! (`llamacpp:*_tokens_seconds`, "throughput in tokens/s") and Dynamo
//! (`dynamo_*_seconds`, `*_requests`) through the same tables.
//!
//! Counter names arrive here without their `_total` (see
//! [`crate::export::server::display_name`]), as in the Python tool, so `_total` itself only
//! ever labels gauges and untyped metrics.
//!
//! ```
//! use aiperf_telemetry::units::infer_unit;
//!
//! let help = "Average prompt throughput in tokens/s";
//! assert_eq!(infer_unit("llamacpp:prompt_tokens_seconds", Some(help)), Some("tokens/s"));
//! assert_eq!(infer_unit("llamacpp:prompt_seconds", None), Some("seconds"));
//! assert_eq!(infer_unit("llamacpp:n_decode", None), None);
//! ```

use std::sync::OnceLock;

use regex::Regex;

/// Metric-name suffixes and their units; the longest matching suffix wins.
pub const NAME_SUFFIXES: &[(&str, &str)] = &[
    // time
    ("_seconds", "seconds"),
    ("_seconds_total", "seconds"),
    ("_milliseconds", "milliseconds"),
    ("_ms", "milliseconds"),
    ("_ms_total", "milliseconds"),
    ("_nanoseconds", "nanoseconds"),
    ("_ns", "nanoseconds"),
    ("_ns_total", "nanoseconds"),
    // size
    ("_bytes", "bytes"),
    ("_kilobytes", "kilobytes"),
    ("_megabytes", "megabytes"),
    ("_gigabytes", "gigabytes"),
    ("_bytes_total", "bytes"),
    // counts
    ("_total", "count"),
    ("_count", "count"),
    ("_tokens", "tokens"),
    ("_tokens_total", "tokens"),
    ("_requests", "requests"),
    ("_requests_total", "requests"),
    ("request_success", "requests"),
    ("_errors", "errors"),
    ("_errors_total", "errors"),
    ("_error_count", "errors"),
    ("_error_count_total", "errors"),
    ("_reqs", "requests"),
    ("_blocks", "blocks"),
    ("_blocks_total", "blocks"),
    ("_block_count", "blocks"),
    // rates (unambiguous suffixes only)
    ("_gb_s", "gb/s"),
    // ratio and percent
    ("_ratio", "ratio"),
    ("_percent", "percent"),
    ("_perc", "percent"),
    // physical
    ("_celsius", "celsius"),
    ("_joules", "joule"),
    ("_watts", "watt"),
];

/// A name containing this (case-insensitive) counts requests (the glob `*num_requests_*`).
pub const NUM_REQUESTS_INFIX: &str = "num_requests_";

/// Unit tags of a DCGM-style `(in <tag>)` in a description (case-sensitive: `mJ` ≠ `MJ`).
pub const UNIT_TAGS: &[(&str, &str)] = &[
    ("MiB", "megabytes"),
    ("GiB", "gigabytes"),
    ("KiB", "kilobytes"),
    ("B", "bytes"),
    ("MB", "megabytes"),
    ("GB", "gigabytes"),
    ("KB", "kilobytes"),
    ("TB", "terabytes"),
    ("C", "celsius"),
    ("°C", "celsius"),
    ("F", "fahrenheit"),
    ("°F", "fahrenheit"),
    ("K", "kelvin"),
    ("Hz", "hertz"),
    ("MHz", "megahertz"),
    ("GHz", "gigahertz"),
    ("W", "watt"),
    ("mW", "milliwatt"),
    ("J", "joule"),
    ("mJ", "millijoule"),
    ("MJ", "megajoule"),
    ("s", "seconds"),
    ("sec", "seconds"),
    ("ms", "milliseconds"),
    ("ns", "nanoseconds"),
    ("us", "microseconds"),
    ("µs", "microseconds"),
    ("GB/s", "gb/s"),
    ("MB/s", "mb/s"),
    ("%", "percent"),
    ("percent", "percent"),
];

/// Description phrases (case-insensitive regexes, checked in order) and their units.
pub const DESCRIPTION_PATTERNS: &[(&str, &str)] = &[
    (r"(?:\bin\s+|\()seconds?(?:\b|\))", "seconds"),
    (
        r"(?:\bin\s+|\()(?:milliseconds?|ms)(?:\b|\))",
        "milliseconds",
    ),
    (r"(?:\bin\s+|\()(?:nanoseconds?|ns)(?:\b|\))", "nanoseconds"),
    (r"(?:\bin\s+|\()bytes?(?:\b|\))", "bytes"),
    (r"(?:\bin\s+|\()GB/s(?:\b|\))", "gb/s"),
    (r"(?:\bin\s+|\()MB/s(?:\b|\))", "mb/s"),
    (
        r"(?:\bin\s+|\()tokens?/s(?:ec(?:ond)?)?(?:\b|\))",
        "tokens/s",
    ),
    (
        r"(?:\bin\s+|\()requests?/s(?:ec(?:ond)?)?(?:\b|\))",
        "requests/s",
    ),
    (r"\bin\s+tokens?\b", "tokens"),
];

/// A 0–1 range in a description (case-insensitive).
const RATIO_RANGE: &str = concat!(
    r"\(0(?:\.0)?\s*(?:[-–—]+|to)\s*1(?:\.0)?\)",
    r"|\b0(?:\.0)?\s*(?:[-–—]+|to)\s*1(?:\.0)?\b",
    r"|\brange\s+0(?:\.0)?\s*(?:[-–—]+|to)\s*1(?:\.0)?\b",
    r"|(?:\b|\()1(?:\.0)?\s*(?:means|is|equals?|==?)\s*100\s*(?:%|percent)",
);

/// A 0–100 range in a description (case-insensitive).
const PERCENT_RANGE: &str = concat!(
    r"\(0(?:\.0)?\s*(?:[-–—]+|to)\s*100(?:\.0)?\)",
    r"|\brange\s+0\s*(?:[-–—]+|to)\s*100\b",
    r"|\b0\s*(?:[-–—]+|to)\s*100\s*%",
);

/// `(in <tag>)`, case-sensitive.
const PARENTHETICAL_IN: &str = r"\(in\s+([^\s)]+)\)";

struct Compiled {
    ratio: Regex,
    percent: Regex,
    parenthetical: Regex,
    phrases: Vec<(Regex, &'static str)>,
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        // The patterns are constants checked by the tests below, so building them cannot
        // fail at run time.
        let ci = |p: &str| {
            regex::RegexBuilder::new(p)
                .case_insensitive(true)
                .build()
                .expect("constant unit pattern")
        };
        Compiled {
            ratio: ci(RATIO_RANGE),
            percent: ci(PERCENT_RANGE),
            parenthetical: Regex::new(PARENTHETICAL_IN).expect("constant unit pattern"),
            phrases: DESCRIPTION_PATTERNS
                .iter()
                .map(|&(p, unit)| (ci(p), unit))
                .collect(),
        }
    })
}

/// The unit of metric `name` with HELP text `description`, as the Python AIPerf 0.13 names
/// it (`seconds`, `tokens/s`, `ratio`, …), or `None` when no rule applies. `name` is the
/// exported name (counters without `_total`).
pub fn infer_unit(name: &str, description: Option<&str>) -> Option<&'static str> {
    let description = description.filter(|d| !d.is_empty());
    description
        .and_then(unit_from_scale)
        .or_else(|| description.and_then(unit_from_description))
        .or_else(|| unit_from_name(name))
}

/// Rule 1: `ratio` for a 0–1 range, `percent` for a 0–100 range.
pub fn unit_from_scale(description: &str) -> Option<&'static str> {
    let c = compiled();
    if c.ratio.is_match(description) {
        Some("ratio")
    } else if c.percent.is_match(description) {
        Some("percent")
    } else {
        None
    }
}

/// Rule 2: an `(in <tag>)` of [`UNIT_TAGS`], else the first of [`DESCRIPTION_PATTERNS`].
/// An `(in <tag>)` with an unknown tag does not stop the phrase patterns.
pub fn unit_from_description(description: &str) -> Option<&'static str> {
    let c = compiled();
    let tagged = c
        .parenthetical
        .captures(description)
        .and_then(|m| m.get(1))
        .and_then(|tag| {
            UNIT_TAGS
                .iter()
                .find(|(t, _)| *t == tag.as_str().trim())
                .map(|(_, u)| *u)
        });
    tagged.or_else(|| {
        c.phrases
            .iter()
            .find(|(re, _)| re.is_match(description))
            .map(|(_, u)| *u)
    })
}

/// Rule 3: the longest suffix of [`NAME_SUFFIXES`], then [`NUM_REQUESTS_INFIX`].
pub fn unit_from_name(name: &str) -> Option<&'static str> {
    let lower = name.to_lowercase();
    NAME_SUFFIXES
        .iter()
        .filter(|(suffix, _)| lower.ends_with(suffix))
        .max_by_key(|(suffix, _)| suffix.len())
        .map(|(_, unit)| *unit)
        .or_else(|| lower.contains(NUM_REQUESTS_INFIX).then_some("requests"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pattern_compiles() {
        let c = compiled();
        assert_eq!(c.phrases.len(), DESCRIPTION_PATTERNS.len());
    }

    #[test]
    fn name_suffixes_longest_first() {
        assert_eq!(unit_from_name("x_seconds"), Some("seconds"));
        assert_eq!(unit_from_name("x_seconds_total"), Some("seconds"));
        assert_eq!(unit_from_name("x_milliseconds"), Some("milliseconds"));
        assert_eq!(unit_from_name("x_ms"), Some("milliseconds"));
        assert_eq!(unit_from_name("x_ms_total"), Some("milliseconds"));
        assert_eq!(unit_from_name("x_nanoseconds"), Some("nanoseconds"));
        assert_eq!(unit_from_name("x_ns"), Some("nanoseconds"));
        assert_eq!(unit_from_name("x_ns_total"), Some("nanoseconds"));
        assert_eq!(unit_from_name("x_bytes"), Some("bytes"));
        assert_eq!(unit_from_name("x_bytes_total"), Some("bytes"));
        assert_eq!(unit_from_name("x_kilobytes"), Some("kilobytes"));
        assert_eq!(unit_from_name("x_megabytes"), Some("megabytes"));
        assert_eq!(unit_from_name("x_gigabytes"), Some("gigabytes"));
        // `_total` alone is a count, but a longer compound suffix wins.
        assert_eq!(unit_from_name("x_total"), Some("count"));
        assert_eq!(unit_from_name("x_count"), Some("count"));
        assert_eq!(unit_from_name("x_tokens"), Some("tokens"));
        assert_eq!(unit_from_name("x_tokens_total"), Some("tokens"));
        assert_eq!(unit_from_name("x_requests"), Some("requests"));
        assert_eq!(unit_from_name("x_requests_total"), Some("requests"));
        assert_eq!(unit_from_name("x_errors"), Some("errors"));
        assert_eq!(unit_from_name("x_errors_total"), Some("errors"));
        assert_eq!(unit_from_name("x_error_count"), Some("errors"));
        assert_eq!(unit_from_name("x_error_count_total"), Some("errors"));
        assert_eq!(unit_from_name("x_blocks"), Some("blocks"));
        assert_eq!(unit_from_name("x_blocks_total"), Some("blocks"));
        assert_eq!(unit_from_name("x_block_count"), Some("blocks"));
        assert_eq!(unit_from_name("x_gb_s"), Some("gb/s"));
        assert_eq!(unit_from_name("x_ratio"), Some("ratio"));
        assert_eq!(unit_from_name("x_percent"), Some("percent"));
        assert_eq!(unit_from_name("x_perc"), Some("percent"));
        assert_eq!(unit_from_name("x_celsius"), Some("celsius"));
        assert_eq!(unit_from_name("x_joules"), Some("joule"));
        assert_eq!(unit_from_name("x_watts"), Some("watt"));
        // Case-insensitive; the `*num_requests_*` glob after the suffixes.
        assert_eq!(unit_from_name("X_SECONDS"), Some("seconds"));
        assert_eq!(
            unit_from_name("vllm:num_requests_waiting"),
            Some("requests")
        );
        assert_eq!(unit_from_name("num_requests"), Some("requests")); // the `_requests` suffix
        assert_eq!(unit_from_name("requests_num"), None);
        assert_eq!(unit_from_name("running"), None);
    }

    #[test]
    fn description_scale_overrides_everything() {
        for d in [
            "Hit rate (0-1)",
            "Hit rate (0.0-1.0)",
            "Hit rate (0 to 1)",
            "a value 0.0 – 1.0",
            "in the range 0 to 1",
            "GPU KV-cache usage. 1 means 100 percent usage.",
            "1.0 = 100%",
        ] {
            assert_eq!(unit_from_scale(d), Some("ratio"), "{d}");
        }
        for d in ["Usage (0-100)", "range 0 to 100", "between 0-100%"] {
            assert_eq!(unit_from_scale(d), Some("percent"), "{d}");
        }
        assert_eq!(unit_from_scale("Number of requests"), None);
        // A `_percent` name with a 0–1 description is a ratio; with "in seconds" a ratio too.
        assert_eq!(
            infer_unit("cache_hit_percent", Some("Hit rate (0.0-1.0)")),
            Some("ratio")
        );
    }

    #[test]
    fn description_units() {
        let cases = [
            ("Power draw (in W).", "watt"),
            ("Energy (in mJ)", "millijoule"),
            ("Energy (in MJ)", "megajoule"),
            ("Framebuffer memory used (in MiB).", "megabytes"),
            ("GPU temperature (in C).", "celsius"),
            ("SM clock frequency (in MHz).", "megahertz"),
            ("GPU utilization (in %).", "percent"),
            ("Latency (in us)", "microseconds"),
            ("Request latency in seconds", "seconds"),
            ("Time (seconds)", "seconds"),
            ("Latency in milliseconds", "milliseconds"),
            ("Latency (ms)", "milliseconds"),
            ("Latency in ns", "nanoseconds"),
            ("Size in bytes", "bytes"),
            ("Bandwidth in GB/s", "gb/s"),
            ("Bandwidth (MB/s)", "mb/s"),
            ("Average generation throughput in tokens/s", "tokens/s"),
            ("Throughput (tokens/sec)", "tokens/s"),
            ("Rate in requests/second", "requests/s"),
            ("Prompt length in tokens", "tokens"),
        ];
        for (d, unit) in cases {
            assert_eq!(unit_from_description(d), Some(unit), "{d}");
        }
        // An unknown `(in …)` tag falls through to the phrases; case-sensitive tags.
        assert_eq!(unit_from_description("Size (in furlongs)"), None);
        assert_eq!(unit_from_description("Energy (in mj)"), None);
        assert_eq!(unit_from_description("Number of requests deferred"), None);
    }

    #[test]
    fn serving_stacks() {
        // llama.cpp (its HELP texts as llama-server serves them).
        let llama = [
            (
                "llamacpp:prompt_tokens",
                "Number of prompt tokens processed, excluding cached tokens",
                Some("tokens"),
            ),
            (
                "llamacpp:prompt_tokens_cached",
                "Number of prompt tokens reused from the cache",
                None,
            ),
            (
                "llamacpp:prompt_seconds",
                "Total time spent processing prompts",
                Some("seconds"),
            ),
            (
                "llamacpp:tokens_predicted",
                "Number of generation tokens processed",
                None,
            ),
            (
                "llamacpp:tokens_predicted_seconds",
                "Total time spent generating tokens",
                Some("seconds"),
            ),
            (
                "llamacpp:n_decode",
                "Total number of llama_decode() calls",
                None,
            ),
            (
                "llamacpp:prompt_tokens_seconds",
                "Average prompt throughput in tokens/s",
                Some("tokens/s"),
            ),
            (
                "llamacpp:predicted_tokens_seconds",
                "Average generation throughput in tokens/s",
                Some("tokens/s"),
            ),
            (
                "llamacpp:requests_processing",
                "Number of requests processing",
                None,
            ),
            (
                "llamacpp:spec_decode_num_draft_tokens",
                "Speculative: Total draft tokens generated",
                Some("tokens"),
            ),
        ];
        for (name, help, unit) in llama {
            assert_eq!(infer_unit(name, Some(help)), unit, "{name}");
        }
        // vLLM.
        assert_eq!(
            infer_unit(
                "vllm:gpu_cache_usage_perc",
                Some("GPU KV-cache usage. 1 means 100 percent usage.")
            ),
            Some("ratio")
        );
        assert_eq!(
            infer_unit("vllm:gpu_cache_usage_perc", None),
            Some("percent")
        );
        assert_eq!(
            infer_unit(
                "vllm:num_requests_running",
                Some("Number of requests in model execution batches.")
            ),
            Some("requests")
        );
        assert_eq!(
            infer_unit(
                "vllm:time_to_first_token_seconds",
                Some("Histogram of time to first token in seconds.")
            ),
            Some("seconds")
        );
        assert_eq!(
            infer_unit(
                "vllm:prompt_tokens",
                Some("Number of prefill tokens processed.")
            ),
            Some("tokens")
        );
        // SGLang.
        assert_eq!(
            infer_unit(
                "sglang:num_running_reqs",
                Some("The number of running requests.")
            ),
            Some("requests")
        );
        assert_eq!(
            infer_unit("sglang:cache_hit_rate", Some("The prefix cache hit rate.")),
            None
        );
        // TensorRT-LLM.
        assert_eq!(infer_unit("trtllm:request_success", None), Some("requests"));
        assert_eq!(
            infer_unit("trtllm:e2e_request_latency_seconds", None),
            Some("seconds")
        );
        // Dynamo.
        assert_eq!(
            infer_unit("dynamo_frontend_requests", None),
            Some("requests")
        );
        assert_eq!(
            infer_unit("dynamo_frontend_inter_token_latency_seconds", None),
            Some("seconds")
        );
        assert_eq!(
            infer_unit("dynamo_component_kvstats_gpu_cache_usage_percent", None),
            Some("percent")
        );
        // An empty description is no description.
        assert_eq!(infer_unit("x_seconds", Some("")), Some("seconds"));
    }
}
