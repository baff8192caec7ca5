//! The processing watermark: no record still on its way to the sink started before it.
//!
//! Every request takes a [`Ticket`] when its credit is issued; the ticket's instant is
//! the credit's issue instant, so the request starts at or after it. The ticket travels
//! with the request to the processing thread and is dropped once its record was handed
//! to the sink (or when the request is abandoned). The earliest instant among the live
//! tickets is then a point before which the sink has seen everything: records arrive in
//! completion order, and this is what lets a sink settle a time-ordered computation as
//! the run goes instead of holding every request to the end (`RecordSink::on_watermark`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// The issue instants of the requests whose records the sink has not received.
#[derive(Debug, Default)]
pub(super) struct Unprocessed {
    /// By issue order, which is also instant order: both are taken under the lock.
    issued: Mutex<Issued>,
}

#[derive(Debug, Default)]
struct Issued {
    next: u64,
    at: BTreeMap<u64, Instant>,
}

/// One request not yet processed; dropping it says it no longer is.
#[derive(Debug)]
pub(super) struct Ticket {
    owner: Arc<Unprocessed>,
    number: u64,
}

impl Unprocessed {
    /// A ticket for a request issued now, and that instant.
    pub(super) fn issue(self: &Arc<Self>) -> (Ticket, Instant) {
        let mut issued = self.lock();
        let number = issued.next;
        issued.next += 1;
        // Taken under the lock: a later ticket never has an earlier instant, and no
        // ticket is issued before a watermark read at the same time.
        let at = Instant::now();
        issued.at.insert(number, at);
        let ticket = Ticket {
            owner: Arc::clone(self),
            number,
        };
        (ticket, at)
    }

    /// No request without its record processed was issued before this instant: the
    /// earliest live ticket's, or now when there is none. Never decreases.
    pub(super) fn watermark(&self) -> Instant {
        let issued = self.lock();
        issued
            .at
            .first_key_value()
            .map_or_else(Instant::now, |(_, at)| *at)
    }

    fn lock(&self) -> MutexGuard<'_, Issued> {
        // The map stays consistent whatever panicked while holding it.
        self.issued.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        self.owner.lock().at.remove(&self.number);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watermark_is_the_oldest_live_tickets_instant() {
        let unprocessed = Arc::new(Unprocessed::default());
        let (first, first_at) = unprocessed.issue();
        let (second, second_at) = unprocessed.issue();
        let (third, third_at) = unprocessed.issue();
        assert!(first_at <= second_at && second_at <= third_at);
        assert_eq!(unprocessed.watermark(), first_at);
        // Out of order: the oldest still holds the watermark back.
        drop(second);
        assert_eq!(unprocessed.watermark(), first_at);
        drop(first);
        assert_eq!(unprocessed.watermark(), third_at);
        drop(third);
        let empty = unprocessed.watermark();
        assert!(empty >= third_at);
        let (_fourth, fourth_at) = unprocessed.issue();
        assert!(
            fourth_at >= empty,
            "a ticket issued after a read is not before it"
        );
    }
}
