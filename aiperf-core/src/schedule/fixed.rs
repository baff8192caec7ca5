//! Trace replay (`--fixed-schedule`): sessions start at their trace timestamps.

use super::{saturating_secs, Arrival, PlannedSession, ScheduleError, Scheduler, TurnPacing};
use crate::conversation::Conversation;

/// Trace replay: each conversation starts at its first turn's timestamp minus time zero.
#[derive(Debug)]
pub struct FixedSchedule {
    arrivals: std::vec::IntoIter<PlannedSession>,
    zero_ms: f64,
}

impl FixedSchedule {
    /// The schedule of `conversations` (which all must have a first-turn timestamp), in
    /// timestamp order, with `zero_ms` as the phase start.
    pub fn new(conversations: &[Conversation], zero_ms: f64) -> Result<Self, ScheduleError> {
        let mut arrivals = Vec::with_capacity(conversations.len());
        for (index, conversation) in conversations.iter().enumerate() {
            let timestamp = first_timestamp(conversation).ok_or_else(|| {
                ScheduleError(format!(
                    "conversation {} has no timestamp on its first turn: a fixed schedule \
                     needs one on every entry",
                    conversation.session_id
                ))
            })?;
            arrivals.push(PlannedSession {
                at: saturating_secs((timestamp - zero_ms) / 1000.0),
                conversation: Some(index),
                ..PlannedSession::default()
            });
        }
        // Stable: entries with equal timestamps keep their file order.
        arrivals.sort_by_key(|arrival| arrival.at);
        Ok(Self {
            arrivals: arrivals.into_iter(),
            zero_ms,
        })
    }
}

impl Scheduler for FixedSchedule {
    fn next_arrival(&mut self) -> Arrival {
        self.arrivals
            .next()
            .map_or(Arrival::Exhausted, Arrival::Planned)
    }

    /// Later turns go at their own trace timestamps.
    fn turn_pacing(&self) -> TurnPacing {
        TurnPacing::Timestamps {
            zero_ms: self.zero_ms,
        }
    }
}

/// A conversation's replay instant: its first turn's trace timestamp in ms.
pub fn first_timestamp(conversation: &Conversation) -> Option<f64> {
    conversation.turns.first()?.timestamp_ms
}

/// The conversations a replay window keeps: first-turn timestamp within
/// `[start_ms, end_ms]` (either bound optional), in their original order.
pub fn replay_window(
    conversations: Vec<Conversation>,
    start_ms: Option<u64>,
    end_ms: Option<u64>,
) -> Vec<Conversation> {
    conversations
        .into_iter()
        .filter(|conversation| {
            let Some(ts) = first_timestamp(conversation) else {
                return true; // reported by FixedSchedule::new
            };
            start_ms.is_none_or(|start| ts >= start as f64)
                && end_ms.is_none_or(|end| ts <= end as f64)
        })
        .collect()
}
