//! `GET /dcgm{N}/metrics`: fake NVIDIA DCGM exporters whose power and utilisation follow the
//! token rate the server actually serves.
//!
//! Model: each scrape measures the tokens/s served since the previous scrape of that exporter
//! and smooths it (time constant `window_sec`); load = 1 − exp(−rate / saturation_tps). Power =
//! idle + (max − idle) × load; utilisation, SM activity, temperature and memory follow the load.
//! Energy (`DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION`, mJ) integrates the reported power over time
//! (trapezoid between scrapes, idle power from server start), so its rate matches the power.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use crate::config::{DcgmConfig, GpuSpec};
use crate::faults::mix64;
use crate::state::State;

/// Per-exporter integration state.
#[derive(Debug, Clone)]
struct Exporter {
    last: Instant,
    last_tokens: u64,
    rate: f64,
    /// Power reported at the last scrape, per GPU, W.
    power: Vec<f64>,
    /// Energy counter per GPU, mJ.
    energy_mj: Vec<f64>,
}

/// State of all exporters (behind a mutex; only scrapes touch it).
#[derive(Debug, Clone)]
pub(crate) struct DcgmState {
    exporters: Vec<Exporter>,
}

impl DcgmState {
    pub(crate) fn new(cfg: &DcgmConfig, started: Instant) -> Self {
        let idle = cfg.gpu.spec().idle_power_w;
        let exporter = |i: u32| Exporter {
            last: started,
            last_tokens: 0,
            rate: 0.0,
            power: (0..cfg.num_gpus).map(|g| idle * variation(i, g)).collect(),
            // A counter "since boot": start from a plausible, per-GPU value.
            energy_mj: (0..cfg.num_gpus)
                .map(|g| 1.0e9 + (mix64(u64::from(i) << 8 | u64::from(g)) % 1_000_000_000) as f64)
                .collect(),
        };
        Self {
            exporters: (1..=cfg.instances).map(exporter).collect(),
        }
    }
}

/// Small deterministic per-GPU spread (±3 %).
fn variation(instance: u32, gpu: u32) -> f64 {
    let h = mix64(u64::from(instance) * 131 + u64::from(gpu));
    0.97 + (h % 6001) as f64 / 100_000.0
}

/// Render exporter `n` (1-based); `None` when there is no such exporter.
pub(crate) fn render(state: &State, n: u32) -> Option<String> {
    let cfg = &state.cfg.dcgm;
    if n == 0 || n > cfg.instances {
        return None;
    }
    let spec = cfg.gpu.spec();
    let tokens = state.stats.tokens_generated.load(Relaxed);
    let in_flight = state.stats.in_flight.load(Relaxed).max(0);
    let now = Instant::now();
    let (load, power, energy) = {
        let mut guard = state
            .dcgm
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let ex = guard.exporters.get_mut(n as usize - 1)?;
        let dt = now.saturating_duration_since(ex.last).as_secs_f64();
        if dt > 0.0 {
            let inst = tokens.saturating_sub(ex.last_tokens) as f64 / dt;
            let alpha = if cfg.window_sec > 0.0 {
                1.0 - (-dt / cfg.window_sec).exp()
            } else {
                1.0
            };
            ex.rate += (inst - ex.rate) * alpha;
            ex.last = now;
            ex.last_tokens = tokens;
        }
        let load = load_of(ex.rate, in_flight, cfg.saturation_tps);
        for g in 0..ex.power.len() {
            let p = power_of(&spec, load) * variation(n, g as u32);
            ex.energy_mj[g] += f64::midpoint(ex.power[g], p) * dt * 1000.0;
            ex.power[g] = p;
        }
        (load, ex.power.clone(), ex.energy_mj.clone())
    };
    Some(exposition(state, n, &spec, load, &power, &energy))
}

fn load_of(rate: f64, in_flight: i64, saturation: f64) -> f64 {
    let by_rate = if saturation > 0.0 {
        1.0 - (-rate / saturation).exp()
    } else if rate > 0.0 {
        1.0
    } else {
        0.0
    };
    // Requests in flight keep the GPU a little busy even between tokens.
    let by_work = if in_flight > 0 { 0.05 } else { 0.0 };
    by_rate.max(by_work).clamp(0.0, 1.0)
}

fn power_of(spec: &GpuSpec, load: f64) -> f64 {
    spec.idle_power_w + (spec.max_power_w - spec.idle_power_w) * load
}

fn exposition(
    state: &State,
    n: u32,
    spec: &GpuSpec,
    load: f64,
    power: &[f64],
    energy: &[f64],
) -> String {
    let cfg = &state.cfg.dcgm;
    let mut out = String::with_capacity(power.len() * 4096);
    let labels: Vec<String> = (0..power.len() as u32)
        .map(|g| {
            let h = mix64(u64::from(n) << 16 | u64::from(g));
            format!(
                "gpu=\"{g}\",UUID=\"GPU-{:08x}-{:04x}-{:04x}-{:04x}-{:012x}\",pci_bus_id=\"00000000:{:02X}:00.0\",device=\"nvidia{g}\",modelName=\"{}\",Hostname=\"{}\"",
                h >> 32,
                (h >> 16) & 0xffff,
                h & 0xffff,
                (h >> 48) & 0xffff,
                mix64(h) & 0xffff_ffff_ffff,
                0x18 + g * 0x10,
                spec.model_name,
                cfg.hostname.replace('"', "\\\""),
            )
        })
        .collect();
    let busy = load > 0.01;
    let per_gpu =
        |out: &mut String, name: &str, kind: &str, help: &str, value: &dyn Fn(usize) -> String| {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} {kind}");
            for (g, l) in labels.iter().enumerate() {
                let _ = writeln!(out, "{name}{{{l}}} {}", value(g));
            }
        };
    let vload = |g: usize| (load * variation(n, g as u32)).min(1.0);
    let mem = spec.memory_mib as f64;
    let used = |g: usize| (mem * (0.85 + 0.05 * vload(g))).round();
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_SM_CLOCK",
        "gauge",
        "SM clock frequency (in MHz).",
        &|_| (if busy { spec.max_sm_clock_mhz } else { 345 }).to_string(),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_MEM_CLOCK",
        "gauge",
        "Memory clock frequency (in MHz).",
        &|_| spec.mem_clock_mhz.to_string(),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_MEMORY_TEMP",
        "gauge",
        "Memory temperature (in C).",
        &|g| format!("{:.0}", 35.0 + 30.0 * vload(g)),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_GPU_TEMP",
        "gauge",
        "GPU temperature (in C).",
        &|g| format!("{:.0}", 32.0 + 40.0 * vload(g)),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_POWER_USAGE",
        "gauge",
        "Power draw (in W).",
        &|g| format!("{:.3}", power[g]),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        "counter",
        "Total energy consumption since boot (in mJ).",
        &|g| format!("{:.0}", energy[g]),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "counter",
        "Total number of PCIe retries.",
        &|_| "0".into(),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_GPU_UTIL",
        "gauge",
        "GPU utilization (in %).",
        &|g| format!("{:.0}", 100.0 * vload(g)),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_MEM_COPY_UTIL",
        "gauge",
        "Memory utilization (in %).",
        &|g| format!("{:.0}", 60.0 * vload(g)),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_ENC_UTIL",
        "gauge",
        "Encoder utilization (in %).",
        &|_| "0".into(),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_DEC_UTIL",
        "gauge",
        "Decoder utilization (in %).",
        &|_| "0".into(),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_XID_ERRORS",
        "gauge",
        "Value of the last XID error encountered.",
        &|_| "0".into(),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_FB_FREE",
        "gauge",
        "Framebuffer memory free (in MiB).",
        &|g| format!("{:.0}", mem - used(g)),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_FB_USED",
        "gauge",
        "Framebuffer memory used (in MiB).",
        &|g| format!("{:.0}", used(g)),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_DEV_POWER_VIOLATION",
        "counter",
        "Throttling duration due to power constraints (in us).",
        &|_| "0".into(),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "gauge",
        "Ratio of time the graphics engine is active.",
        &|g| format!("{:.6}", vload(g)),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_PROF_SM_ACTIVE",
        "gauge",
        "The ratio of cycles an SM has at least 1 warp assigned.",
        &|g| format!("{:.6}", 0.9 * vload(g)),
    );
    per_gpu(
        &mut out,
        "DCGM_FI_PROF_DRAM_ACTIVE",
        "gauge",
        "Ratio of cycles the device memory interface is active sending or receiving data.",
        &|g| format!("{:.6}", 0.7 * vload(g)),
    );
    out
}
