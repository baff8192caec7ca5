//! Asynchronous video jobs, as OpenAI's videos API and SGLang serve them:
//! `POST /v1/videos` creates a job (a `multipart/form-data` or JSON body with `prompt`),
//! `GET /v1/videos/{id}` reports it (`queued` for the first tenth of `--video-job-ms`,
//! then `in_progress`, then `completed` or, for a seeded `--video-failure-rate` % of jobs,
//! `failed`), `GET /v1/videos/{id}/content` returns the video's bytes once completed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use bytes::Bytes;
use hyper::StatusCode;
use serde_json::{json, Map, Value};

use super::{parse, unix_now, ApiError, Ctx, Reply};
use crate::faults::derive;
use crate::state::State;

/// The bytes every finished video downloads as: an MP4 `ftyp` box, then zeros (64 KiB).
pub const VIDEO_BYTES: usize = 64 * 1024;

/// One job, as created.
#[derive(Debug, Clone)]
pub(crate) struct VideoJob {
    created: Instant,
    created_unix: u64,
    duration: Duration,
    fails: bool,
    model: String,
    size: String,
    seconds: String,
}

/// Where a job stands at `now`.
enum Stage {
    Queued,
    InProgress(u32),
    Completed,
    Failed,
}

impl VideoJob {
    fn stage(&self, now: Instant) -> Stage {
        let elapsed = now.saturating_duration_since(self.created);
        if elapsed >= self.duration {
            return if self.fails {
                Stage::Failed
            } else {
                Stage::Completed
            };
        }
        if elapsed < self.duration / 10 {
            return Stage::Queued;
        }
        let progress = elapsed.as_secs_f64() / self.duration.as_secs_f64() * 100.0;
        Stage::InProgress(progress as u32)
    }

    /// The job object the API answers with at `stage`.
    fn to_json(&self, id: &str, stage: Stage) -> Value {
        let (status, progress) = match stage {
            Stage::Queued => ("queued", 0),
            Stage::InProgress(progress) => ("in_progress", progress),
            Stage::Completed => ("completed", 100),
            Stage::Failed => ("failed", 100),
        };
        let mut job = json!({
            "id": id,
            "object": "video",
            "model": self.model,
            "status": status,
            "progress": progress,
            "created_at": self.created_unix,
            "size": self.size,
            "seconds": self.seconds,
            "quality": "standard",
        });
        match status {
            "completed" => {
                job["completed_at"] = json!(self.created_unix + self.duration.as_secs());
                job["inference_time_s"] = json!(self.duration.as_secs_f64());
                job["peak_memory_mb"] = json!(20480.0);
            }
            "failed" => {
                job["error"] = json!({
                    "code": "video_generation_failed",
                    "message": "Injected video generation failure \
                                (aiperf-mock-server --video-failure-rate)",
                });
            }
            _ => {}
        }
        job
    }
}

/// The jobs of one server, by id.
pub(crate) type VideoJobs = std::sync::Mutex<HashMap<String, VideoJob>>;

/// `POST /v1/videos`: creates a job and answers with it, `queued`.
pub(crate) fn create(ctx: Ctx, body: &[u8]) -> Result<Reply, ApiError> {
    let fields = if body.starts_with(b"--") {
        form_fields(body)?
    } else {
        parse::<Map<String, Value>>(body)?
    };
    let text = |name: &str| match fields.get(name) {
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    };
    let prompt = text("prompt")
        .filter(|p| !p.trim().is_empty())
        .ok_or_else(|| ApiError::bad_request("'prompt' is required"))?;
    let cfg = &ctx.state.cfg;
    let job_ms = if cfg.fast { 0.0 } else { cfg.video_job_ms };
    let draw = (derive(ctx.state.seed, ctx.seq, 0x71DE0) >> 11) as f64 / (1u64 << 53) as f64;
    let job = VideoJob {
        created: ctx.start,
        created_unix: unix_now(),
        duration: Duration::from_secs_f64(job_ms / 1000.0),
        fails: draw * 100.0 < cfg.video_failure_rate,
        model: ctx.model(text("model").as_deref()),
        size: text("size").unwrap_or_else(|| "720x1280".into()),
        seconds: text("seconds").unwrap_or_else(|| "4".into()),
    };
    let id = ctx.id("video_");
    // A new job is queued, whatever its duration: clients poll before anything else.
    let answer = job.to_json(&id, Stage::Queued);
    if let Ok(mut jobs) = ctx.state.videos.lock() {
        jobs.insert(id, job);
    }
    let prompt_tokens = u64::from(ctx.count(&prompt));
    Ok(ctx.plain(Bytes::from(answer.to_string()), None, prompt_tokens))
}

/// `GET /v1/videos/{id}` and `GET /v1/videos/{id}/content`: the job's status, or its
/// video once completed. `Err` is a status and message for an error body.
pub(crate) fn lookup(state: &State, path: &str) -> Result<(Bytes, &'static str), ApiError> {
    let rest = path.trim_start_matches("/v1/videos/");
    let (id, content) = match rest.strip_suffix("/content") {
        Some(id) => (id, true),
        None => (rest, false),
    };
    let job = state
        .videos
        .lock()
        .ok()
        .and_then(|jobs| jobs.get(id).cloned())
        .ok_or_else(|| ApiError {
            status: StatusCode::NOT_FOUND,
            kind: "invalid_request_error",
            message: format!("no video job {id:?}"),
        })?;
    let now = Instant::now();
    if !content {
        return Ok((
            Bytes::from(job.to_json(id, job.stage(now)).to_string()),
            "application/json",
        ));
    }
    match job.stage(now) {
        Stage::Completed => {
            let mut video = vec![0_u8; VIDEO_BYTES];
            video[..12].copy_from_slice(b"\0\0\0\x18ftypmp42");
            Ok((Bytes::from(video), "video/mp4"))
        }
        _ => Err(ApiError::bad_request(format!(
            "video {id:?} is not completed; poll /v1/videos/{id} first"
        ))),
    }
}

/// The fields of a `multipart/form-data` body, as strings (file parts included).
fn form_fields(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let text = String::from_utf8_lossy(body);
    let boundary = text
        .split("\r\n")
        .next()
        .filter(|line| line.len() > 2)
        .ok_or_else(|| ApiError::bad_request("malformed multipart body: no boundary line"))?;
    let mut fields = Map::new();
    for part in text.split(boundary).skip(1) {
        if part.starts_with("--") {
            break;
        }
        let (headers, value) = part
            .split_once("\r\n\r\n")
            .ok_or_else(|| ApiError::bad_request("malformed multipart part: no blank line"))?;
        let name = headers
            .split("name=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .ok_or_else(|| ApiError::bad_request("multipart part without a name"))?;
        let value = value.strip_suffix("\r\n").unwrap_or(value);
        fields.insert(name.to_owned(), Value::String(value.to_owned()));
    }
    Ok(fields)
}
