//! The public datasets of `--public-dataset`, as data: one entry per name of the Python
//! AIPerf 0.13, with its Hugging Face id, config and split, how its rows become turns,
//! and what it sends besides text.
//!
//! ```
//! use aiperf_datasets::catalogue::{find, RowConversion};
//!
//! let gsm8k = find("spec_al_gsm8k").unwrap();
//! assert_eq!((gsm8k.hub_id, gsm8k.config, gsm8k.split), (Some("openai/gsm8k"), Some("main"), "test"));
//! assert!(matches!(gsm8k.rows, RowConversion::Prompt { column: "question", .. }));
//! assert_eq!(aiperf_datasets::catalogue::CATALOGUE.len(), 42);
//! ```

/// One public dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PublicDatasetEntry {
    /// The name a user passes to `--public-dataset`.
    pub name: &'static str,
    /// The Hugging Face dataset id; `None` for datasets fetched otherwise (ShareGPT's
    /// file, SpecBench's GitHub file) or named at run time (`weka_hf`).
    pub hub_id: Option<&'static str>,
    /// The config (subset) loaded unless `--hf-subset` names another.
    pub config: Option<&'static str>,
    /// The split loaded.
    pub split: &'static str,
    /// How a row becomes a conversation.
    pub rows: RowConversion,
    /// What its requests carry besides text.
    pub modality: Modality,
    /// 0.13 streams it from the hub (large splits): it reads only as many rows as the run
    /// needs ([`PublicDatasetEntry::row_limit`]).
    pub streamed: bool,
    /// One line on what it is.
    pub summary: &'static str,
}

/// How the rows of a public dataset become conversations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowConversion {
    /// ShareGPT's own loader (`human` → `gpt` pairs, vLLM's length filter).
    ShareGpt,
    /// One single-turn conversation per row: the text of `column` (or `template` with
    /// `{column}` placeholders filled from the row), with the row's image when
    /// `image_column` is set. Rows with an empty prompt are skipped.
    Prompt {
        /// The prompt column.
        column: &'static str,
        /// The image column (`{bytes, path}` structs, or a list of them).
        image_column: Option<&'static str>,
        /// A prompt built from several columns.
        template: Option<&'static str>,
    },
    /// One single-turn conversation per row: the first user message of the list in
    /// `column` (its `content_key` text) and the row's first image.
    FirstUserMessage {
        /// The message list column.
        column: &'static str,
        /// The text field of a message.
        content_key: &'static str,
        /// The image column.
        image_column: Option<&'static str>,
    },
    /// MT-Bench: each row's `prompt` list is one multi-turn conversation.
    MtBench,
    /// Speech recognition: the audio of `column` with the prompt
    /// "Transcribe this audio."
    Speech {
        /// The audio column (`{bytes, path}` structs).
        column: &'static str,
    },
    /// MMVU: one single-turn conversation per row: the `question` followed by its
    /// `choices` (`A.text B.text …`), with the row's `video` (a URL, a path sent as a
    /// `file://` URL, or `{bytes, path}` sent as a `data:` URL), as vLLM's benchmark and
    /// 0.13 send it. Rows without a prompt or a video are skipped.
    VideoQuestion,
    /// SpecBench's question file from GitHub: each question's first turn.
    SpecBench,
    /// SemiAnalysis Weka agentic-coding traces: each row is one whole `weka_trace`
    /// trace, replayed as the same trace in a file is.
    WekaTrace,
    /// Exgentic agent LLM traces: each row is one recorded agent session whose LLM calls
    /// replay as its turns, each with the complete message array it sent
    /// ([`crate::hub::exgentic`]).
    AgentTrace {
        /// Which release of the traces (their filters and pinned revision differ).
        version: ExgenticVersion,
    },
}

/// The two releases of the Exgentic agent traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExgenticVersion {
    /// `Exgentic/agent-llm-traces` (`--public-dataset exgentic`).
    V1,
    /// `Exgentic/agent-llm-traces-v2` (`--public-dataset exgentic_v2`): adds the
    /// `benchmark` filter.
    V2,
}

impl ExgenticVersion {
    /// The Hugging Face dataset id.
    pub const fn hub_id(self) -> &'static str {
        match self {
            ExgenticVersion::V1 => "Exgentic/agent-llm-traces",
            ExgenticVersion::V2 => "Exgentic/agent-llm-traces-v2",
        }
    }

    /// The commit the Python AIPerf 0.13 pins, so both tools replay the same rows.
    pub fn revision(self) -> &'static str {
        match self {
            ExgenticVersion::V1 => "70036b93a04e61b0ea2706a68b962f4f26774587",
            ExgenticVersion::V2 => "4b8ad4ab198438e5a170f9171c19c6a2cf7c1814",
        }
    }
}

impl RowConversion {
    /// Whether aiperf-rs turns such rows into conversations.
    pub fn is_supported(&self) -> bool {
        matches!(
            self,
            RowConversion::ShareGpt
                | RowConversion::Prompt { .. }
                | RowConversion::FirstUserMessage { .. }
                | RowConversion::MtBench
                | RowConversion::Speech { .. }
                | RowConversion::WekaTrace
                | RowConversion::SpecBench
                | RowConversion::AgentTrace { .. }
                | RowConversion::VideoQuestion
        )
    }
}

/// What a public dataset's requests carry besides text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Modality {
    /// Text only.
    Text,
    /// An image per request.
    Image,
    /// An audio clip per request.
    Audio,
    /// A video per request.
    Video,
    /// Recorded agent traces (messages, tools, timing).
    Trace,
}

impl PublicDatasetEntry {
    /// How many conversations a run of a [streamed](Self::streamed) dataset reads, as
    /// 0.13 caps them: the run's request count, else its dataset entries, else its
    /// session count (`None`: every row, as for the datasets 0.13 does not stream).
    ///
    /// ```
    /// let ami = aiperf_datasets::catalogue::find("ami").unwrap();
    /// assert_eq!(ami.row_limit(Some(50), Some(8), None), Some(50));
    /// assert_eq!(ami.row_limit(None, Some(8), None), Some(8));
    /// let aimo = aiperf_datasets::catalogue::find("aimo").unwrap();
    /// assert_eq!(aimo.row_limit(Some(50), Some(8), None), None);
    /// ```
    pub fn row_limit(
        &self,
        request_count: Option<u64>,
        dataset_entries: Option<usize>,
        sessions: Option<u64>,
    ) -> Option<usize> {
        let count = |n: u64| usize::try_from(n).unwrap_or(usize::MAX);
        if !self.streamed {
            return None;
        }
        request_count
            .map(count)
            .or(dataset_entries)
            .or(sessions.map(count))
    }
}

/// The entry named `name`.
pub fn find(name: &str) -> Option<&'static PublicDatasetEntry> {
    CATALOGUE.iter().find(|entry| entry.name == name)
}

/// Blazedit's prompt, as vLLM's `BlazeditDataset` writes it.
const BLAZEDIT_TEMPLATE: &str = "Given a code file, please apply the change requests and generate the new file.\n\nOriginal file:\n```python\n{code}\n```\n\nChange request:\n{change_request}\n\nPlease generate the new code file in the \"New file\" section below.";

/// Every public dataset of the Python AIPerf 0.13, ShareGPT first.
pub const CATALOGUE: &[PublicDatasetEntry] = &[
    PublicDatasetEntry {
        name: "sharegpt",
        hub_id: None,
        config: None,
        split: "train",
        rows: RowConversion::ShareGpt,
        modality: Modality::Text,
        streamed: false,
        summary: "ShareGPT (Vicuna, unfiltered, cleaned split): real conversations, downloaded once",
    },
    PublicDatasetEntry {
        name: "exgentic_v2",
        hub_id: Some(ExgenticVersion::V2.hub_id()),
        config: None,
        split: "train",
        rows: RowConversion::AgentTrace { version: ExgenticVersion::V2 },
        modality: Modality::Trace,
        streamed: true,
        summary: "Exgentic v2 agent LLM traces from HuggingFace",
    },
    PublicDatasetEntry {
        name: "exgentic",
        hub_id: Some(ExgenticVersion::V1.hub_id()),
        config: None,
        split: "train",
        rows: RowConversion::AgentTrace { version: ExgenticVersion::V1 },
        modality: Modality::Trace,
        streamed: true,
        summary: "Exgentic agent LLM traces from HuggingFace",
    },
    PublicDatasetEntry {
        name: "aimo",
        hub_id: Some("AI-MO/NuminaMath-TIR"),
        config: None,
        split: "train",
        rows: RowConversion::Prompt { column: "problem", image_column: None, template: None },
        modality: Modality::Text,
        streamed: false,
        summary: "AIMO NuminaMath-TIR math reasoning dataset from HuggingFace (AI-MO)",
    },
    PublicDatasetEntry {
        name: "mmstar",
        hub_id: Some("Lin-Chen/MMStar"),
        config: None,
        split: "val",
        rows: RowConversion::Prompt { column: "question", image_column: Some("image"), template: None },
        modality: Modality::Image,
        streamed: false,
        summary: "MMStar multimodal visual QA benchmark from HuggingFace (Lin-Chen)",
    },
    PublicDatasetEntry {
        name: "mmvu",
        hub_id: Some("yale-nlp/MMVU"),
        config: None,
        split: "validation",
        rows: RowConversion::VideoQuestion,
        modality: Modality::Video,
        streamed: false,
        summary: "MMVU expert-level video understanding benchmark from HuggingFace (yale-nlp)",
    },
    PublicDatasetEntry {
        name: "vision_arena",
        hub_id: Some("lmarena-ai/VisionArena-Chat"),
        config: None,
        split: "train",
        rows: RowConversion::FirstUserMessage { column: "conversation", content_key: "content", image_column: Some("images") },
        modality: Modality::Image,
        streamed: true,
        summary: "VisionArena multimodal chat dataset from HuggingFace (lmarena-ai)",
    },
    PublicDatasetEntry {
        name: "llava_onevision",
        hub_id: Some("lmms-lab/LLaVA-OneVision-Data"),
        config: Some("sharegpt4o"),
        split: "train",
        rows: RowConversion::FirstUserMessage { column: "conversations", content_key: "value", image_column: Some("image") },
        modality: Modality::Image,
        streamed: true,
        summary: "LLaVA-OneVision multimodal instruction-following dataset from HuggingFace (lmms-lab)",
    },
    PublicDatasetEntry {
        name: "aimo_aime",
        hub_id: Some("AI-MO/aimo-validation-aime"),
        config: None,
        split: "train",
        rows: RowConversion::Prompt { column: "problem", image_column: None, template: None },
        modality: Modality::Text,
        streamed: false,
        summary: "AIMO validation AIME competition problems from HuggingFace (AI-MO)",
    },
    PublicDatasetEntry {
        name: "aimo_numina_cot",
        hub_id: Some("AI-MO/NuminaMath-CoT"),
        config: None,
        split: "train",
        rows: RowConversion::Prompt { column: "problem", image_column: None, template: None },
        modality: Modality::Text,
        streamed: false,
        summary: "NuminaMath chain-of-thought math reasoning dataset from HuggingFace (AI-MO)",
    },
    PublicDatasetEntry {
        name: "aimo_numina_1_5",
        hub_id: Some("AI-MO/NuminaMath-1.5"),
        config: None,
        split: "train",
        rows: RowConversion::Prompt { column: "problem", image_column: None, template: None },
        modality: Modality::Text,
        streamed: false,
        summary: "NuminaMath 1.5 math reasoning dataset from HuggingFace (AI-MO)",
    },
    PublicDatasetEntry {
        name: "spec_bench",
        hub_id: None,
        config: None,
        split: "train",
        rows: RowConversion::SpecBench,
        modality: Modality::Text,
        streamed: false,
        summary: "SpecBench speculative decoding benchmark dataset from GitHub (hemingkx)",
    },
    PublicDatasetEntry {
        name: "spec_al_gsm8k",
        hub_id: Some("openai/gsm8k"),
        config: Some("main"),
        split: "test",
        rows: RowConversion::Prompt { column: "question", image_column: None, template: None },
        modality: Modality::Text,
        streamed: false,
        summary: "GSM8K grade-school math word problems from HuggingFace (openai/gsm8k, main config, test split, 1319 prompts)",
    },
    PublicDatasetEntry {
        name: "spec_al_math500",
        hub_id: Some("HuggingFaceH4/MATH-500"),
        config: None,
        split: "test",
        rows: RowConversion::Prompt { column: "problem", image_column: None, template: None },
        modality: Modality::Text,
        streamed: false,
        summary: "MATH-500 competition math problems from HuggingFace (HuggingFaceH4/MATH-500, test split, 500 prompts)",
    },
    PublicDatasetEntry {
        name: "spec_al_humaneval",
        hub_id: Some("openai/openai_humaneval"),
        config: None,
        split: "test",
        rows: RowConversion::Prompt { column: "prompt", image_column: None, template: None },
        modality: Modality::Text,
        streamed: false,
        summary: "HumanEval Python code-completion prompts from HuggingFace (openai/openai_humaneval, test split, 164 prompts)",
    },
    PublicDatasetEntry {
        name: "spec_al_mbpp",
        hub_id: Some("google-research-datasets/mbpp"),
        config: Some("full"),
        split: "test",
        rows: RowConversion::Prompt { column: "text", image_column: None, template: None },
        modality: Modality::Text,
        streamed: false,
        summary: "MBPP basic Python programming tasks from HuggingFace (google-research-datasets/mbpp, full config, test split, 500 prompts)",
    },
    PublicDatasetEntry {
        name: "spec_al_mtbench",
        hub_id: Some("HuggingFaceH4/mt_bench_prompts"),
        config: None,
        split: "train",
        rows: RowConversion::MtBench,
        modality: Modality::Text,
        streamed: false,
        summary: "MT-Bench two-turn chat prompts from HuggingFace (HuggingFaceH4/mt_bench_prompts, train split, 80 prompts)",
    },
    PublicDatasetEntry {
        name: "instruct_coder",
        hub_id: Some("likaixin/InstructCoder"),
        config: None,
        split: "train",
        rows: RowConversion::Prompt { column: "instruction", image_column: None, template: None },
        modality: Modality::Text,
        streamed: false,
        summary: "InstructCoder code instruction dataset from HuggingFace (likaixin)",
    },
    PublicDatasetEntry {
        name: "blazedit_5k",
        hub_id: Some("vdaita/edit_5k_char"),
        config: None,
        split: "train",
        rows: RowConversion::Prompt { column: "change_request", image_column: None, template: Some(BLAZEDIT_TEMPLATE) },
        modality: Modality::Text,
        streamed: false,
        summary: "Blazedit edit-distance benchmark dataset with ~5k character code contexts (vdaita)",
    },
    PublicDatasetEntry {
        name: "blazedit_10k",
        hub_id: Some("vdaita/edit_10k_char"),
        config: None,
        split: "train",
        rows: RowConversion::Prompt { column: "change_request", image_column: None, template: Some(BLAZEDIT_TEMPLATE) },
        modality: Modality::Text,
        streamed: false,
        summary: "Blazedit edit-distance benchmark dataset with ~10k character code contexts (vdaita)",
    },
    PublicDatasetEntry {
        name: "librispeech",
        hub_id: Some("openslr/librispeech_asr"),
        config: Some("clean"),
        split: "test",
        rows: RowConversion::Speech { column: "audio" },
        modality: Modality::Audio,
        streamed: true,
        summary: "LibriSpeech ASR benchmark dataset (openslr)",
    },
    PublicDatasetEntry {
        name: "voxpopuli",
        hub_id: Some("facebook/voxpopuli"),
        config: Some("en"),
        split: "test",
        rows: RowConversion::Speech { column: "audio" },
        modality: Modality::Audio,
        streamed: true,
        summary: "VoxPopuli English ASR dataset (facebook)",
    },
    PublicDatasetEntry {
        name: "gigaspeech",
        hub_id: Some("speechcolab/gigaspeech"),
        config: Some("xs"),
        split: "test",
        rows: RowConversion::Speech { column: "audio" },
        modality: Modality::Audio,
        streamed: true,
        summary: "GigaSpeech English ASR dataset (speechcolab)",
    },
    PublicDatasetEntry {
        name: "ami",
        hub_id: Some("edinburghcstr/ami"),
        config: Some("ihm"),
        split: "test",
        rows: RowConversion::Speech { column: "audio" },
        modality: Modality::Audio,
        streamed: true,
        summary: "AMI Meeting Corpus ASR dataset (Edinburgh CSTR)",
    },
    PublicDatasetEntry {
        name: "spgispeech",
        hub_id: Some("kensho/spgispeech"),
        config: Some("test"),
        split: "test",
        rows: RowConversion::Speech { column: "audio" },
        modality: Modality::Audio,
        streamed: true,
        summary: "SPGISpeech ASR dataset (Kensho)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka",
        hub_id: Some("semianalysisai/cc-traces-weka-no-subagents-051826"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka agentic coding trace dataset (no-subagents variant), hosted on HuggingFace as semianalysisai/cc-traces-weka-no-subagents-051826 (539 MB jsonl, 98 traces, 22.8k requests, public, no auth required)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_no_subagents",
        hub_id: Some("semianalysisai/cc-traces-weka-no-subagents-051826"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, no-subagents variant — hosted on HuggingFace as semianalysisai/cc-traces-weka-no-subagents-051826 (98 traces, 22.8k requests, public, no auth)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_with_subagents",
        hub_id: Some("semianalysisai/cc-traces-weka-062126"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, with-subagents variant — generic rolling alias that tracks the current default with-subagents corpus, presently semianalysisai/cc-traces-weka-062126 (393 v7 traces, public, no auth)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_with_subagents_256k",
        hub_id: Some("semianalysisai/cc-traces-weka-062126-256k"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, with-subagents 256k-capped variant — generic rolling alias that tracks the current default 256k-capped corpus, presently semianalysisai/cc-traces-weka-062126-256k (393 v7 traces, public, no auth)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_with_subagents_060226",
        hub_id: Some("semianalysisai/cc-traces-weka-with-subagents-060226"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, with-subagents v6 variant — hosted on HuggingFace as semianalysisai/cc-traces-weka-with-subagents-060226 (225 traces, public, no auth)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_with_subagents_060226_256k",
        hub_id: Some("semianalysisai/cc-traces-weka-with-subagents-060226-256k"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, with-subagents v6 256k-capped variant — hosted on HuggingFace as semianalysisai/cc-traces-weka-with-subagents-060226-256k (225 traces, public, no auth)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_with_subagents_060526",
        hub_id: Some("semianalysisai/cc-traces-weka-with-subagents-060526"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, with-subagents v6 variant — hosted on HuggingFace as semianalysisai/cc-traces-weka-with-subagents-060526 (336 traces, public, no auth)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_with_subagents_060526_256k",
        hub_id: Some("semianalysisai/cc-traces-weka-with-subagents-060526-256k"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, with-subagents v6 256k-capped variant — hosted on HuggingFace as semianalysisai/cc-traces-weka-with-subagents-060526-256k (336 traces, public, no auth)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_with_subagents_060826",
        hub_id: Some("semianalysisai/cc-traces-weka-with-subagents-060826"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, with-subagents v6 variant — hosted on HuggingFace as semianalysisai/cc-traces-weka-with-subagents-060826 (391 traces, public, no auth)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_with_subagents_060826_256k",
        hub_id: Some("semianalysisai/cc-traces-weka-with-subagents-060826-256k"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, with-subagents v6 256k-capped variant — hosted on HuggingFace as semianalysisai/cc-traces-weka-with-subagents-060826-256k (391 traces, public, no auth)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_061326",
        hub_id: Some("semianalysisai/cc-traces-weka-061326"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, v7 variant — hosted on HuggingFace as semianalysisai/cc-traces-weka-061326 (183 traces, 26.6k main turns, 652 subagent groups, 18.3k subagent inner requests, 45.0k total requests, public, no auth)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_061326_256k",
        hub_id: Some("semianalysisai/cc-traces-weka-061326-256k"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, v7 256k-capped variant — hosted on HuggingFace as semianalysisai/cc-traces-weka-061326-256k (183 traces, public, no auth)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_061526",
        hub_id: Some("semianalysisai/cc-traces-weka-061526"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, v7 variant — hosted on HuggingFace as semianalysisai/cc-traces-weka-061526 (233 traces, 38.5k main turns, 787 subagent groups, 22.5k subagent inner requests, 61.0k total requests, public, no auth)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_061526_256k",
        hub_id: Some("semianalysisai/cc-traces-weka-061526-256k"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, v7 256k-capped variant — hosted on HuggingFace as semianalysisai/cc-traces-weka-061526-256k (232 traces, 23.4k main turns, 787 subagent groups, 20.8k subagent inner requests, 44.2k total requests, public, no auth)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_062126",
        hub_id: Some("semianalysisai/cc-traces-weka-062126"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, v7 variant — hosted on HuggingFace as semianalysisai/cc-traces-weka-062126 (393 traces, 56.8k main turns, 1,697 subagent groups, 42.0k subagent inner requests, 98.8k total requests, public, no auth)",
    },
    PublicDatasetEntry {
        name: "semianalysis_cc_traces_weka_062126_256k",
        hub_id: Some("semianalysisai/cc-traces-weka-062126-256k"),
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "SemiAnalysis Weka cc-traces, v7 256k-capped variant — hosted on HuggingFace as semianalysisai/cc-traces-weka-062126-256k (393 traces, 28.4k main turns, 1,697 subagent groups, 39.8k subagent inner requests, 68.3k total requests, public, no auth)",
    },
    PublicDatasetEntry {
        name: "weka_hf",
        hub_id: None,
        config: None,
        split: "train",
        rows: RowConversion::WekaTrace,
        modality: Modality::Trace,
        streamed: false,
        summary: "Generic HuggingFace-backed Weka trace dataset loader",
    },
];
