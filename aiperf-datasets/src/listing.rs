//! What this crate reads, for listings (`aiperf plugins`): the custom dataset formats of
//! `--custom-dataset-type` and the public datasets of `--public-dataset`.
//!
//! ```
//! let formats = aiperf_datasets::listing::dataset_formats();
//! assert!(formats.iter().any(|f| f.name == "mooncake_trace"));
//! assert_eq!(aiperf_datasets::listing::public_datasets()[0].name, "sharegpt");
//! ```

use aiperf_core::capability::Capability;
use aiperf_core::config::CustomDatasetType;

/// Every `--custom-dataset-type`, in the order detection tries them, then the
/// SPEED-Bench variants.
pub fn dataset_formats() -> Vec<Capability> {
    CustomDatasetType::every()
        .map(|format| Capability::always(format.as_str(), format.summary()))
        .collect()
}

/// Every `--public-dataset` this build loads (the catalogue's entries whose rows it
/// converts); the Hugging Face ones need the `hub` feature.
pub fn public_datasets() -> Vec<Capability> {
    crate::catalogue::CATALOGUE
        .iter()
        .filter(|entry| entry.rows.is_supported())
        .map(|entry| match entry.hub_id {
            Some(_) => Capability::optional(
                entry.name,
                entry.summary,
                "aiperf-datasets/hub",
                cfg!(feature = "hub"),
            ),
            None => Capability::always(entry.name, entry.summary),
        })
        .collect()
}

/// The accuracy benchmarks (`--accuracy-benchmark`); `lcb_codegeneration` is listed but
/// refused at validation ([`aiperf_core::config::CODE_EXECUTION_REFUSED`]).
pub fn accuracy_benchmarks() -> Vec<Capability> {
    use aiperf_core::config::AccuracyBenchmark as B;
    B::ALL
        .iter()
        .map(|b| {
            let summary = match b {
                B::Mmlu => "MMLU, 57 subjects, A-D (lighteval/mmlu)",
                B::MmluPro => "MMLU-Pro, 14 categories, A-J, chain of thought (TIGER-Lab/MMLU-Pro)",
                B::Aime => "AIME 2024 in the DeepEval recipe's format (Maxwell-Jia/AIME_2024)",
                B::Hellaswag => "HellaSwag sentence completion (Rowan/hellaswag)",
                B::Bigbench => "BigBench-Hard, examples from the rows (lukaemon/bbh)",
                B::Aime24 => "AIME 2024, zero-shot (HuggingFaceH4/aime_2024)",
                B::Aime25 => "AIME 2025, zero-shot (yentinglin/aime_2025)",
                B::Math500 => "MATH-500 (HuggingFaceH4/MATH-500)",
                B::Gsm8k => "GSM8K grade-school maths (openai/gsm8k)",
                B::GpqaDiamond => "GPQA Diamond (Idavidrein/gpqa)",
                B::LcbCodegeneration => {
                    "LiveCodeBench: refused, it would run the model's code unsandboxed"
                }
            };
            Capability::always(b.as_str(), summary)
        })
        .collect()
}
