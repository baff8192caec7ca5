//! One monotonic clock for every duration, plus a wall-clock anchor for artifacts.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// `secs` seconds as a [`Duration`], for values a user or a file gave: negative and NaN
/// are zero, values beyond what a `Duration` holds saturate at [`Duration::MAX`]. Never
/// panics, unlike `Duration::from_secs_f64`.
pub fn saturating_secs(secs: f64) -> Duration {
    if secs.is_nan() || secs <= 0.0 {
        return Duration::ZERO;
    }
    Duration::try_from_secs_f64(secs).unwrap_or(Duration::MAX)
}

/// `start + offset`, or an instant a century ahead (never reached in a run) when the sum
/// does not fit: a huge configured duration or trace timestamp waits "forever" instead of
/// panicking.
pub fn instant_after(start: Instant, offset: Duration) -> Instant {
    const CENTURY: Duration = Duration::from_secs(100 * 365 * 86_400);
    start
        .checked_add(offset)
        .or_else(|| start.checked_add(CENTURY))
        .unwrap_or(start)
}

/// The [`Instant`] at which the system clock read `unix` (time since the Unix epoch, as
/// the kernel stamps received packets): now, less how long ago that was by the system
/// clock. The two clocks are read back to back, so the conversion errs by far less than a
/// microsecond; a stamp from the future (the system clock stepped back since) is now.
pub fn instant_of_unix_time(unix: Duration) -> Instant {
    let now = Instant::now();
    let age = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .ok()
        .and_then(|wall| wall.checked_sub(unix))
        .unwrap_or(Duration::ZERO);
    now.checked_sub(age).unwrap_or(now)
}

/// Converts monotonic [`Instant`]s into the two numbers artifacts need.
///
/// The hot path stamps `Instant::now()` only; conversion to nanoseconds happens later,
/// when a record is processed. "Perf" nanoseconds count from the anchor and never go
/// backwards; "wall" nanoseconds are the anchor's Unix time plus the perf offset, so wall
/// times in one run are consistent with each other even if the system clock steps.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    anchor: Instant,
    anchor_wall_ns: u64,
}

impl Clock {
    /// Takes the anchor now.
    pub fn start() -> Self {
        let anchor = Instant::now();
        let anchor_wall_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        Self {
            anchor,
            anchor_wall_ns,
        }
    }

    /// A clock whose perf nanoseconds are Unix nanoseconds, for records of several
    /// processes put on one time axis (`aiperf merge`): `wall_of_perf` is the identity.
    pub fn unix() -> Self {
        Self {
            anchor: Instant::now(),
            anchor_wall_ns: 0,
        }
    }

    /// The same clock with wall times `offset_ns` later (earlier when negative): wall
    /// times in another clock's time, e.g. a shard's in its clock reference's.
    #[must_use]
    pub fn shifted(self, offset_ns: i64) -> Self {
        Self {
            anchor: self.anchor,
            anchor_wall_ns: self.anchor_wall_ns.saturating_add_signed(offset_ns),
        }
    }

    /// The monotonic anchor.
    pub fn anchor(&self) -> Instant {
        self.anchor
    }

    /// Nanoseconds from the anchor to `at` (0 for instants before the anchor).
    pub fn perf_ns(&self, at: Instant) -> u64 {
        at.saturating_duration_since(self.anchor).as_nanos() as u64
    }

    /// Unix-epoch nanoseconds of `at`.
    pub fn wall_ns(&self, at: Instant) -> u64 {
        self.anchor_wall_ns + self.perf_ns(at)
    }

    /// Unix-epoch nanoseconds of a perf timestamp.
    pub fn wall_of_perf(&self, perf_ns: u64) -> u64 {
        self.anchor_wall_ns + perf_ns
    }
}

/// Unix ns as the naive UTC ISO timestamp the Python AIPerf writes in its artifacts
/// (`2026-11-22T02:06:59.552360`).
pub fn iso_time(unix_ns: u64) -> String {
    let secs = unix_ns / 1_000_000_000;
    let micros = (unix_ns % 1_000_000_000) / 1_000;
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{micros:06}",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian (H. Hinnant's
/// civil-from-days algorithm).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_and_odd_seconds_saturate_instead_of_panicking() {
        assert_eq!(saturating_secs(1.5), Duration::from_millis(1500));
        assert_eq!(saturating_secs(1e300), Duration::MAX);
        assert_eq!(saturating_secs(f64::INFINITY), Duration::MAX);
        assert_eq!(saturating_secs(-3.0), Duration::ZERO);
        assert_eq!(saturating_secs(f64::NAN), Duration::ZERO);
        let now = Instant::now();
        assert!(instant_after(now, Duration::MAX) > now + Duration::from_secs(3_000_000_000));
        assert_eq!(
            instant_after(now, Duration::from_secs(2)),
            now + Duration::from_secs(2)
        );
    }
    use std::time::Duration;

    #[test]
    fn a_unix_time_becomes_the_instant_that_long_ago() {
        let wall = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
        let before = Instant::now();
        let at = instant_of_unix_time(wall.saturating_sub(Duration::from_millis(50)));
        let after = Instant::now();
        // Within the clock reads around the call (plus a millisecond for the two clocks'
        // different rates under NTP slewing).
        assert!(at + Duration::from_millis(50) + Duration::from_millis(1) >= before);
        assert!(at + Duration::from_millis(50) <= after + Duration::from_millis(1));
        // A stamp from the future is now.
        let future = instant_of_unix_time(wall + Duration::from_secs(3600));
        assert!(future >= after && future <= Instant::now());
    }

    #[test]
    fn wall_and_perf_differ_by_the_anchor() {
        let clock = Clock::start();
        let later = clock.anchor() + Duration::from_millis(5);
        assert_eq!(clock.perf_ns(later), 5_000_000);
        assert_eq!(
            clock.wall_ns(later) - clock.wall_ns(clock.anchor()),
            5_000_000
        );
        assert_eq!(
            clock.perf_ns(
                clock
                    .anchor()
                    .checked_sub(Duration::from_millis(1))
                    .unwrap()
            ),
            0
        );
    }

    #[test]
    fn a_shifted_clock_moves_wall_times_only() {
        let clock = Clock::start();
        let later = clock.anchor() + Duration::from_millis(5);
        let ahead = clock.shifted(250_000_000);
        assert_eq!(ahead.wall_ns(later), clock.wall_ns(later) + 250_000_000);
        assert_eq!(ahead.perf_ns(later), clock.perf_ns(later));
        assert_eq!(clock.shifted(-7).wall_ns(later), clock.wall_ns(later) - 7);
    }
}
