//! The GPU power-efficiency metrics (docs/telemetry.md#gpu-power-efficiency-metrics),
//! derived from the GPU summaries and the run's own totals.

use crate::gpu::GpuSummary;

/// What the benchmark itself counted, for the derived metrics.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RunTotals {
    /// Output tokens over the profiling phase (`total_output_tokens`).
    pub output_tokens: Option<f64>,
    /// The profiling concurrency (users); `energy_per_user` needs it.
    pub concurrency: Option<f64>,
}

/// One derived metric: a single value, exported like an aggregate metric (only `avg`).
#[derive(Debug, Clone, PartialEq)]
pub struct DerivedMetric {
    /// `total_gpu_power`, `total_gpu_energy`, `output_tokens_per_joule`, `energy_per_user`.
    pub tag: &'static str,
    /// The header, suffixed with the number of GPUs as the Python AIPerf has it, plural
    /// even for one (`Total GPU Power (2 GPUs)`).
    pub header: String,
    /// The display unit.
    pub unit: &'static str,
    /// The value.
    pub value: f64,
    /// Display order (900–903, as in the Python AIPerf).
    pub order: u32,
}

/// The derived metrics of `gpus` (every GPU of every endpoint) and `totals`:
/// - `total_gpu_power` (W): Σ over GPUs of the mean power in the window;
/// - `total_gpu_energy` (J): Σ over GPUs of the energy delta (negative deltas count as 0);
/// - `output_tokens_per_joule` (tokens/J): output tokens / total energy;
/// - `energy_per_user` (J/user): total energy / concurrency.
///
/// A metric whose inputs are missing (no GPU reported power, no energy, zero energy, no
/// token count, no concurrency) is left out rather than reported as 0 or infinity.
pub fn power_efficiency(gpus: &[GpuSummary], totals: RunTotals) -> Vec<DerivedMetric> {
    let n = gpus.len();
    let metric = |tag, header: &str, unit, value, order| DerivedMetric {
        tag,
        header: format!("{header} ({n} GPUs)"),
        unit,
        value,
        order,
    };
    let mut out = Vec::new();
    let powers: Vec<f64> = gpus
        .iter()
        .filter_map(|g| g.gauge("gpu_power_usage").map(|s| s.avg))
        .collect();
    if !powers.is_empty() {
        let total: f64 = powers.iter().sum();
        out.push(metric(
            "total_gpu_power",
            "Total GPU Power",
            "W",
            total,
            900,
        ));
    }
    let energies: Vec<f64> = gpus
        .iter()
        .filter_map(GpuSummary::energy_joules)
        .map(|j| j.max(0.0))
        .collect();
    if energies.is_empty() {
        return out;
    }
    let energy: f64 = energies.iter().sum();
    out.push(metric(
        "total_gpu_energy",
        "Total GPU Energy",
        "J",
        energy,
        901,
    ));
    if energy > 0.0 {
        if let Some(tokens) = totals.output_tokens {
            out.push(metric(
                "output_tokens_per_joule",
                "Output Tokens Per Joule",
                "tokens/J",
                tokens / energy,
                902,
            ));
        }
    }
    if let Some(users) = totals.concurrency.filter(|c| *c > 0.0) {
        out.push(metric(
            "energy_per_user",
            "Energy Per User",
            "joules/user",
            energy / users,
            903,
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::{GpuIdentity, GpuMetric, GpuMetricValue, GPU_METRICS};
    use crate::stats::GaugeStats;

    fn gpu(index: &str, power: &[f64], energy_mj: Option<f64>) -> GpuSummary {
        let mut metrics = vec![GpuMetric {
            def: GPU_METRICS[0],
            value: GpuMetricValue::Gauge(GaugeStats::from_values(power).unwrap()),
        }];
        if let Some(delta) = energy_mj {
            metrics.push(GpuMetric {
                def: GPU_METRICS[1],
                value: GpuMetricValue::Counter { delta },
            });
        }
        GpuSummary {
            identity: GpuIdentity {
                index: index.into(),
                ..GpuIdentity::default()
            },
            metrics,
        }
    }

    #[test]
    fn hand_computed_values() {
        // GPU 0: mean 150 W, 0.003 MJ = 3000 J; GPU 1: mean 250 W, 0.001 MJ = 1000 J.
        let gpus = [
            gpu("0", &[100.0, 200.0], Some(0.003)),
            gpu("1", &[250.0], Some(0.001)),
        ];
        let totals = RunTotals {
            output_tokens: Some(2000.0),
            concurrency: Some(8.0),
        };
        let derived = power_efficiency(&gpus, totals);
        let got: Vec<(&str, &str, &str, f64)> = derived
            .iter()
            .map(|m| (m.tag, m.header.as_str(), m.unit, m.value))
            .collect();
        let expected = [
            ("total_gpu_power", "Total GPU Power (2 GPUs)", "W", 400.0),
            ("total_gpu_energy", "Total GPU Energy (2 GPUs)", "J", 4000.0),
            (
                "output_tokens_per_joule",
                "Output Tokens Per Joule (2 GPUs)",
                "tokens/J",
                0.5,
            ),
            (
                "energy_per_user",
                "Energy Per User (2 GPUs)",
                "joules/user",
                500.0,
            ),
        ];
        assert_eq!(got.len(), expected.len());
        for (g, e) in got.iter().zip(expected) {
            assert_eq!((g.0, g.1, g.2), (e.0, e.1, e.2));
            assert!((g.3 - e.3).abs() < 1e-9, "{}: {} vs {}", g.0, g.3, e.3);
        }
        assert_eq!(
            derived.iter().map(|m| m.order).collect::<Vec<_>>(),
            [900, 901, 902, 903]
        );
    }

    #[test]
    fn missing_inputs_leave_metrics_out() {
        let one = [gpu("0", &[80.0], None)];
        let derived = power_efficiency(&one, RunTotals::default());
        assert_eq!(derived.len(), 1);
        assert_eq!(derived[0].header, "Total GPU Power (1 GPUs)");

        // Zero energy: no tokens per joule (not infinity), energy per user is 0.
        let idle = [gpu("0", &[80.0], Some(0.0))];
        let derived = power_efficiency(
            &idle,
            RunTotals {
                output_tokens: Some(10.0),
                concurrency: Some(2.0),
            },
        );
        let tags: Vec<&str> = derived.iter().map(|m| m.tag).collect();
        assert_eq!(
            tags,
            ["total_gpu_power", "total_gpu_energy", "energy_per_user"]
        );
        assert!(power_efficiency(&[], RunTotals::default()).is_empty());
    }
}
