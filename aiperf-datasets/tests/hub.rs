//! Hugging Face datasets: the cache layout is found offline without any network access,
//! a missing dataset offline says where its files go, a download asks the parquet
//! listing, sends the token only to the hub and fills the cache layout, an interrupted
//! download resumes with `Range`, rows come out of Parquet, JSON Lines and JSON, and a
//! streamed dataset reads no more rows than the run needs.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use aiperf_core::transport::{BoxFuture, Chunk, HttpRequest, RawExchange, TransportError};
use aiperf_core::Transport;
use aiperf_datasets::hub::{read_rows, resolve, HubDataset, HubError, HubOptions};
use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray};
use serde_json::json;

fn options(cache: &Path, offline: bool) -> HubOptions {
    HubOptions {
        cache_dir: Some(cache.to_path_buf()),
        offline,
        token: Some("hf_secret".into()),
        endpoint: "http://127.0.0.1:9".into(),
        timeout: Duration::from_secs(5),
    }
}

fn gsm8k() -> HubDataset {
    HubDataset {
        id: "openai/gsm8k".into(),
        config: Some("main".into()),
        split: "test".into(),
        revision: None,
    }
}

fn parquet_bytes(questions: &[&str]) -> Vec<u8> {
    let ids: Vec<i64> = (1..=questions.len() as i64).collect();
    let batch = RecordBatch::try_from_iter([
        (
            "question",
            Arc::new(StringArray::from(questions.to_vec())) as ArrayRef,
        ),
        ("id", Arc::new(Int64Array::from(ids)) as ArrayRef),
    ])
    .unwrap();
    let mut out = Vec::new();
    let mut writer = parquet::arrow::ArrowWriter::try_new(&mut out, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
    out
}

/// A snapshot as `huggingface_hub` leaves it: `refs/main` → `snapshots/<commit>/`.
fn cached_snapshot(cache: &Path, files: &[(&str, Vec<u8>)]) -> PathBuf {
    let repo = cache.join("datasets--openai--gsm8k");
    let commit = "0123456789abcdef0123456789abcdef01234567";
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), commit).unwrap();
    let snapshot = repo.join("snapshots").join(commit);
    for (path, bytes) in files {
        let path = snapshot.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }
    snapshot
}

/// Fails the test when anything is sent.
struct NoNetwork;

impl Transport for NoNetwork {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, RawExchange> {
        panic!("offline resolution sent a request to {}", request.url)
    }
}

#[tokio::test]
async fn cached_files_are_found_without_any_request() {
    let cache = tempfile::tempdir().unwrap();
    let snapshot = cached_snapshot(
        cache.path(),
        &[
            ("main/test-00000-of-00001.parquet", parquet_bytes(&["a"])),
            ("main/train-00000-of-00001.parquet", parquet_bytes(&["b"])),
            ("README.md", b"# gsm8k".to_vec()),
        ],
    );
    for offline in [true, false] {
        let files = resolve(&gsm8k(), &options(cache.path(), offline), &NoNetwork)
            .await
            .unwrap();
        assert_eq!(files, [snapshot.join("main/test-00000-of-00001.parquet")]);
    }
}

#[tokio::test]
async fn offline_and_missing_names_the_id_and_the_folder() {
    let cache = tempfile::tempdir().unwrap();
    let error = resolve(&gsm8k(), &options(cache.path(), true), &NoNetwork)
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "Hugging Face dataset openai/gsm8k (main/test) is not in the local cache and \
             HF_HUB_OFFLINE is set: put its files in {}, or unset HF_HUB_OFFLINE to download them",
            cache
                .path()
                .join("datasets--openai--gsm8k/snapshots/main/main/test")
                .display()
        )
    );
    // The folder named is one the next run finds.
    let folder = cache
        .path()
        .join("datasets--openai--gsm8k/snapshots/main/main/test");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::write(folder.join("0000.parquet"), parquet_bytes(&["q"])).unwrap();
    let files = resolve(&gsm8k(), &options(cache.path(), true), &NoNetwork)
        .await
        .unwrap();
    assert_eq!(files, [folder.join("0000.parquet")]);
}

#[test]
fn rows_come_from_parquet_jsonl_and_json_with_projection() {
    let dir = tempfile::tempdir().unwrap();
    let parquet = dir.path().join("a.parquet");
    std::fs::write(&parquet, parquet_bytes(&["first", "second"])).unwrap();
    let jsonl = dir.path().join("b.jsonl");
    std::fs::write(
        &jsonl,
        "{\"question\": \"third\", \"id\": 3}\n\n{\"question\": \"fourth\"}\n",
    )
    .unwrap();
    let array = dir.path().join("c.json");
    std::fs::write(&array, r#"[{"question": "fifth", "extra": [1, 2]}]"#).unwrap();
    let files = [parquet.clone(), jsonl.clone(), array];

    let all: Vec<_> = read_rows(&files, None).map(Result::unwrap).collect();
    assert_eq!(
        serde_json::Value::Array(all.into_iter().map(serde_json::Value::Object).collect()),
        json!([
            {"question": "first", "id": 1},
            {"question": "second", "id": 2},
            {"question": "third", "id": 3},
            {"question": "fourth"},
            {"question": "fifth", "extra": [1, 2]},
        ])
    );
    let questions: Vec<_> = read_rows(&files, Some(&["question"]))
        .map(|row| row.unwrap())
        .map(serde_json::Value::Object)
        .collect();
    assert_eq!(questions[0], json!({"question": "first"}));
    assert_eq!(questions[4], json!({"question": "fifth"}));

    std::fs::write(&jsonl, "{\"question\": \"ok\"}\n[1]\n").unwrap();
    let errors: Vec<String> = read_rows(std::slice::from_ref(&jsonl), None)
        .filter_map(Result::err)
        .map(|e: HubError| e.to_string())
        .collect();
    assert_eq!(
        errors,
        [format!("{}:2: not a JSON object", jsonl.display())]
    );
}

/// A request's URL and headers.
type Sent = (String, Vec<(String, String)>);

/// A hub that answers the parquet listing, serves the file from a CDN after a
/// redirect, and records what it was sent. `cut_at` ends the first file download early
/// with a transport error after that many bytes.
struct FakeHub {
    file: Vec<u8>,
    cut_at: Option<usize>,
    seen: Mutex<Vec<Sent>>,
}

const LISTING: &str = "http://127.0.0.1:9/parquet?dataset=openai/gsm8k";
const FILE: &str = "http://127.0.0.1:9/datasets/openai/gsm8k/resolve/refs%2Fconvert%2Fparquet/main/test/0000.parquet";
const CDN: &str = "http://cdn.example/gsm8k/0000.parquet?signature=x";
const COMMIT: &str = "fedcba9876543210fedcba9876543210fedcba98";

fn exchange(status: u16, headers: &[(&str, &str)], body: Vec<u8>) -> RawExchange {
    let now = Instant::now();
    RawExchange {
        started_at: now,
        head_at: Some(now),
        status: Some(status),
        content_type: None,
        headers: headers
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect(),
        chunks: [Chunk {
            at: now,
            bytes: &body,
        }]
        .into_iter()
        .collect(),
        ended_at: now,
        error: None::<TransportError>,
        trace: None,
        retries: 0,
    }
}

impl Transport for FakeHub {
    fn send(&self, request: HttpRequest) -> BoxFuture<'_, RawExchange> {
        Box::pin(async move {
            self.seen
                .lock()
                .unwrap()
                .push((request.url.clone(), request.headers.clone()));
            match request.url.as_str() {
                LISTING => {
                    let listing = json!({"parquet_files": [
                        {"dataset": "openai/gsm8k", "config": "main", "split": "train",
                         "url": "http://127.0.0.1:9/x/train.parquet", "filename": "0000.parquet", "size": 1},
                        {"dataset": "openai/gsm8k", "config": "main", "split": "test",
                         "url": FILE, "filename": "0000.parquet", "size": self.file.len()},
                    ]});
                    exchange(200, &[], listing.to_string().into_bytes())
                }
                FILE => exchange(
                    302,
                    &[("location", CDN), ("x-repo-commit", COMMIT)],
                    Vec::new(),
                ),
                CDN => {
                    let from = request
                        .headers
                        .iter()
                        .find(|(k, _)| k == "Range")
                        .and_then(|(_, v)| {
                            v.strip_prefix("bytes=")?.strip_suffix('-')?.parse().ok()
                        })
                        .unwrap_or(0usize);
                    let end = match self.cut_at {
                        Some(cut) if from < cut => cut,
                        _ => self.file.len(),
                    };
                    let status = if from > 0 { 206 } else { 200 };
                    let mut answer = exchange(status, &[], self.file[from..end].to_vec());
                    if end < self.file.len() {
                        answer.error = Some(TransportError::Timeout(Duration::from_secs(5)));
                    }
                    answer
                }
                other => exchange(404, &[], format!("no {other}").into_bytes()),
            }
        })
    }
}

fn authorization_by_url(hub: &FakeHub) -> Vec<(String, bool)> {
    hub.seen
        .lock()
        .unwrap()
        .iter()
        .map(|(url, headers)| {
            let token = headers
                .iter()
                .any(|(k, v)| k == "Authorization" && v == "Bearer hf_secret");
            (url.clone(), token)
        })
        .collect()
}

#[tokio::test]
async fn download_fills_the_cache_layout_and_keeps_the_token_on_the_hub() {
    let cache = tempfile::tempdir().unwrap();
    let file = parquet_bytes(&["downloaded"]);
    let hub = FakeHub {
        file: file.clone(),
        cut_at: None,
        seen: Mutex::new(Vec::new()),
    };
    let files = resolve(&gsm8k(), &options(cache.path(), false), &hub)
        .await
        .unwrap();
    let repo = cache.path().join("datasets--openai--gsm8k");
    let stored = repo.join(format!("snapshots/{COMMIT}/main/test/0000.parquet"));
    assert_eq!(files, std::slice::from_ref(&stored));
    assert_eq!(std::fs::read(&stored).unwrap(), file);
    assert_eq!(
        std::fs::read_to_string(repo.join("refs/refs/convert/parquet")).unwrap(),
        COMMIT
    );
    assert_eq!(
        authorization_by_url(&hub),
        [
            (LISTING.to_string(), true),
            (FILE.to_string(), true),
            (CDN.to_string(), false)
        ]
    );
    // The next run, offline, finds what was stored.
    let again = resolve(&gsm8k(), &options(cache.path(), true), &NoNetwork)
        .await
        .unwrap();
    assert_eq!(again, [stored]);
}

#[tokio::test]
async fn an_interrupted_download_resumes_where_it_stopped() {
    let cache = tempfile::tempdir().unwrap();
    let file = parquet_bytes(&["resumed"]);
    let hub = FakeHub {
        file: file.clone(),
        cut_at: Some(100),
        seen: Mutex::new(Vec::new()),
    };
    let error = resolve(&gsm8k(), &options(cache.path(), false), &hub)
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .ends_with("the download stopped after 100 bytes (request timed out after 5s); run again to resume from there"),
        "{error}"
    );
    let files = resolve(&gsm8k(), &options(cache.path(), false), &hub)
        .await
        .unwrap();
    assert_eq!(std::fs::read(&files[0]).unwrap(), file);
    let ranges: Vec<Option<String>> = hub
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(url, _)| url == CDN)
        .map(|(_, headers)| {
            headers
                .iter()
                .find(|(k, _)| k == "Range")
                .map(|(_, v)| v.clone())
        })
        .collect();
    assert_eq!(ranges, [None, Some("bytes=100-".to_string())]);
}

/// A streamed dataset (`vision_arena`) stops reading once it has the conversations the
/// run needs: the broken line after them is never read.
#[test]
fn a_streamed_dataset_reads_only_the_rows_the_run_needs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("train.jsonl");
    let rows: Vec<String> = ["q1", "q2", "q3"]
        .iter()
        .map(|q| json!({"conversation": [{"role": "user", "content": q}]}).to_string())
        .chain(["{broken".to_string()])
        .collect();
    std::fs::write(&file, rows.join("\n")).unwrap();
    let entry = aiperf_datasets::catalogue::find("vision_arena").unwrap();
    let limit = entry.row_limit(Some(3), None, None);
    assert_eq!(limit, Some(3));
    let load = |limit| {
        aiperf_datasets::hub::public::conversations(
            entry,
            read_rows(std::slice::from_ref(&file), None),
            limit,
        )
    };
    let texts: Vec<String> = load(limit)
        .unwrap()
        .iter()
        .map(|c| c.turns[0].texts[0].clone())
        .collect();
    assert_eq!(texts, ["q1", "q2", "q3"]);
    let whole = load(None).unwrap_err().to_string();
    assert!(
        whole.starts_with(&format!("{}:4: ", file.display())),
        "{whole}"
    );
}

/// MMVU rows: the question and its non-empty choices, with the video as a URL, a
/// `file://` path or a typed `data:` URL; rows without a video or a prompt are skipped.
#[test]
fn mmvu_rows_send_the_question_its_choices_and_the_video() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("validation.jsonl");
    let rows = [
        json!({"question": " What happens? ", "choices": {"A": "x", "B": "y", "C": "", "D": null},
               "video": "https://host/v1.mp4"}),
        json!({"question": "Q2", "choices": {"A": "x"}, "video": "clips/v2.mp4"}),
        json!({"question": "Q3", "choices": null, "video": {"bytes": "AAAA", "path": "v3.webm"}}),
        json!({"question": "no video", "choices": {"A": "x"}}),
        json!({"question": "", "choices": {}, "video": "https://host/v5.mp4"}),
    ];
    let lines: Vec<String> = rows.iter().map(serde_json::Value::to_string).collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let entry = aiperf_datasets::catalogue::find("mmvu").unwrap();
    assert!(entry.rows.is_supported());
    let loaded =
        aiperf_datasets::hub::public::conversations(entry, read_rows(&[file], None), None).unwrap();
    let turns: Vec<(&str, &str)> = loaded
        .iter()
        .map(|c| (c.turns[0].texts[0].as_str(), c.turns[0].videos[0].as_str()))
        .collect();
    assert_eq!(
        turns,
        [
            ("What happens? A.x B.y", "https://host/v1.mp4"),
            ("Q2 A.x", "file://clips/v2.mp4"),
            ("Q3", "data:video/webm;base64,AAAA"),
        ]
    );
}

/// Speech rows: a FLAC clip is sent as the WAV 0.13 writes for it (the bytes below are
/// soundfile's output for this stereo 8 kHz clip), and a clip over 30 s is skipped.
#[test]
fn flac_speech_is_sent_as_0_13_s_wav_and_long_clips_are_skipped() {
    use base64::Engine as _;
    const FLAC: &str = "ZkxhQwAAACIQABAAAAAhAAAhAfQC8AAAAAalm9guPb58ibQQvl7q2/5jhAAAKCAAAAByZWZlcmVuY2UgbGliRkxBQyAxLjQuMyAyMDIzMDYyMwAAAAD/+GSIAAXzAgAAA+j4MH//gABAABEQIgH5/UAgABAAyYY=";
    const WAV_BY_0_13: &str = "UklGRjwAAABXQVZFZm10IBAAAAABAAIAQB8AAAB9AAAEABAAZGF0YRgAAAAAAAAA6AO4CzD4YPD/f/9/AIAAgABAAAA=";
    let long_wav = aiperf_datasets::media::audio::pcm16_wav(&vec![0; 8000 * 31], 8000, 1);
    let long = base64::engine::general_purpose::STANDARD.encode(long_wav);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("test.jsonl");
    let rows = [
        json!({"audio": {"bytes": long, "path": "long.wav"}}),
        json!({"audio": {"bytes": FLAC, "path": "a.flac"}}),
        json!({"audio": {"bytes": "ZkxhQwAAAC", "path": "broken.flac"}}),
    ];
    let lines: Vec<String> = rows.iter().map(serde_json::Value::to_string).collect();
    std::fs::write(&file, lines.join("\n")).unwrap();
    let entry = aiperf_datasets::catalogue::find("librispeech").unwrap();
    let loaded =
        aiperf_datasets::hub::public::conversations(entry, read_rows(&[file], None), None).unwrap();
    assert_eq!(loaded.len(), 1);
    let turn = &loaded[0].turns[0];
    assert_eq!(turn.texts, ["Transcribe this audio."]);
    assert_eq!(turn.audios, [format!("wav,{WAV_BY_0_13}")]);
    assert_eq!(turn.audio_duration_s, Some(6.0 / 8000.0));
}
