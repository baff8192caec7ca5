//! Concurrency-aware, time-weighted metrics (the `effective_*`, `active_*` and
//! `tokens_in_flight` metrics of AIPerf 0.13).
//!
//! Each valid request is a set of intervals on the run's perf clock: in flight from its
//! start to its last content response; with streaming, in **prefill** from start to the
//! first content response and in **decode** from there to the last content response.
//! Summing over requests gives step functions of time (requests in flight, prefill and
//! decode concurrency, prefill and decode token rates) and one piecewise-linear function
//! (tokens in flight). A sweep over the sorted start/first/end events turns them into
//! time-weighted distributions over the measurement window: `effective_*` over the whole
//! window (idle time counts as 0), `active_*` only over the time the quantity was active
//! (decode concurrency > 0, prefill concurrency > 0, anything in flight). See
//! docs/metrics.md for each definition.
//!
//! Memory: 40 bytes per valid request plus 16 per event at the end (about 90 MB for a
//! million requests); the distributions themselves are bounded (t-digest past a limit).

use crate::catalogue::MetricId;
use crate::stats::{WeightedDistribution, WeightedStats};

#[derive(Debug, Clone, Copy)]
struct Entry {
    start: u64,
    first: Option<u64>,
    end: u64,
    isl: f64,
    osl: f64,
}

impl Entry {
    /// Prefill token rate (tokens/sec) while in prefill.
    fn prefill_rate(&self) -> f64 {
        match self.first {
            Some(f) if f > self.start && self.isl > 0.0 => {
                self.isl / ((f - self.start) as f64 / 1e9)
            }
            _ => 0.0,
        }
    }

    /// Decode token rate (tokens/ns) while in decode: the tokens after the first one,
    /// spread evenly between the first and the last content response.
    fn decode_rate_per_ns(&self) -> f64 {
        match self.first {
            Some(f) if self.end > f && self.osl >= 2.0 => (self.osl - 1.0) / (self.end - f) as f64,
            _ => 0.0,
        }
    }
}

/// Collects request intervals and computes the time-weighted metrics.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    entries: Vec<Entry>,
}

/// The metrics [`Timeline::compute`] produces, in output order.
pub const TIMELINE_METRICS: [MetricId; 14] = [
    MetricId::EffectiveConcurrency,
    MetricId::EffectiveDecodeThroughput,
    MetricId::EffectivePrefillThroughput,
    MetricId::EffectiveDecodeConcurrency,
    MetricId::EffectivePrefillConcurrency,
    MetricId::EffectiveTotalThroughput,
    MetricId::EffectiveDecodeThroughputPerUser,
    MetricId::EffectivePrefillThroughputPerUser,
    MetricId::TokensInFlight,
    MetricId::ActiveDecodeThroughput,
    MetricId::ActivePrefillThroughput,
    MetricId::ActiveDecodeThroughputPerUser,
    MetricId::ActivePrefillThroughputPerUser,
    MetricId::ActiveTotalThroughput,
];

impl Timeline {
    /// An empty timeline.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one valid request: perf ns of its start, first and last content response
    /// (`first` only with streaming), and its token counts.
    pub fn push(
        &mut self,
        start: u64,
        first: Option<u64>,
        end: u64,
        isl: Option<u64>,
        osl: Option<u64>,
    ) {
        let end = end.max(start);
        self.entries.push(Entry {
            start,
            first: first.map(|f| f.clamp(start, end)),
            end,
            isl: isl.unwrap_or(0) as f64,
            osl: osl.unwrap_or(0) as f64,
        });
    }

    /// Number of requests added.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// True when no request was added.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Time-weighted statistics over `[window.0, window.1]` (perf ns), one per
    /// [`TIMELINE_METRICS`] entry. Empty when there is no request or the window is empty.
    /// `active_*` metrics that were never active report zeros.
    pub fn compute(&self, window: (u64, u64)) -> Vec<(MetricId, WeightedStats)> {
        let (w0, w1) = window;
        if self.entries.is_empty() || w1 <= w0 {
            return Vec::new();
        }
        // (time, kind, index): kind 0 = start, 1 = first, 2 = end
        let mut events: Vec<(u64, u8, u32)> = Vec::with_capacity(self.entries.len() * 3);
        for (i, e) in self.entries.iter().enumerate() {
            let i = i as u32;
            events.push((e.start, 0, i));
            if let Some(f) = e.first {
                events.push((f, 1, i));
            }
            events.push((e.end, 2, i));
        }
        events.sort_unstable();

        let mut d: Vec<WeightedDistribution> = (0..TIMELINE_METRICS.len())
            .map(|_| WeightedDistribution::default())
            .collect();
        let (mut conc, mut pconc, mut dconc) = (0i64, 0i64, 0i64);
        let (mut prate, mut drate, mut tif, mut slope) = (0.0f64, 0.0f64, 0.0f64, 0.0f64);
        let mut prev = w0.min(events[0].0);
        let last = events.last().map_or(w1, |e| e.0);
        let tail = (w1 > last).then_some((w1, 3u8, 0u32));

        for &(t, kind, i) in events.iter().chain(tail.iter()) {
            if t > prev {
                let (a, b) = (prev.max(w0), t.min(w1));
                if b > a {
                    let weight = (b - a) as f64;
                    let tif_a = tif + slope * (a - prev) as f64;
                    let tif_b = tif_a + slope * weight;
                    let dps = drate * 1e9; // tokens/sec
                    let dpu = if dconc > 0 { dps / dconc as f64 } else { 0.0 };
                    let ppu = if pconc > 0 { prate / pconc as f64 } else { 0.0 };
                    let flat = |v: f64| (v, v);
                    let samples = [
                        conc as f64,
                        dps,
                        prate,
                        dconc as f64,
                        pconc as f64,
                        prate + dps,
                        dpu,
                        ppu,
                    ];
                    for (dist, v) in d.iter_mut().zip(samples) {
                        dist.push(v, weight, flat(v));
                    }
                    d[8].push(
                        f64::midpoint(tif_a, tif_b),
                        weight,
                        (tif_a.min(tif_b), tif_a.max(tif_b)),
                    );
                    if dconc > 0 {
                        d[9].push(dps, weight, flat(dps));
                        d[11].push(dpu, weight, flat(dpu));
                    }
                    if pconc > 0 {
                        d[10].push(prate, weight, flat(prate));
                        d[12].push(ppu, weight, flat(ppu));
                    }
                    if conc > 0 {
                        d[13].push(prate + dps, weight, flat(prate + dps));
                    }
                }
                tif += slope * (t - prev) as f64;
                prev = t;
            }
            if kind == 3 {
                break;
            }
            let e = &self.entries[i as usize];
            let streaming = e.first.is_some();
            match kind {
                0 => {
                    conc += 1;
                    if streaming {
                        pconc += 1;
                        prate += e.prefill_rate();
                        tif += e.isl;
                    }
                }
                1 => {
                    pconc -= 1;
                    prate -= e.prefill_rate();
                    dconc += 1;
                    drate += e.decode_rate_per_ns();
                    slope += e.decode_rate_per_ns();
                    if e.osl >= 1.0 {
                        tif += 1.0;
                    }
                }
                _ => {
                    conc -= 1;
                    if streaming {
                        dconc -= 1;
                        drate -= e.decode_rate_per_ns();
                        slope -= e.decode_rate_per_ns();
                        tif -= e.isl
                            + if e.osl >= 1.0 { 1.0 } else { 0.0 }
                            + e.decode_rate_per_ns() * e.first.map_or(0.0, |f| (e.end - f) as f64);
                    }
                }
            }
            // cancel floating-point drift whenever a population empties
            if pconc == 0 {
                prate = 0.0;
            }
            if dconc == 0 {
                drate = 0.0;
                slope = 0.0;
            }
            if conc == 0 {
                tif = 0.0;
            }
        }
        let zero = WeightedStats {
            avg: 0.0,
            min: 0.0,
            max: 0.0,
            std: 0.0,
            p50: 0.0,
            p90: 0.0,
            p95: 0.0,
            p99: 0.0,
        };
        TIMELINE_METRICS
            .iter()
            .zip(d)
            .map(|(id, dist)| (*id, dist.stats().unwrap_or(zero)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn get(stats: &[(MetricId, WeightedStats)], tag: &str) -> WeightedStats {
        stats.iter().find(|(id, _)| id.tag() == tag).unwrap().1
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn two_overlapping_streams() {
        // A: start 0, first 100 ms, end 300 ms, ISL 10, OSL 21
        // B: start 200 ms, first 250 ms, end 400 ms, ISL 20, OSL 4
        // window 0..500 ms
        let mut t = Timeline::new();
        t.push(0, Some(100 * MS), 300 * MS, Some(10), Some(21));
        t.push(200 * MS, Some(250 * MS), 400 * MS, Some(20), Some(4));
        let s = t.compute((0, 500 * MS));
        // concurrency: 1 on [0,200), 2 on [200,300), 1 on [300,400), 0 on [400,500)
        let c = get(&s, "effective_concurrency");
        assert!(close(c.avg, (200.0 + 200.0 + 100.0) / 500.0));
        assert_eq!(
            (c.min, c.max, c.p50, c.p90, c.p99),
            (0.0, 2.0, 1.0, 2.0, 2.0)
        );
        // prefill throughput: A 100 tok/s on [0,100); B 400 tok/s on [200,250)
        let p = get(&s, "effective_prefill_throughput");
        assert!(close(p.avg, (10.0 + 20.0) / 0.5));
        assert_eq!(p.max, 400.0);
        let ap = get(&s, "active_prefill_throughput");
        assert!(close(ap.avg, 30.0 / 0.15));
        assert_eq!(ap.min, 100.0);
        // decode: A 20 tokens over 200 ms = 100 tok/s on [100,300);
        //         B 3 tokens over 150 ms = 20 tok/s on [250,400)
        let dt = get(&s, "effective_decode_throughput");
        assert!(close(dt.avg, 23.0 / 0.5));
        assert!(close(dt.max, 120.0));
        let dc = get(&s, "effective_decode_concurrency");
        assert!(close(dc.avg, (200.0 + 150.0) / 500.0));
        // per user on [250,300): (100 + 20) / 2 = 60
        let dpu = get(&s, "active_decode_throughput_per_user");
        assert!(close(dpu.min, 20.0));
        assert!(close(dpu.max, 100.0));
        let total = get(&s, "effective_total_throughput");
        assert!(close(total.avg, (30.0 + 23.0) / 0.5));
        // tokens in flight: ISL while in flight + generated tokens ramp
        let tif = get(&s, "tokens_in_flight");
        // ∫ISL: 10·0.3 + 20·0.2 = 7 token·s; ramp A: 1 + 20·x over 0.2 s → avg 11 → 2.2;
        // ramp B: 1 + 3·x over 0.15 s → avg 2.5 → 0.375; total 9.575 token·s / 0.5 s
        assert!(close(tif.avg, 9.575 / 0.5), "{}", tif.avg);
        assert!(close(
            tif.max,
            10.0 + 21.0 + 20.0 + 1.0 + 3.0 * 50.0 / 150.0
        ));
        assert_eq!(tif.min, 0.0);
    }

    #[test]
    fn non_streaming_only_has_concurrency() {
        let mut t = Timeline::new();
        t.push(0, None, 100 * MS, Some(10), Some(10));
        let s = t.compute((0, 200 * MS));
        assert!(close(get(&s, "effective_concurrency").avg, 0.5));
        assert_eq!(get(&s, "tokens_in_flight").max, 0.0);
        assert_eq!(get(&s, "active_decode_throughput").avg, 0.0);
    }

    #[test]
    fn empty_window_gives_nothing() {
        let mut t = Timeline::new();
        assert!(t.compute((0, 10)).is_empty());
        t.push(0, None, 5, None, None);
        assert!(t.compute((10, 10)).is_empty());
    }
}
