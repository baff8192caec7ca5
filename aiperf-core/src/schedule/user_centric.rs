//! User-centric rate (`--user-centric-rate QPS --num-users N`): N simulated users, each
//! sending its next turn one fixed gap after the previous, so the aggregate is QPS.
//!
//! The schedule starts in steady state, as the Python AIPerf's does: the initial users are
//! placed as if they had joined earlier, each with only the turns its "virtual age" leaves,
//! their first turns staggered by 1/QPS; one fresh user starts the full conversation at
//! time zero. Whenever a user's turns would be done, a new user with a full conversation
//! takes its place, on an absolute schedule that does not depend on how fast the server
//! answers.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use super::{saturating_secs, Arrival, PlannedSession, ScheduleError, Scheduler, TurnPacing};

/// A user waiting to start: (start offset, insertion order, turns to send or `None` for
/// the whole conversation, user id). Ordered by start, then insertion.
type PendingUser = (Duration, u64, Option<usize>, u64);

/// The user spawn schedule; each user's later turns are one [`turn_gap`](Self::turn_gap)
/// apart.
#[derive(Debug)]
pub struct UserCentricSchedule {
    turn_gap: Duration,
    turns_per_user: usize,
    pending: BinaryHeap<Reverse<PendingUser>>,
    inserted: u64,
    next_user_id: u64,
}

impl UserCentricSchedule {
    /// `rate` requests per second over `num_users` users whose conversations have
    /// `turns_per_user` turns on average (rounded; at least 2).
    pub fn new(rate: f64, num_users: usize, turns_per_user: usize) -> Result<Self, ScheduleError> {
        if !(rate.is_finite() && rate > 0.0) {
            return Err(ScheduleError(format!(
                "user-centric rate must be > 0, got {rate}"
            )));
        }
        if num_users == 0 {
            return Err(ScheduleError("load.num_users must be at least 1".into()));
        }
        let users = num_users as u64;
        let turn_gap = saturating_secs(num_users as f64 / rate);
        let stagger = saturating_secs(1.0 / rate);
        let lifetime = turns_per_user.saturating_sub(1).max(1) as u64;
        let mut schedule = Self {
            turn_gap,
            turns_per_user: turns_per_user.max(1),
            pending: BinaryHeap::new(),
            inserted: 0,
            next_user_id: 1,
        };
        let step = coprime_step(users);
        let spread_by_step = gcd(users, lifetime) > 1;
        for i in 0..users {
            let user_id = schedule.take_user_id();
            let virtual_age = (users - i) * lifetime;
            let session_age = virtual_age / users;
            let Some(turns) = lifetime.checked_sub(session_age).filter(|&t| t > 0) else {
                continue; // virtually done: its id is consumed, as upstream does
            };
            let slot = if spread_by_step {
                (i * step) % users
            } else {
                virtual_age % users
            };
            let order = (users - slot) as u32;
            schedule.push(stagger.saturating_mul(order), Some(turns as usize), user_id);
        }
        let fresh = schedule.take_user_id();
        schedule.push(Duration::ZERO, None, fresh);
        Ok(schedule)
    }

    /// The gap between one user's consecutive turns: `num_users / rate`.
    pub fn turn_gap(&self) -> Duration {
        self.turn_gap
    }

    fn take_user_id(&mut self) -> u64 {
        self.next_user_id += 1;
        self.next_user_id - 1
    }

    fn push(&mut self, at: Duration, turns: Option<usize>, user_id: u64) {
        self.inserted += 1;
        self.pending
            .push(Reverse((at, self.inserted, turns, user_id)));
    }
}

impl Scheduler for UserCentricSchedule {
    fn next_arrival(&mut self) -> Arrival {
        let Some(Reverse((at, _, turns, user_id))) = self.pending.pop() else {
            return Arrival::Exhausted;
        };
        // The user's place is taken by a new one when its last turn would have gone.
        let lifetime = turns.unwrap_or(self.turns_per_user) as u32;
        let replacement = self.take_user_id();
        let lifetime_gap = self.turn_gap.saturating_mul(lifetime);
        self.push(at.saturating_add(lifetime_gap), None, replacement);
        Arrival::Planned(PlannedSession {
            at,
            conversation: None,
            max_turns: turns,
            correlation_id: Some(user_id.to_string()),
        })
    }

    /// A user's turns are one gap apart.
    fn turn_pacing(&self) -> TurnPacing {
        TurnPacing::Gap(self.turn_gap)
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The smallest integer above 1 that is coprime with `n` (1 when `n <= 2`).
// Finite: n + 1 is always coprime with n.
#[allow(clippy::maybe_infinite_iter)]
fn coprime_step(n: u64) -> u64 {
    if n <= 2 {
        return 1;
    }
    (2..).find(|&k| gcd(n, k) == 1).unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn arrivals(schedule: &mut UserCentricSchedule, n: usize) -> Vec<PlannedSession> {
        (0..n)
            .map(|_| match schedule.next_arrival() {
                Arrival::Planned(planned) => planned,
                other => panic!("unexpected {other:?}"),
            })
            .collect()
    }

    #[test]
    fn starts_in_steady_state_with_staggered_truncated_users() {
        // 4 users at 8 QPS with 3-turn conversations: gap 0.5 s, stagger 0.125 s,
        // lifetime 2 gaps.
        let mut schedule = UserCentricSchedule::new(8.0, 4, 3).unwrap();
        assert_eq!(schedule.turn_gap(), Duration::from_millis(500));
        let first = arrivals(&mut schedule, 5);
        let summary: Vec<(u128, Option<usize>, String)> = first
            .iter()
            .map(|p| {
                (
                    p.at.as_millis(),
                    p.max_turns,
                    p.correlation_id.clone().unwrap(),
                )
            })
            .collect();
        // virtual ages 8, 6, 4, 2 → session ages 2, 1, 1, 0 → turns 0 (skipped), 1, 1, 2;
        // gcd(4, 2) = 2 so slots are i·3 mod 4 = 3, 2, 1 → orders 1, 2, 3.
        assert_eq!(
            summary,
            vec![
                (0, None, "5".to_string()),
                (125, Some(1), "2".to_string()),
                (250, Some(1), "3".to_string()),
                (375, Some(2), "4".to_string()),
                (625, None, "7".to_string()),
            ]
        );
    }

    #[test]
    fn replacement_users_keep_the_aggregate_rate() {
        let mut schedule = UserCentricSchedule::new(10.0, 5, 4).unwrap();
        let planned = arrivals(&mut schedule, 200);
        // Steady state: every user sends one turn per gap, so turns per second is the
        // rate. Count turns sent between 5 s and 15 s.
        let gap = schedule.turn_gap().as_secs_f64();
        let mut turns_in_window = 0;
        for p in &planned {
            let turns = p.max_turns.unwrap_or(4);
            for k in 0..turns {
                let t = p.at.as_secs_f64() + k as f64 * gap;
                if (5.0..15.0).contains(&t) {
                    turns_in_window += 1;
                }
            }
        }
        assert!(
            (95..=105).contains(&turns_in_window),
            "{turns_in_window} turns in 10 s at 10 QPS"
        );
        assert!(planned.windows(2).all(|w| w[0].at <= w[1].at));
    }

    #[test]
    fn coprime_steps() {
        assert_eq!(coprime_step(2), 1);
        assert_eq!(coprime_step(4), 3);
        assert_eq!(coprime_step(6), 5);
        assert_eq!(coprime_step(9), 2);
    }
}
