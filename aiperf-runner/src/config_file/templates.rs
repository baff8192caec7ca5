//! Starter configuration files (`aiperf config init`), each of which loads through
//! [`parse_config_file`](super::parse_config_file) (a test checks it).

/// A starter configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Template {
    /// Its name, e.g. `minimal`.
    pub name: &'static str,
    /// One line saying what it is for.
    pub description: &'static str,
    /// The YAML, commented.
    pub text: &'static str,
}

/// The model and URL the templates name, replaced by [`Template::render`].
const MODEL: &str = "meta-llama/Llama-3.1-8B-Instruct";
const URL: &str = "http://localhost:8000";

/// Every template; the first is the default of `aiperf config init`.
pub const TEMPLATES: [Template; 6] = [
    Template {
        name: "default",
        description: "Every supported section, commented: a starting point to edit.",
        text: include_str!("templates/default.yaml"),
    },
    Template {
        name: "minimal",
        description: "The fewest keys that make a benchmark.",
        text: include_str!("templates/minimal.yaml"),
    },
    Template {
        name: "latency_test",
        description: "TTFT, ITL and latency at a controlled request rate, with a warmup.",
        text: include_str!("templates/latency_test.yaml"),
    },
    Template {
        name: "goodput_slo",
        description: "Goodput: the requests per second that meet per-request SLOs.",
        text: include_str!("templates/goodput_slo.yaml"),
    },
    Template {
        name: "sweep",
        description: "A grid sweep over concurrency and input length, one directory per point.",
        text: include_str!("templates/sweep.yaml"),
    },
    Template {
        name: "multi_run",
        description: "Repeated runs aggregated with confidence intervals.",
        text: include_str!("templates/multi_run.yaml"),
    },
];

/// The template called `name`.
pub fn template(name: &str) -> Option<&'static Template> {
    TEMPLATES.iter().find(|t| t.name == name)
}

impl Template {
    /// The text with `model` and `url` in place of the template's own.
    pub fn render(&self, model: Option<&str>, url: Option<&str>) -> String {
        let mut text = self.text.to_owned();
        if let Some(model) = model {
            text = text.replace(MODEL, model);
        }
        if let Some(url) = url {
            text = text.replace(URL, url);
        }
        text
    }
}
