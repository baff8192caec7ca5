//! The SPEED-Bench variants of `--custom-dataset-type speed_bench_*`: NVIDIA's
//! speculative-decoding benchmark (`nvidia/SPEED-Bench` on the Hugging Face hub), one
//! config per split, each row tagged with a category that a variant may select.

/// The Hugging Face dataset the variants read when no `--input-file` is given.
pub const SPEED_BENCH_HUB_ID: &str = "nvidia/SPEED-Bench";

/// The split (within each config) that holds the rows.
pub const SPEED_BENCH_HUB_SPLIT: &str = "test";

/// One `speed_bench_*` dataset: a SPEED-Bench config, optionally narrowed to the rows of
/// one category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SpeedBenchVariant {
    /// The `--custom-dataset-type` spelling, `speed_bench_<suffix>`.
    pub name: &'static str,
    /// The SPEED-Bench config (and the file name a local copy is `<config>.jsonl`):
    /// `qualitative`, `throughput_1k`, `throughput_2k`, `throughput_8k`,
    /// `throughput_16k` or `throughput_32k`.
    pub config: &'static str,
    /// Only rows whose `category` is this one; `None` takes every row of the config.
    pub category: Option<&'static str>,
    /// One line on the variant, for listings.
    pub summary: &'static str,
}

impl SpeedBenchVariant {
    /// The name without its `speed_bench_` prefix: the column a report files it under.
    pub fn suffix(&self) -> &'static str {
        self.name.strip_prefix("speed_bench_").unwrap_or(self.name)
    }

    /// The variant named `name` (`speed_bench_coding`, …).
    pub fn from_name(name: &str) -> Option<Self> {
        SPEED_BENCH_VARIANTS.into_iter().find(|v| v.name == name)
    }
}

const fn variant(
    name: &'static str,
    config: &'static str,
    category: Option<&'static str>,
    summary: &'static str,
) -> SpeedBenchVariant {
    SpeedBenchVariant {
        name,
        config,
        category,
        summary,
    }
}

const QUALITATIVE: &str = "qualitative";
const LOW: &str = "low entropy tier (512 prompts): code and sorting tasks";
const MIXED: &str = "mixed entropy tier (512 prompts): needle-in-a-haystack and exams";
const HIGH: &str = "high entropy tier (512 prompts): creative writing and dialogue";
const ALL_TIERS: &str = "all three entropy tiers (1536 prompts)";

/// Every SPEED-Bench variant, in the order the Python AIPerf 0.13 lists them.
pub const SPEED_BENCH_VARIANTS: [SpeedBenchVariant; 32] = [
    variant(
        "speed_bench_qualitative",
        QUALITATIVE,
        None,
        "SPEED-Bench qualitative split: 880 prompts across 11 semantic domains",
    ),
    variant(
        "speed_bench_coding",
        QUALITATIVE,
        Some("coding"),
        "SPEED-Bench coding (80 prompts)",
    ),
    variant(
        "speed_bench_humanities",
        QUALITATIVE,
        Some("humanities"),
        "SPEED-Bench humanities (80 prompts)",
    ),
    variant(
        "speed_bench_math",
        QUALITATIVE,
        Some("math"),
        "SPEED-Bench math (80 prompts)",
    ),
    variant(
        "speed_bench_multilingual",
        QUALITATIVE,
        Some("multilingual"),
        "SPEED-Bench multilingual (80 prompts)",
    ),
    variant(
        "speed_bench_qa",
        QUALITATIVE,
        Some("qa"),
        "SPEED-Bench QA (80 prompts)",
    ),
    variant(
        "speed_bench_rag",
        QUALITATIVE,
        Some("rag"),
        "SPEED-Bench RAG (80 prompts)",
    ),
    variant(
        "speed_bench_reasoning",
        QUALITATIVE,
        Some("reasoning"),
        "SPEED-Bench reasoning (80 prompts)",
    ),
    variant(
        "speed_bench_roleplay",
        QUALITATIVE,
        Some("roleplay"),
        "SPEED-Bench roleplay (80 prompts)",
    ),
    variant(
        "speed_bench_stem",
        QUALITATIVE,
        Some("stem"),
        "SPEED-Bench STEM (80 prompts)",
    ),
    variant(
        "speed_bench_summarization",
        QUALITATIVE,
        Some("summarization"),
        "SPEED-Bench summarization (80 prompts)",
    ),
    variant(
        "speed_bench_writing",
        QUALITATIVE,
        Some("writing"),
        "SPEED-Bench writing (80 prompts)",
    ),
    variant(
        "speed_bench_throughput_1k",
        "throughput_1k",
        None,
        ALL_TIERS,
    ),
    variant(
        "speed_bench_throughput_2k",
        "throughput_2k",
        None,
        ALL_TIERS,
    ),
    variant(
        "speed_bench_throughput_8k",
        "throughput_8k",
        None,
        ALL_TIERS,
    ),
    variant(
        "speed_bench_throughput_16k",
        "throughput_16k",
        None,
        ALL_TIERS,
    ),
    variant(
        "speed_bench_throughput_32k",
        "throughput_32k",
        None,
        ALL_TIERS,
    ),
    variant(
        "speed_bench_throughput_1k_low_entropy",
        "throughput_1k",
        Some("low_entropy"),
        LOW,
    ),
    variant(
        "speed_bench_throughput_1k_mixed",
        "throughput_1k",
        Some("mixed"),
        MIXED,
    ),
    variant(
        "speed_bench_throughput_1k_high_entropy",
        "throughput_1k",
        Some("high_entropy"),
        HIGH,
    ),
    variant(
        "speed_bench_throughput_2k_low_entropy",
        "throughput_2k",
        Some("low_entropy"),
        LOW,
    ),
    variant(
        "speed_bench_throughput_2k_mixed",
        "throughput_2k",
        Some("mixed"),
        MIXED,
    ),
    variant(
        "speed_bench_throughput_2k_high_entropy",
        "throughput_2k",
        Some("high_entropy"),
        HIGH,
    ),
    variant(
        "speed_bench_throughput_8k_low_entropy",
        "throughput_8k",
        Some("low_entropy"),
        LOW,
    ),
    variant(
        "speed_bench_throughput_8k_mixed",
        "throughput_8k",
        Some("mixed"),
        MIXED,
    ),
    variant(
        "speed_bench_throughput_8k_high_entropy",
        "throughput_8k",
        Some("high_entropy"),
        HIGH,
    ),
    variant(
        "speed_bench_throughput_16k_low_entropy",
        "throughput_16k",
        Some("low_entropy"),
        LOW,
    ),
    variant(
        "speed_bench_throughput_16k_mixed",
        "throughput_16k",
        Some("mixed"),
        MIXED,
    ),
    variant(
        "speed_bench_throughput_16k_high_entropy",
        "throughput_16k",
        Some("high_entropy"),
        HIGH,
    ),
    variant(
        "speed_bench_throughput_32k_low_entropy",
        "throughput_32k",
        Some("low_entropy"),
        LOW,
    ),
    variant(
        "speed_bench_throughput_32k_mixed",
        "throughput_32k",
        Some("mixed"),
        MIXED,
    ),
    variant(
        "speed_bench_throughput_32k_high_entropy",
        "throughput_32k",
        Some("high_entropy"),
        HIGH,
    ),
];
