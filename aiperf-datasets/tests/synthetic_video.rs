//! Synthetic video through a fake ffmpeg (a shell script that records its arguments and
//! stdin and writes a small file), and the error when there is no ffmpeg at all.
//! The tests change `AIPERF_FFMPEG`/`PATH`, so they run one at a time under a lock.

#![allow(clippy::unwrap_used)]
#![cfg(unix)]

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Mutex;

use aiperf_core::config::{InputConfig, VideoFormat};
use aiperf_datasets::{SyntheticDataset, Tokenizer};
use base64::Engine;

static ENV: Mutex<()> = Mutex::new(());

fn video_input(format: VideoFormat) -> InputConfig {
    let mut input = InputConfig {
        isl_mean: 0,
        num_dataset_entries: Some(2),
        random_seed: Some(3),
        ..InputConfig::default()
    };
    input.video.width = Some(32);
    input.video.height = Some(16);
    input.video.duration = 1.5;
    input.video.fps = 4;
    input.video.batch_size = 2;
    input.video.format = format;
    input
}

fn fake_ffmpeg(dir: &Path) -> std::path::PathBuf {
    let script = dir.join("fake-ffmpeg");
    let log = dir.join("args.txt");
    let stdin = dir.join("stdin.bin");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$@\" >> '{}'\ncat > '{}'\nfor last; do :; done\nprintf FAKEVIDEO > \"$last\"\n",
            log.display(),
            stdin.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    script
}

#[test]
fn frames_are_piped_to_ffmpeg_and_its_file_becomes_a_data_url() {
    let _guard = ENV
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    std::env::set_var("AIPERF_FFMPEG", fake_ffmpeg(dir.path()));
    for format in [VideoFormat::Webm, VideoFormat::Mp4] {
        let _ = std::fs::remove_file(dir.path().join("args.txt"));
        let conversations = SyntheticDataset::new(&video_input(format), &[], Tokenizer::builtin())
            .unwrap()
            .generate()
            .unwrap();
        let expected = format!(
            "data:video/{};base64,{}",
            format.as_str(),
            base64::engine::general_purpose::STANDARD.encode("FAKEVIDEO")
        );
        for c in &conversations {
            assert_eq!(c.turns[0].videos, [expected.clone(), expected.clone()]);
        }
        let log = std::fs::read_to_string(dir.path().join("args.txt")).unwrap();
        let calls: Vec<&str> = log.lines().collect();
        assert_eq!(calls.len(), 4, "two conversations × two clips");
        let prefix = format!(
            "-hide_banner -loglevel error -y -f rawvideo -pix_fmt rgb24 -s 32x16 -r 4 -i - -an \
             -c:v libvpx-vp9 -pix_fmt yuv420p -f {} ",
            format.as_str()
        );
        assert!(calls[0].starts_with(&prefix), "{}", calls[0]);
        assert!(calls[0].ends_with(&format!("video.{}", format.as_str())));
        // 1.5 s × 4 fps = 6 frames of 32×16 RGB.
        let piped = std::fs::metadata(dir.path().join("stdin.bin"))
            .unwrap()
            .len();
        assert_eq!(piped, 6 * 32 * 16 * 3);
    }
    std::env::remove_var("AIPERF_FFMPEG");
}

#[test]
fn missing_ffmpeg_fails_when_the_dataset_is_built() {
    let _guard = ENV
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let empty = tempfile::tempdir().unwrap();
    let saved_path = std::env::var_os("PATH");
    std::env::remove_var("AIPERF_FFMPEG");
    std::env::set_var("PATH", empty.path());
    let err = SyntheticDataset::new(&video_input(VideoFormat::Webm), &[], Tokenizer::builtin())
        .unwrap_err();
    if let Some(path) = saved_path {
        std::env::set_var("PATH", path);
    }
    assert_eq!(
        err.to_string(),
        "video generation needs ffmpeg on PATH; install it or set AIPERF_FFMPEG"
    );
}

#[test]
fn a_failing_ffmpeg_reports_its_stderr() {
    let _guard = ENV
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("bad-ffmpeg");
    std::fs::write(
        &script,
        "#!/bin/sh\ncat > /dev/null\necho 'Unknown encoder' >&2\nexit 1\n",
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::env::set_var("AIPERF_FFMPEG", &script);
    let err = SyntheticDataset::new(&video_input(VideoFormat::Webm), &[], Tokenizer::builtin())
        .unwrap()
        .generate()
        .unwrap_err();
    std::env::remove_var("AIPERF_FFMPEG");
    assert_eq!(
        err.to_string(),
        format!(
            "ffmpeg ({}) failed to encode a synthetic video (exit status: 1): Unknown encoder",
            script.display()
        )
    );
}
