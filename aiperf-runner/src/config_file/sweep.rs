//! `sweep:` in a configuration file: each parameter is a key path into `benchmark:`
//! (`phases.profiling.rate`, `datasets.default.prompts.isl`, or a bare phase key such as
//! `concurrency`, as the Python AIPerf 0.13 accepts) with a list of values. Each point is
//! the benchmark section with its values written in, read like any benchmark section.

use aiperf_core::clock::saturating_secs;

use super::reader::{snake_case, Field};
use super::yaml::{Entry, Node, Value};
use super::ConfigFileError;
use crate::spec::SweepType;

/// Bare names that stand for a key of the profiling phase.
const PHASE_ALIASES: [&str; 13] = [
    "concurrency",
    "prefill_concurrency",
    "rate",
    "requests",
    "duration",
    "sessions",
    "users",
    "smoothness",
    "grace_period",
    "concurrency_ramp",
    "prefill_ramp",
    "rate_ramp",
    "rate_series",
];

/// The sweep section, read.
pub(super) struct SweepSection<'a> {
    pub(super) sweep_type: SweepType,
    pub(super) cooldown: std::time::Duration,
    parameters: Vec<Parameter<'a>>,
}

struct Parameter<'a> {
    /// The parameter's key, for errors.
    key: Field<'a>,
    /// The path within `benchmark:`, aliases resolved.
    path: Vec<String>,
    values: Vec<&'a Node>,
}

/// One point: its label, its parameters as written and the benchmark section with them.
pub(super) struct PointTree {
    pub(super) label: String,
    pub(super) parameters: Vec<(String, String)>,
    pub(super) benchmark: Node,
}

pub(super) fn read_sweep<'a>(field: &Field<'a>) -> Result<SweepSection<'a>, ConfigFileError> {
    let mut r = field.map()?;
    let sweep_type = match r.take("type") {
        None => SweepType::Grid,
        Some(f) => match f.string()?.as_str() {
            "grid" => SweepType::Grid,
            "zip" => SweepType::Zip,
            other => {
                return Err(f.error(&format!(
                    "sweep type {other:?} is not available in aiperf-rs; expected grid or zip"
                )))
            }
        },
    };
    let cooldown = match r.take("cooldown_seconds") {
        Some(f) => saturating_secs(f.seconds()?),
        None => std::time::Duration::ZERO,
    };
    let list = r
        .take("parameters")
        .ok_or_else(|| field.error("a sweep needs `parameters`"))?;
    let mut parameters = Vec::new();
    for entry in list.map()?.rest() {
        let key = Field {
            file: field.file,
            line: entry.line,
            path: format!("{}.{}", list.path, entry.key),
            node: &entry.value,
        };
        let Value::Seq(values) = &entry.value.value else {
            return Err(key.error("expected a list of values"));
        };
        if values.is_empty() {
            return Err(key.error("expected at least one value"));
        }
        parameters.push(Parameter {
            path: resolve_path(&entry.key),
            values: values.iter().collect(),
            key,
        });
    }
    if parameters.is_empty() {
        return Err(list.error("expected at least one parameter"));
    }
    if sweep_type == SweepType::Zip {
        let len = parameters[0].values.len();
        if let Some(other) = parameters.iter().find(|p| p.values.len() != len) {
            return Err(other.key.error(&format!(
                "a zip sweep needs lists of the same length: {} values here, {len} in the first",
                other.values.len()
            )));
        }
    }
    // As the Python AIPerf 0.13 does: parameters combine in the order of their paths,
    // whatever their order in the file, so that a point's directory has the same name.
    parameters.sort_by_key(|p| p.path.join("."));
    r.finish(&[
        "iteration_order",
        "post_process",
        "recipe_name",
        "same_seed",
        "sla_filters",
    ])?;
    Ok(SweepSection {
        sweep_type,
        cooldown,
        parameters,
    })
}

/// `benchmark.` is dropped, a bare phase key becomes `phases.profiling.<key>`.
fn resolve_path(key: &str) -> Vec<String> {
    let key = key.strip_prefix("benchmark.").unwrap_or(key);
    let snake = snake_case(key);
    if PHASE_ALIASES.contains(&snake.as_str()) {
        return vec!["phases".into(), "profiling".into(), snake];
    }
    key.split('.').map(snake_case).collect()
}

impl SweepSection<'_> {
    /// The points, grid points varying the last parameter (by path) fastest.
    pub(super) fn points(&self, benchmark: &Node) -> Result<Vec<PointTree>, ConfigFileError> {
        let choices: Vec<Vec<usize>> = match self.sweep_type {
            SweepType::Zip => (0..self.parameters[0].values.len())
                .map(|i| vec![i; self.parameters.len()])
                .collect(),
            SweepType::Grid => self.parameters.iter().fold(vec![Vec::new()], |partial, p| {
                partial
                    .iter()
                    .flat_map(|prefix| {
                        (0..p.values.len()).map(move |i| {
                            let mut next = prefix.clone();
                            next.push(i);
                            next
                        })
                    })
                    .collect()
            }),
        };
        choices
            .into_iter()
            .map(|choice| {
                let mut tree = benchmark.clone();
                let mut parameters = Vec::with_capacity(choice.len());
                for (parameter, &i) in self.parameters.iter().zip(&choice) {
                    let value = parameter.values[i];
                    let Value::Scalar { text, .. } = &value.value else {
                        return Err(ConfigFileError::at(
                            parameter.key.file,
                            value.line,
                            &parameter.key.path,
                            "expected a list of plain values",
                        ));
                    };
                    set_path(&mut tree, &parameter.path, value.clone())
                        .map_err(|problem| parameter.key.error(&problem))?;
                    let name = parameter.path.last().cloned().unwrap_or_default();
                    parameters.push((name, text.clone()));
                }
                // 0.13's directory names: `rate_10`, `isl_128__concurrency_4`.
                let label = parameters
                    .iter()
                    .map(|(name, value)| format!("{name}_{value}"))
                    .collect::<Vec<_>>()
                    .join("__");
                Ok(PointTree {
                    label,
                    parameters,
                    benchmark: tree,
                })
            })
            .collect()
    }
}

/// Writes `value` at `path` in the benchmark section, following its shorthands: a phase
/// or dataset is found by name in a list, a single flat `phases:`/`dataset:` is the one
/// any name refers to, and `phases.<name>` also finds `warmup:`/`profiling:`.
fn set_path(benchmark: &mut Node, path: &[String], value: Node) -> Result<(), String> {
    let (section, rest) = match path {
        [section, name, rest @ ..] if section == "phases" || section == "datasets" => {
            (Some((section.as_str(), name.as_str())), rest)
        }
        _ => (None, path),
    };
    let target = match section {
        None => benchmark,
        Some(("phases", name)) => find_phase(benchmark, name)?,
        Some((_, name)) => find_dataset(benchmark, name)?,
    };
    set_in(target, rest, value)
}

fn entries(node: &mut Node) -> Result<&mut Vec<Entry>, String> {
    match &mut node.value {
        Value::Map(entries) => Ok(entries),
        _ => Err("the path leads into a value that is not a mapping".into()),
    }
}

fn child<'n>(node: &'n mut Node, key: &str) -> Result<Option<&'n mut Node>, String> {
    Ok(entries(node)?
        .iter_mut()
        .find(|e| snake_case(&e.key) == key)
        .map(|e| &mut e.value))
}

fn set_in(node: &mut Node, path: &[String], value: Node) -> Result<(), String> {
    let Some((key, rest)) = path.split_first() else {
        *node = value;
        return Ok(());
    };
    let line = node.line;
    let list = entries(node)?;
    let index = if let Some(index) = list.iter().position(|e| snake_case(&e.key) == *key) {
        index
    } else {
        list.push(Entry {
            key: key.clone(),
            line,
            value: Node {
                line,
                value: Value::Map(Vec::new()),
            },
        });
        list.len() - 1
    };
    set_in(&mut list[index].value, rest, value)
}

fn is_named(node: &Node, name: &str) -> bool {
    matches!(&node.value, Value::Map(entries) if entries.iter().any(|e|
        e.key == "name" && matches!(&e.value.value, Value::Scalar { text, .. } if text == name)))
}

fn find_phase<'n>(benchmark: &'n mut Node, name: &str) -> Result<&'n mut Node, String> {
    let has_phases = child(benchmark, "phases")?.is_some();
    if !has_phases {
        return child(benchmark, name)?
            .ok_or_else(|| format!("the benchmark has no phase named {name:?}"));
    }
    let phases = child(benchmark, "phases")?.ok_or("no phases")?;
    if !matches!(phases.value, Value::Seq(_)) {
        // A single flat phase is the one every name refers to.
        return Ok(phases);
    }
    let Value::Seq(list) = &mut phases.value else {
        unreachable!("checked above")
    };
    let named = list.iter().position(|p| is_named(p, name));
    // `profiling` is the phase that is not a warmup when none carries the name.
    let fallback = (name == "profiling")
        .then(|| {
            list.iter()
                .position(|p| !is_named(p, "warmup") && !excluded(p))
        })
        .flatten();
    let index = named
        .or(fallback)
        .ok_or_else(|| format!("the benchmark has no phase named {name:?}"))?;
    Ok(&mut list[index])
}

fn excluded(phase: &Node) -> bool {
    matches!(&phase.value, Value::Map(entries) if entries.iter().any(|e|
        snake_case(&e.key) == "exclude_from_results"
            && matches!(&e.value.value, Value::Scalar { text, .. } if text == "true")))
}

fn find_dataset<'n>(benchmark: &'n mut Node, name: &str) -> Result<&'n mut Node, String> {
    if child(benchmark, "dataset")?.is_some() {
        return child(benchmark, "dataset")?.ok_or_else(|| "no dataset".into());
    }
    let datasets = child(benchmark, "datasets")?
        .ok_or_else(|| format!("the benchmark has no dataset named {name:?}"))?;
    match &mut datasets.value {
        Value::Seq(list) => {
            let index = list
                .iter()
                .position(|d| is_named(d, name))
                .or((list.len() == 1).then_some(0))
                .ok_or_else(|| format!("the benchmark has no dataset named {name:?}"))?;
            Ok(&mut list[index])
        }
        _ => Err("`datasets` is not a list".into()),
    }
}
