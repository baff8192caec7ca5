//! Mapping scrape [`Instant`]s to Unix-epoch nanoseconds and back.
//!
//! Scrapes are stamped with the monotonic clock; the engine's records and the artifacts use
//! wall-clock nanoseconds. One anchor pair taken at start converts both ways, so a system
//! clock step during the run shifts nothing relative to the benchmark.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// An `(Instant, Unix ns)` pair taken at the same moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WallClock {
    instant: Instant,
    wall_ns: u64,
}

impl WallClock {
    /// The anchor pair, now.
    pub fn now() -> Self {
        let instant = Instant::now();
        let wall_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
        WallClock { instant, wall_ns }
    }

    /// An anchor from a known pair (tests, or an embedder's own clock).
    pub fn from_pair(instant: Instant, wall_ns: u64) -> Self {
        WallClock { instant, wall_ns }
    }

    /// Unix ns of `at` (before or after the anchor).
    pub fn wall_ns(&self, at: Instant) -> u64 {
        match at.checked_duration_since(self.instant) {
            Some(after) => self.wall_ns.saturating_add(nanos(after)),
            None => self
                .wall_ns
                .saturating_sub(nanos(self.instant.duration_since(at))),
        }
    }

    /// The instant of Unix ns `wall_ns`; instants before the process' earliest representable
    /// instant clamp to the anchor's side as far as the platform allows.
    pub fn instant(&self, wall_ns: u64) -> Instant {
        if wall_ns >= self.wall_ns {
            let after = Duration::from_nanos(wall_ns - self.wall_ns);
            self.instant.checked_add(after).unwrap_or(self.instant)
        } else {
            let before = Duration::from_nanos(self.wall_ns - wall_ns);
            self.instant.checked_sub(before).unwrap_or(self.instant)
        }
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_both_sides_of_the_anchor() {
        let now = Instant::now() + Duration::from_secs(10);
        let clock = WallClock::from_pair(now, 1_000_000_000_000);
        for offset in [0u64, 1, 333_000_000, 5_000_000_000] {
            let later = now + Duration::from_nanos(offset);
            assert_eq!(clock.wall_ns(later), 1_000_000_000_000 + offset);
            assert_eq!(clock.instant(1_000_000_000_000 + offset), later);
            let earlier = now.checked_sub(Duration::from_nanos(offset)).unwrap();
            assert_eq!(clock.wall_ns(earlier), 1_000_000_000_000 - offset);
            assert_eq!(clock.instant(1_000_000_000_000 - offset), earlier);
        }
    }
}
