//! `aiperf plugins [CATEGORY [NAME]]`: what this build provides, from each library
//! crate's own listing ([`endpoint_types`], [`dataset_formats`], [`public_datasets`],
//! [`chart_kinds`]), under the Python AIPerf's category names.

use aiperf_core::capability::Capability;
use aiperf_datasets::listing::{accuracy_benchmarks, dataset_formats, public_datasets};
use aiperf_endpoints::endpoint_types;
use aiperf_plot::kinds::chart_kinds;

use crate::args::PluginsArgs;

/// A category: its 0.13 name, a line on it, and its entries in this build.
struct Category {
    name: &'static str,
    summary: &'static str,
    entries: Vec<Capability>,
}

fn categories() -> Vec<Category> {
    vec![
        Category {
            name: "endpoint",
            summary: "request and response formats (--endpoint-type)",
            entries: endpoint_types(),
        },
        Category {
            name: "custom-dataset-loader",
            summary: "dataset file formats (--custom-dataset-type)",
            entries: dataset_formats(),
        },
        Category {
            name: "public-dataset-loader",
            summary: "public datasets fetched by name (--public-dataset)",
            entries: public_datasets(),
        },
        Category {
            name: "accuracy-benchmark",
            summary: "accuracy benchmarks (--accuracy-benchmark)",
            entries: accuracy_benchmarks(),
        },
        Category {
            name: "plot",
            summary: "charts of aiperf plot (file stems)",
            entries: chart_kinds(),
        },
    ]
}

/// Where third-party formats come from: the library traits, not a plugin registry.
const EXTENDING: &str = "Extensions plug in through the library: implement \
    aiperf_core::Endpoint (a request format) or aiperf_core::DatasetSource (a dataset) and \
    pass it to aiperf_runner::run_with; see the examples custom_endpoint, custom_scheduler \
    and live_sink in tests/examples/.";

/// Prints the listing; an unknown category or name is an error naming the known ones.
pub(crate) fn run(args: &PluginsArgs) -> anyhow::Result<()> {
    print!("{}", render(args)?);
    Ok(())
}

fn render(args: &PluginsArgs) -> anyhow::Result<String> {
    let all = categories();
    let category = args.category.as_deref().or(args.category_flag.as_deref());
    let name = args.name.as_deref().or(args.name_flag.as_deref());
    let Some(category) = category else {
        if args.all {
            return Ok(all
                .iter()
                .map(category_table)
                .collect::<Vec<_>>()
                .join("\n"));
        }
        return Ok(overview(&all));
    };
    let Some(found) = all.iter().find(|c| c.name == category) else {
        let known: Vec<&str> = all.iter().map(|c| c.name).collect();
        anyhow::bail!(
            "unknown category `{category}`; categories: {}",
            known.join(", ")
        );
    };
    let Some(name) = name else {
        return Ok(category_table(found));
    };
    let Some(entry) = found.entries.iter().find(|e| e.name == name) else {
        let known: Vec<&str> = found.entries.iter().map(|e| e.name).collect();
        anyhow::bail!(
            "no {category} named `{name}`; {}: {}",
            found.name,
            if known.is_empty() {
                "none".to_owned()
            } else {
                known.join(", ")
            }
        );
    };
    Ok(format!(
        "{category}:{}\n  {}\n  {}\n",
        entry.name,
        entry.summary,
        availability(entry)
    ))
}

fn overview(all: &[Category]) -> String {
    let width = all.iter().map(|c| c.name.len()).max().unwrap_or(0);
    let mut out = format!("aiperf-rs {}\n\n", env!("CARGO_PKG_VERSION"));
    for category in all {
        out.push_str(&format!(
            "  {:<width$}  {:>2}  {}\n",
            category.name,
            category.entries.len(),
            category.summary
        ));
    }
    out.push_str(&format!(
        "\n`aiperf plugins CATEGORY` lists one category, `--all` every one.\n{EXTENDING}\n"
    ));
    out
}

fn category_table(category: &Category) -> String {
    let mut out = format!("{} — {}\n", category.name, category.summary);
    if category.entries.is_empty() {
        out.push_str("  (none)\n");
    }
    let width = category
        .entries
        .iter()
        .map(|e| e.name.len())
        .max()
        .unwrap_or(0);
    for entry in &category.entries {
        let missing = match entry.feature {
            Some(feature) if !entry.compiled_in => format!(" [not compiled in: {feature}]"),
            _ => String::new(),
        };
        out.push_str(&format!(
            "  {:<width$}  {}{missing}\n",
            entry.name, entry.summary
        ));
    }
    out
}

fn availability(entry: &Capability) -> String {
    match (entry.feature, entry.compiled_in) {
        (None, _) => "in every build".to_owned(),
        (Some(feature), true) => format!("in this build (optional feature {feature})"),
        (Some(feature), false) => {
            format!("not in this build: rebuild with the feature {feature}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(category: Option<&str>, name: Option<&str>) -> PluginsArgs {
        PluginsArgs {
            category: category.map(str::to_owned),
            name: name.map(str::to_owned),
            category_flag: None,
            name_flag: None,
            all: false,
        }
    }

    #[test]
    fn the_overview_counts_each_category_and_says_how_to_extend() {
        let text = render(&args(None, None)).unwrap();
        let endpoints = endpoint_types().len();
        assert!(
            text.contains(&format!(
                "  endpoint               {endpoints:>2}  request and response formats"
            )),
            "{text}"
        );
        assert!(
            text.contains("  accuracy-benchmark     11  accuracy benchmarks"),
            "{text}"
        );
        assert!(text.contains(EXTENDING));
    }

    #[test]
    fn a_category_lists_its_entries_and_an_entry_says_whether_it_is_built_in() {
        let text = render(&args(Some("custom-dataset-loader"), None)).unwrap();
        assert!(
            text.starts_with("custom-dataset-loader — dataset file formats"),
            "{text}"
        );
        // Names are padded to the longest one, so the summaries start in one column.
        let width = dataset_formats()
            .iter()
            .map(|f| f.name.len())
            .max()
            .unwrap();
        let mooncake = format!("\n  {:<width$}  Mooncake trace: ", "mooncake_trace");
        assert!(text.contains(&mooncake), "{text}");
        let chat = render(&args(Some("endpoint"), Some("chat"))).unwrap();
        assert_eq!(
            chat,
            "endpoint:chat\n  OpenAI chat completions, streaming or not, text and media \
             (/v1/chat/completions)\n  in every build\n"
        );
        let template = render(&args(Some("endpoint"), Some("template"))).unwrap();
        assert!(
            template.ends_with("in this build (optional feature aiperf-endpoints/templates)\n"),
            "{template}"
        );
    }

    #[test]
    fn unknown_names_list_the_known_ones() {
        let error = render(&args(Some("endpoints"), None))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "unknown category `endpoints`; categories: endpoint, custom-dataset-loader, \
             public-dataset-loader, accuracy-benchmark, plot"
        );
        let error = render(&args(Some("public-dataset-loader"), Some("mmlu")))
            .unwrap_err()
            .to_string();
        assert_eq!(
            error,
            "no public-dataset-loader named `mmlu`; public-dataset-loader: sharegpt, exgentic_v2, \
         exgentic, aimo, mmstar, mmvu, vision_arena, llava_onevision, aimo_aime, aimo_numina_cot, aimo_numina_1_5, \
         spec_bench, spec_al_gsm8k, spec_al_math500, spec_al_humaneval, spec_al_mbpp, spec_al_mtbench, \
         instruct_coder, blazedit_5k, blazedit_10k, librispeech, voxpopuli, gigaspeech, ami, \
         spgispeech, semianalysis_cc_traces_weka, semianalysis_cc_traces_weka_no_subagents, \
         semianalysis_cc_traces_weka_with_subagents, \
         semianalysis_cc_traces_weka_with_subagents_256k, \
         semianalysis_cc_traces_weka_with_subagents_060226, \
         semianalysis_cc_traces_weka_with_subagents_060226_256k, \
         semianalysis_cc_traces_weka_with_subagents_060526, \
         semianalysis_cc_traces_weka_with_subagents_060526_256k, \
         semianalysis_cc_traces_weka_with_subagents_060826, \
         semianalysis_cc_traces_weka_with_subagents_060826_256k, \
         semianalysis_cc_traces_weka_061326, semianalysis_cc_traces_weka_061326_256k, \
         semianalysis_cc_traces_weka_061526, semianalysis_cc_traces_weka_061526_256k, \
         semianalysis_cc_traces_weka_062126, semianalysis_cc_traces_weka_062126_256k, weka_hf"
        );
    }
}
