//! The GPU view of DCGM-exporter scrapes (docs/telemetry.md#gpu-metrics): per GPU, the
//! metrics of the DCGM mapping table in their display units.

use std::time::Duration;

use crate::scraper::EndpointScrapes;
use crate::stats::GaugeStats;
use crate::summary::{summarize_with_grace, SeriesStats, Window};

/// How a GPU metric is summarised.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuMetricKind {
    /// Statistics of the in-window samples.
    Gauge,
    /// Delta over the window.
    Counter,
}

/// One row of the DCGM mapping table.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GpuMetricDef {
    /// The tag used in exports (`gpu_power_usage`, …).
    pub tag: &'static str,
    /// The display name (`GPU Power Usage`).
    pub display: &'static str,
    /// The display unit.
    pub unit: &'static str,
    /// The DCGM family.
    pub source: &'static str,
    /// Gauge or counter.
    pub kind: GpuMetricKind,
    /// Factor from the DCGM unit to the display unit.
    pub scale: f64,
}

const fn def(
    tag: &'static str,
    display: &'static str,
    unit: &'static str,
    source: &'static str,
    kind: GpuMetricKind,
    scale: f64,
) -> GpuMetricDef {
    GpuMetricDef {
        tag,
        display,
        unit,
        source,
        kind,
        scale,
    }
}

/// The DCGM metrics, in the order of the table in docs/telemetry.md#gpu-metrics.
pub const GPU_METRICS: [GpuMetricDef; 14] = [
    def(
        "gpu_power_usage",
        "GPU Power Usage",
        "W",
        "DCGM_FI_DEV_POWER_USAGE",
        GpuMetricKind::Gauge,
        1.0,
    ),
    def(
        "energy_consumption",
        "Energy Consumption",
        "MJ",
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        GpuMetricKind::Counter,
        1e-9,
    ),
    def(
        "gpu_utilization",
        "GPU Utilization",
        "%",
        "DCGM_FI_DEV_GPU_UTIL",
        GpuMetricKind::Gauge,
        1.0,
    ),
    def(
        "mem_utilization",
        "Memory Utilization",
        "%",
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        GpuMetricKind::Gauge,
        1.0,
    ),
    def(
        "gpu_memory_used",
        "GPU Memory Used",
        "GB",
        "DCGM_FI_DEV_FB_USED",
        GpuMetricKind::Gauge,
        1.048576e-3,
    ),
    def(
        "gpu_temperature",
        "GPU Temperature",
        "°C",
        "DCGM_FI_DEV_GPU_TEMP",
        GpuMetricKind::Gauge,
        1.0,
    ),
    // Beyond the Python AIPerf's table (the issue asks for clocks and temperatures): DCGM
    // exports them.
    def(
        "memory_temperature",
        "Memory Temperature",
        "°C",
        "DCGM_FI_DEV_MEMORY_TEMP",
        GpuMetricKind::Gauge,
        1.0,
    ),
    def(
        "sm_clock",
        "SM Clock",
        "MHz",
        "DCGM_FI_DEV_SM_CLOCK",
        GpuMetricKind::Gauge,
        1.0,
    ),
    def(
        "memory_clock",
        "Memory Clock",
        "MHz",
        "DCGM_FI_DEV_MEM_CLOCK",
        GpuMetricKind::Gauge,
        1.0,
    ),
    def(
        "sm_utilization",
        "SM Utilization",
        "%",
        "DCGM_FI_PROF_SM_ACTIVE",
        GpuMetricKind::Gauge,
        100.0,
    ),
    def(
        "decoder_utilization",
        "Decoder Utilization",
        "%",
        "DCGM_FI_DEV_DEC_UTIL",
        GpuMetricKind::Gauge,
        1.0,
    ),
    def(
        "encoder_utilization",
        "Encoder Utilization",
        "%",
        "DCGM_FI_DEV_ENC_UTIL",
        GpuMetricKind::Gauge,
        1.0,
    ),
    def(
        "xid_errors",
        "XID Errors",
        "count",
        "DCGM_FI_DEV_XID_ERRORS",
        GpuMetricKind::Counter,
        1.0,
    ),
    def(
        "power_violation",
        "Power Violation",
        "µs",
        "DCGM_FI_DEV_POWER_VIOLATION",
        GpuMetricKind::Counter,
        1e-3,
    ),
];

/// The DCGM families [`GPU_METRICS`] reads, for [`crate::Scraper::keep_families`].
pub const DCGM_FAMILIES: [&str; GPU_METRICS.len()] = {
    let mut families = [""; GPU_METRICS.len()];
    let mut i = 0;
    while i < GPU_METRICS.len() {
        families[i] = GPU_METRICS[i].source;
        i += 1;
    }
    families
};

/// Who a GPU is, from DCGM labels.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GpuIdentity {
    /// `gpu` (index).
    pub index: String,
    /// `UUID`.
    pub uuid: Option<String>,
    /// `modelName`.
    pub model_name: Option<String>,
    /// `Hostname`.
    pub hostname: Option<String>,
    /// `pci_bus_id`.
    pub pci_bus_id: Option<String>,
    /// `device`.
    pub device: Option<String>,
    /// `namespace`.
    pub namespace: Option<String>,
    /// `pod`.
    pub pod: Option<String>,
}

/// A metric's value over the window, in its display unit.
#[derive(Debug, Clone, PartialEq)]
pub enum GpuMetricValue {
    /// Gauge statistics.
    Gauge(GaugeStats),
    /// Counter delta (never negative; resets count the new value, see
    /// [`crate::summary::CounterSummary`]).
    Counter {
        /// The increase.
        delta: f64,
    },
}

/// One metric of one GPU.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuMetric {
    /// Its row of [`GPU_METRICS`].
    pub def: GpuMetricDef,
    /// The value.
    pub value: GpuMetricValue,
}

/// One GPU over the window: the metrics the exporter provided, in [`GPU_METRICS`] order.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuSummary {
    /// Identity labels.
    pub identity: GpuIdentity,
    /// The metrics present.
    pub metrics: Vec<GpuMetric>,
}

impl GpuSummary {
    /// The metric tagged `tag`.
    pub fn metric(&self, tag: &str) -> Option<&GpuMetric> {
        self.metrics.iter().find(|m| m.def.tag == tag)
    }

    /// Gauge statistics of `tag`, if it is a gauge that was present.
    pub fn gauge(&self, tag: &str) -> Option<&GaugeStats> {
        match &self.metric(tag)?.value {
            GpuMetricValue::Gauge(s) => Some(s),
            GpuMetricValue::Counter { .. } => None,
        }
    }

    /// The counter delta of `tag` in its display unit.
    pub fn counter_delta(&self, tag: &str) -> Option<f64> {
        match &self.metric(tag)?.value {
            GpuMetricValue::Counter { delta } => Some(*delta),
            GpuMetricValue::Gauge(_) => None,
        }
    }

    /// Energy over the window in joules (the MJ delta × 1e6).
    pub fn energy_joules(&self) -> Option<f64> {
        self.counter_delta("energy_consumption").map(|mj| mj * 1e6)
    }
}

/// Per GPU (grouped by the `gpu` label, else `UUID`) summaries of a DCGM endpoint over
/// `window`, ordered by first appearance.
pub fn gpu_summaries(endpoint: &EndpointScrapes, window: Window) -> Vec<GpuSummary> {
    gpu_summaries_with_grace(endpoint, window, Duration::ZERO)
}

/// Like [`gpu_summaries`], but counters (energy, XID errors, power violation) also take
/// samples up to `grace` after the window's end: the final scrape lands just after the
/// profiling phase, and without it the energy of the window's last interval would be lost
/// (docs/telemetry.md#scrape-timing: the end is widened by 666 ms). Gauges keep the exact
/// window.
pub fn gpu_summaries_with_grace(
    endpoint: &EndpointScrapes,
    window: Window,
    grace: Duration,
) -> Vec<GpuSummary> {
    let summary = summarize_with_grace(endpoint, window, grace);
    let mut gpus: Vec<GpuSummary> = Vec::new();
    for def in GPU_METRICS {
        for series in summary.series.iter().filter(|s| s.name == def.source) {
            let Some(index) = series.label("gpu").or_else(|| series.label("UUID")) else {
                continue;
            };
            let value = match (&series.stats, def.kind) {
                (SeriesStats::Gauge(g), GpuMetricKind::Gauge) => {
                    GpuMetricValue::Gauge(g.scaled(def.scale))
                }
                (SeriesStats::Counter(c), GpuMetricKind::Counter) => GpuMetricValue::Counter {
                    delta: c.delta.max(0.0) * def.scale,
                },
                // DCGM exporters sometimes type counters as gauges: take the delta anyway.
                (SeriesStats::Gauge(g), GpuMetricKind::Counter) => GpuMetricValue::Counter {
                    delta: (g.max - g.min).max(0.0) * def.scale,
                },
                _ => continue,
            };
            let position = gpus.iter().position(|g| g.identity.index == index);
            let gpu = if let Some(i) = position {
                &mut gpus[i]
            } else {
                let label = |k: &str| series.label(k).map(str::to_string);
                gpus.push(GpuSummary {
                    identity: GpuIdentity {
                        index: index.to_string(),
                        uuid: label("UUID"),
                        model_name: label("modelName"),
                        hostname: label("Hostname"),
                        pci_bus_id: label("pci_bus_id"),
                        device: label("device"),
                        namespace: label("namespace"),
                        pod: label("pod"),
                    },
                    metrics: Vec::new(),
                });
                let last = gpus.len() - 1;
                &mut gpus[last]
            };
            if gpu.metric(def.tag).is_none() {
                gpu.metrics.push(GpuMetric { def, value });
            }
        }
    }
    gpus
}

#[cfg(test)]
mod tests {
    use std::time::Instant;

    use super::*;
    use crate::prometheus::parse;
    use crate::scraper::Scrape;

    fn scrape(at: Instant, power: f64, energy_mj: f64, fb_mib: f64, sm: f64) -> Scrape {
        let labels = r#"gpu="0",UUID="GPU-a",modelName="H100",Hostname="h""#;
        let text = format!(
            "# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n\
             DCGM_FI_DEV_POWER_USAGE{{{labels}}} {power}\n\
             # TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter\n\
             DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{{{labels}}} {energy_mj}\n\
             # TYPE DCGM_FI_DEV_FB_USED gauge\n\
             DCGM_FI_DEV_FB_USED{{{labels}}} {fb_mib}\n\
             # TYPE DCGM_FI_PROF_SM_ACTIVE gauge\n\
             DCGM_FI_PROF_SM_ACTIVE{{{labels}}} {sm}\n"
        );
        Scrape {
            sent_at: at,
            at,
            families: parse(&text).unwrap(),
        }
    }

    #[test]
    fn units_and_window() {
        let t = Instant::now();
        let ms = |n| t + Duration::from_millis(n);
        let endpoint = EndpointScrapes {
            name: "dcgm".into(),
            scrapes: vec![
                scrape(ms(0), 999.0, 1.0e9, 1.0, 0.0), // baseline: only its energy counts
                scrape(ms(100), 100.0, 1.0e9 + 2.0e6, 1000.0, 0.5),
                scrape(ms(200), 200.0, 1.0e9 + 5.0e6, 3000.0, 0.25),
                scrape(ms(300), 999.0, 9.0e9, 1.0, 0.0), // after the window
            ],
            ..EndpointScrapes::default()
        };
        let gpus = gpu_summaries(&endpoint, Window::new(ms(50), ms(250)));
        assert_eq!(gpus.len(), 1);
        let gpu = &gpus[0];
        assert_eq!(gpu.identity.index, "0");
        assert_eq!(gpu.identity.uuid.as_deref(), Some("GPU-a"));
        assert_eq!(gpu.identity.model_name.as_deref(), Some("H100"));
        assert_eq!(gpu.identity.hostname.as_deref(), Some("h"));
        let power = gpu.gauge("gpu_power_usage").unwrap();
        assert_eq!((power.count, power.avg, power.std), (2, 150.0, 50.0));
        // 5e6 mJ = 5000 J = 0.005 MJ
        assert!((gpu.counter_delta("energy_consumption").unwrap() - 0.005).abs() < 1e-12);
        assert!((gpu.energy_joules().unwrap() - 5000.0).abs() < 1e-6);
        // MiB × 1.048576e-3 → GB; ratio × 100 → %
        let fb = gpu.gauge("gpu_memory_used").unwrap();
        assert!((fb.avg - 2000.0 * 1.048576e-3).abs() < 1e-9);
        assert!((gpu.gauge("sm_utilization").unwrap().max - 50.0).abs() < 1e-9);
        assert_eq!(
            gpu.metrics.iter().map(|m| m.def.tag).collect::<Vec<_>>(),
            [
                "gpu_power_usage",
                "energy_consumption",
                "gpu_memory_used",
                "sm_utilization"
            ]
        );
    }

    #[test]
    fn counters_take_the_grace_period_gauges_do_not() {
        let t = Instant::now();
        let ms = |n| t + Duration::from_millis(n);
        let endpoint = EndpointScrapes {
            name: "dcgm".into(),
            scrapes: vec![
                scrape(ms(0), 100.0, 1.0e9, 1.0, 0.0),
                scrape(ms(100), 100.0, 1.0e9 + 1.0e6, 1.0, 0.0),
                scrape(ms(300), 500.0, 1.0e9 + 4.0e6, 1.0, 0.0), // final scrape, in grace
                scrape(ms(2000), 900.0, 9.0e9, 1.0, 0.0),        // long after
            ],
            ..EndpointScrapes::default()
        };
        let window = Window::new(ms(50), ms(200));
        let strict = gpu_summaries(&endpoint, window);
        assert!((strict[0].energy_joules().unwrap() - 1000.0).abs() < 1e-6);
        let graced = gpu_summaries_with_grace(&endpoint, window, Duration::from_millis(666));
        assert!((graced[0].energy_joules().unwrap() - 4000.0).abs() < 1e-6);
        let power = graced[0].gauge("gpu_power_usage").unwrap();
        assert_eq!((power.count, power.avg), (1, 100.0));
    }
}
