//! Asynchronous jobs: a request whose first response is a ticket, followed by polls of
//! the job (and perhaps a download of its result) until the endpoint has its answer. All
//! the exchanges make one record, bounded by the request's timeout and its client
//! cancellation as if they were one request.

use std::time::{Duration, Instant};

use super::phase::PhaseRunner;
use crate::endpoint::FollowUp;
use crate::record::Credit;
use crate::transport::{
    HttpMethod, HttpRequest, RawExchange, SendControl, SessionKey, TransportError,
};

/// The bounds a job's follow-ups share with its first request: both count from the
/// first request's start.
pub(super) struct JobBounds {
    /// The request timeout.
    pub(super) timeout: Option<Duration>,
    /// The client cancellation drawn for this request, if any.
    pub(super) cancel_after: Option<Duration>,
}

impl JobBounds {
    /// The first bound reached after `started_at`: when, and the error it reports.
    fn earliest(&self, started_at: Instant) -> Option<(Instant, TransportError)> {
        let timeout = self
            .timeout
            .map(|t| (started_at + t, TransportError::Timeout(t)));
        let cancel = self
            .cancel_after
            .map(|c| (started_at + c, TransportError::CancelledByClient(c)));
        match (timeout, cancel) {
            (Some(t), Some(c)) => Some(if c.0 < t.0 { c } else { t }),
            (t, c) => t.or(c),
        }
    }
}

impl PhaseRunner {
    /// Follows the job `first` (the response to `request_url`) started, as the endpoint
    /// directs, and returns the exchange that answers it: the last status response (or
    /// the failure that ended the job), stretched to start when `first` started and to
    /// end when the last exchange ended. A plain request's exchange comes back as it is.
    ///
    /// The follow-ups carry the run's headers, the request id and the session id, not
    /// the first request's body headers. The HTTP trace describes one exchange, so a job
    /// that needed several has none.
    pub(super) async fn follow_job(
        &self,
        credit: &Credit,
        request_url: &str,
        session: Option<SessionKey>,
        bounds: JobBounds,
        first: RawExchange,
    ) -> RawExchange {
        let endpoint = self.shared.endpoint.as_ref();
        let started_at = first.started_at;
        let head_at = first.head_at;
        let limit = bounds.earliest(started_at);
        let mut retries = first.retries;
        let mut answer = first;
        let mut followed = 0_u32;
        loop {
            if answer.error.is_some() || !answer.status.is_some_and(|s| (200..300).contains(&s)) {
                break;
            }
            let (url, due, ends_job) = match endpoint.follow_up(request_url, followed, &answer) {
                FollowUp::Done => break,
                FollowUp::Poll { url, after } => (url, Instant::now() + after, false),
                FollowUp::Fetch { url } => (url, Instant::now(), true),
            };
            followed += 1;
            if let Some((at, error)) = limit.clone().filter(|(at, _)| *at <= due) {
                tokio::time::sleep_until(at.into()).await;
                answer.error = Some(error);
                answer.ended_at = Instant::now();
                break;
            }
            tokio::time::sleep_until(due.into()).await;
            let next = self.send_follow_up(credit, url, session.clone(), &bounds, started_at);
            let mut next = next.await;
            retries += next.retries;
            next.error = next.error.map(|error| in_job_terms(error, &bounds));
            if ends_job && next.error.is_none() && next.status.is_some_and(|s| s < 300) {
                answer.ended_at = next.ended_at;
                break;
            }
            answer = next;
            if ends_job {
                break;
            }
        }
        answer.started_at = started_at;
        answer.head_at = head_at;
        answer.retries = retries;
        if followed > 0 {
            answer.trace = None;
        }
        answer
    }

    /// Sends one `GET` of a job, with what is left of its bounds.
    async fn send_follow_up(
        &self,
        credit: &Credit,
        url: String,
        session: Option<SessionKey>,
        bounds: &JobBounds,
        started_at: Instant,
    ) -> RawExchange {
        let shared = &self.shared;
        let mut headers = shared.headers.clone();
        headers.push(("X-Request-ID".into(), credit.request_id.clone()));
        headers.push((shared.session_header.clone(), credit.correlation_id.clone()));
        let left = |bound: Duration| (started_at + bound).saturating_duration_since(Instant::now());
        let request = HttpRequest {
            method: HttpMethod::Get,
            url,
            headers,
            body: bytes::Bytes::new(),
            timeout: bounds.timeout.map(left),
        };
        let control = SendControl {
            cancel_after: bounds.cancel_after.map(left),
            session,
            ..SendControl::default()
        };
        shared.transport.send_controlled(request, control).await
    }
}

/// A follow-up's timeout or cancellation reported as the whole job's: the bound the user
/// set, not the part of it that was left.
fn in_job_terms(error: TransportError, bounds: &JobBounds) -> TransportError {
    match (error, bounds.timeout, bounds.cancel_after) {
        (TransportError::Timeout(_), Some(timeout), _) => TransportError::Timeout(timeout),
        (TransportError::CancelledByClient(_), _, Some(after)) => {
            TransportError::CancelledByClient(after)
        }
        (error, _, _) => error,
    }
}
