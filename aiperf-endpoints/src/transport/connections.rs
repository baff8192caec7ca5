//! Where an HTTP/1.1 request's connection comes from and where it goes after: idle
//! connections kept per origin for the next request, and with sticky sessions a
//! connection per conversation.
//!
//! An idle connection is checked when it is taken, not watched while it waits: one the
//! server closed meanwhile (llama.cpp closes every connection right after a streamed
//! response) is dropped then, and the next one is tried. The most recently used one is
//! taken first, so a run at low concurrency keeps using the same few connections and the
//! others age out after the idle timeout.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::h1::Connection;
use super::lock;

/// Idle connections per origin (`scheme://host:port`), and the conversations' own.
#[derive(Debug)]
pub(crate) struct Connections {
    idle: Mutex<HashMap<Arc<str>, VecDeque<Idle>>>,
    /// With sticky sessions: each conversation's connection between its turns, by
    /// correlation id.
    sessions: Option<Mutex<HashMap<String, Idle>>>,
    max_idle_per_origin: usize,
    idle_timeout: Option<Duration>,
}

#[derive(Debug)]
struct Idle {
    connection: Connection,
    since: Instant,
}

/// Whose connection a request uses.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Owner<'a> {
    /// The shared pool.
    Pool,
    /// A conversation's own (sticky sessions), by correlation id; `last`: its final turn,
    /// after which the connection closes.
    Session { id: &'a str, last: bool },
}

impl Connections {
    /// Keeps at most `max_idle_per_origin` idle connections per origin (0: none, every
    /// request opens its own), each for at most `idle_timeout`; with `sticky_sessions`
    /// a connection per conversation.
    pub(crate) fn new(
        max_idle_per_origin: usize,
        idle_timeout: Option<Duration>,
        sticky_sessions: bool,
    ) -> Self {
        Self {
            idle: Mutex::default(),
            sessions: sticky_sessions.then(Mutex::default),
            max_idle_per_origin,
            idle_timeout,
        }
    }

    /// Whose connection a request of this conversation uses.
    pub(crate) fn owner<'a>(&self, session: Option<&'a aiperf_core::SessionKey>) -> Owner<'a> {
        match (&self.sessions, session) {
            (Some(_), Some(key)) => Owner::Session {
                id: &key.id,
                last: key.last,
            },
            _ => Owner::Pool,
        }
    }

    /// An open connection to `origin` for `owner`, if one is kept and still usable.
    pub(crate) fn take(&self, origin: &str, owner: Owner<'_>) -> Option<Connection> {
        match owner {
            Owner::Pool => loop {
                let idle = lock(&self.idle).get_mut(origin)?.pop_back()?;
                if self.expired(&idle) {
                    // The newest is too old: so are the rest.
                    let stale = lock(&self.idle).remove(origin);
                    drop(stale);
                    return None;
                }
                if let Some(connection) = usable(idle) {
                    return Some(connection);
                }
            },
            Owner::Session { id, .. } => {
                let idle = lock(self.sessions.as_ref()?).remove(id)?;
                if self.expired(&idle) {
                    return None;
                }
                usable(idle)
            }
        }
    }

    /// Keeps a connection whose response was read whole for the owner's next request;
    /// after a conversation's last turn, or beyond the pool's bound, it closes.
    pub(crate) fn put(&self, origin: &Arc<str>, owner: Owner<'_>, connection: Connection) {
        let idle = Idle {
            connection,
            since: Instant::now(),
        };
        match owner {
            Owner::Pool => {
                if self.max_idle_per_origin == 0 {
                    return;
                }
                let mut pool = lock(&self.idle);
                let kept = pool.entry(origin.clone()).or_default();
                // The oldest first: they would expire first anyway.
                let stale = match kept.front() {
                    Some(oldest)
                        if self.expired(oldest) || kept.len() >= self.max_idle_per_origin =>
                    {
                        kept.pop_front()
                    }
                    _ => None,
                };
                if kept.len() < self.max_idle_per_origin {
                    kept.push_back(idle);
                }
                drop(pool);
                drop(stale);
            }
            Owner::Session { id, last } => {
                if let (Some(sessions), false) = (&self.sessions, last) {
                    lock(sessions).insert(id.to_owned(), idle);
                }
            }
        }
    }

    fn expired(&self, idle: &Idle) -> bool {
        self.idle_timeout
            .is_some_and(|timeout| idle.since.elapsed() >= timeout)
    }
}

/// The connection, unless the server closed it (or wrote to it) while it was idle.
fn usable(idle: Idle) -> Option<Connection> {
    let mut connection = idle.connection;
    connection.is_usable().then_some(connection)
}
