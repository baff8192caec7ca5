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
//! Memory: requests are kept until the sweep has passed them. Without a watermark that is
//! the end of the run (40 bytes per valid request, plus the events, 24 bytes each, while
//! the final sweep runs: about 110 MB for a million requests). With one
//! ([`Timeline::advance`], which the engine's processing thread supplies through
//! `RecordSink::on_watermark`), a request is dropped once every event of it is swept,
//! so what is kept is bounded by the requests in flight, not by the run's length; the
//! distributions are bounded too (t-digest past a limit).

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

    /// Its events in `[from, before)`: (time, kind) with kind 0 = start, 1 = first content
    /// response, 2 = end.
    fn events_in(&self, from: u64, before: u64) -> impl Iterator<Item = (u64, u8)> {
        [(Some(self.start), 0), (self.first, 1), (Some(self.end), 2)]
            .into_iter()
            .filter_map(|(at, kind)| at.map(|at| (at, kind)))
            .filter(move |(at, _)| (from..before).contains(at))
    }
}

/// Collects request intervals and computes the time-weighted metrics.
#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// Requests with events the sweep has not reached, in the order they were added:
    /// events at one instant are taken in that order, so any split of the sweep gives the
    /// same sums.
    pending: Vec<Entry>,
    added: u64,
    sweep: Sweep,
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
        self.pending.push(Entry {
            start,
            first: first.map(|f| f.clamp(start, end)),
            end,
            isl: isl.unwrap_or(0) as f64,
            osl: osl.unwrap_or(0) as f64,
        });
        self.added += 1;
    }

    /// Number of requests added.
    pub fn len(&self) -> usize {
        usize::try_from(self.added).unwrap_or(usize::MAX)
    }

    /// True when no request was added.
    pub fn is_empty(&self) -> bool {
        self.added == 0
    }

    /// Requests still kept: those with an event at or after the last watermark.
    pub fn kept(&self) -> usize {
        self.pending.len()
    }

    /// Sweeps every event before `watermark` now, and lets go of the requests that have
    /// none after it. The caller promises that every request added later starts at or
    /// after `watermark`, that the window [`Timeline::compute`] gets starts at
    /// `window_start` (given again here because the sweep needs it from its first
    /// step) and ends at or after every request's end. [`Timeline::compute`] then gives
    /// exactly what it gives without this call.
    pub fn advance(&mut self, watermark: u64, window_start: u64) {
        let window_start = *self.sweep.window_start.get_or_insert(window_start);
        if watermark > self.sweep.swept_before {
            // Every request ends by the window's end: no segment before the watermark
            // needs cutting there.
            self.sweep_before(watermark, (window_start, u64::MAX));
        }
    }

    /// Time-weighted statistics over `[window.0, window.1]` (perf ns), one per
    /// [`TIMELINE_METRICS`] entry. Empty when there is no request or the window is empty.
    /// `active_*` metrics that were never active report zeros. After
    /// [`Timeline::advance`] the window starts where that call said.
    pub fn compute(&mut self, window: (u64, u64)) -> Vec<(MetricId, WeightedStats)> {
        let window = (self.sweep.window_start.unwrap_or(window.0), window.1);
        if self.is_empty() || window.1 <= window.0 {
            return Vec::new();
        }
        self.sweep_before(u64::MAX, window);
        if self.sweep.previous.is_some_and(|last| window.1 > last) {
            self.sweep.step_to(window.1, window);
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
            .zip(&self.sweep.dists)
            .map(|(id, dist)| (*id, dist.stats().unwrap_or(zero)))
            .collect()
    }

    /// Applies the pending events in `[swept so far, before)` in time order (ties: start,
    /// first response, end; then the order requests were added) and drops the requests
    /// left with none.
    fn sweep_before(&mut self, before: u64, window: (u64, u64)) {
        let from = self.sweep.swept_before;
        let mut events: Vec<(u64, u8, usize)> = self
            .pending
            .iter()
            .enumerate()
            .flat_map(|(position, entry)| {
                entry
                    .events_in(from, before)
                    .map(move |(at, kind)| (at, kind, position))
            })
            .collect();
        events.sort_unstable();
        for (at, kind, position) in events {
            self.sweep.step_to(at, window);
            self.sweep.apply(kind, &self.pending[position]);
        }
        self.pending.retain(|entry| entry.end >= before);
        self.sweep.swept_before = before;
    }
}

/// The state of the sweep: the step functions' current values and the distributions of
/// the segments swept so far.
#[derive(Debug, Clone)]
struct Sweep {
    /// Events before this instant are applied.
    swept_before: u64,
    /// The window's start, once [`Timeline::advance`] fixed it.
    window_start: Option<u64>,
    /// The instant the segments swept so far end at.
    previous: Option<u64>,
    concurrency: i64,
    prefill_concurrency: i64,
    decode_concurrency: i64,
    prefill_rate: f64,
    decode_rate: f64,
    tokens_in_flight: f64,
    slope: f64,
    dists: Vec<WeightedDistribution>,
}

impl Default for Sweep {
    fn default() -> Self {
        Self {
            swept_before: 0,
            window_start: None,
            previous: None,
            concurrency: 0,
            prefill_concurrency: 0,
            decode_concurrency: 0,
            prefill_rate: 0.0,
            decode_rate: 0.0,
            tokens_in_flight: 0.0,
            slope: 0.0,
            dists: (0..TIMELINE_METRICS.len())
                .map(|_| WeightedDistribution::default())
                .collect(),
        }
    }
}

impl Sweep {
    /// Adds the segment from the previous instant to `at` (its part inside `window`) to
    /// the distributions, at the current values.
    fn step_to(&mut self, at: u64, (w0, w1): (u64, u64)) {
        let previous = *self.previous.get_or_insert(w0.min(at));
        if at <= previous {
            return;
        }
        let (a, b) = (previous.max(w0), at.min(w1));
        if b > a {
            let weight = (b - a) as f64;
            let tif_a = self.tokens_in_flight + self.slope * (a - previous) as f64;
            let tif_b = tif_a + self.slope * weight;
            let dps = self.decode_rate * 1e9; // tokens/sec
            let (conc, pconc, dconc) = (
                self.concurrency,
                self.prefill_concurrency,
                self.decode_concurrency,
            );
            let prate = self.prefill_rate;
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
            let d = &mut self.dists;
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
        self.tokens_in_flight += self.slope * (at - previous) as f64;
        self.previous = Some(at);
    }

    /// Applies one event of `e`: 0 = start, 1 = first content response, 2 = end.
    fn apply(&mut self, kind: u8, e: &Entry) {
        let streaming = e.first.is_some();
        match kind {
            0 => {
                self.concurrency += 1;
                if streaming {
                    self.prefill_concurrency += 1;
                    self.prefill_rate += e.prefill_rate();
                    self.tokens_in_flight += e.isl;
                }
            }
            1 => {
                self.prefill_concurrency -= 1;
                self.prefill_rate -= e.prefill_rate();
                self.decode_concurrency += 1;
                self.decode_rate += e.decode_rate_per_ns();
                self.slope += e.decode_rate_per_ns();
                if e.osl >= 1.0 {
                    self.tokens_in_flight += 1.0;
                }
            }
            _ => {
                self.concurrency -= 1;
                if streaming {
                    self.decode_concurrency -= 1;
                    self.decode_rate -= e.decode_rate_per_ns();
                    self.slope -= e.decode_rate_per_ns();
                    self.tokens_in_flight -= e.isl
                        + if e.osl >= 1.0 { 1.0 } else { 0.0 }
                        + e.decode_rate_per_ns() * e.first.map_or(0.0, |f| (e.end - f) as f64);
                }
            }
        }
        // cancel floating-point drift whenever a population empties
        if self.prefill_concurrency == 0 {
            self.prefill_rate = 0.0;
        }
        if self.decode_concurrency == 0 {
            self.decode_rate = 0.0;
            self.slope = 0.0;
        }
        if self.concurrency == 0 {
            self.tokens_in_flight = 0.0;
        }
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

    /// `count` requests as a run makes them, in completion order: (start, first, end,
    /// isl, osl), starts every ~1 ms, latencies 2–300 ms, streaming or not.
    fn run_of(count: u64, streaming: bool) -> Vec<(u64, Option<u64>, u64, u64, u64)> {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = |below: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) % below
        };
        let mut requests: Vec<_> = (0..count)
            .map(|i| {
                // Ties on purpose: several requests start at one instant.
                let start = MS + i / 3 * MS + next(2) * 7;
                let end = start + 2 * MS + next(298) * MS;
                let first = streaming.then(|| start + next(end - start + 1));
                (start, first, end, 10 + next(500), 1 + next(100))
            })
            .collect();
        requests.sort_by_key(|r| r.2);
        requests
    }

    #[test]
    fn a_sweep_advanced_by_watermarks_gives_exactly_the_whole_runs_figures() {
        for streaming in [true, false] {
            let requests = run_of(5_000, streaming);
            let window = (0, requests.iter().map(|r| r.2).max().unwrap() + 50 * MS);
            let mut whole = Timeline::new();
            let mut advanced = Timeline::new();
            let mut most_kept = 0;
            for (done, &(start, first, end, isl, osl)) in requests.iter().enumerate() {
                whole.push(start, first, end, Some(isl), Some(osl));
                advanced.push(start, first, end, Some(isl), Some(osl));
                if done % 100 == 99 {
                    // What the engine promises: nothing still to come started earlier.
                    let watermark = requests[done + 1..].iter().map(|r| r.0).min();
                    advanced.advance(watermark.unwrap_or(u64::MAX), window.0);
                    most_kept = most_kept.max(advanced.kept());
                }
            }
            assert!(
                most_kept < 2_500,
                "kept {most_kept} of 5,000: the sweep let nothing go"
            );
            // Bit for bit: the same segments summed in the same order.
            let whole = whole.compute(window);
            let advanced = advanced.compute(window);
            assert_eq!(format!("{whole:?}"), format!("{advanced:?}"));
            assert!(get(&whole, "effective_concurrency").avg > 10.0);
        }
    }

    #[test]
    fn empty_window_gives_nothing() {
        let mut t = Timeline::new();
        assert!(t.compute((0, 10)).is_empty());
        t.push(0, None, 5, None, None);
        assert!(t.compute((10, 10)).is_empty());
    }
}
