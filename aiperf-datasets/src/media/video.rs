//! Short synthetic videos: raw RGB frames drawn here, encoded by an external `ffmpeg`
//! into `data:video/{webm,mp4};base64,…` URLs.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use aiperf_core::config::{VideoOptions, VideoSynthType};
use base64::Engine;
use rand_chacha::ChaCha8Rng;

use super::image::noise_rgb;
use super::MediaError;

/// The environment variable that names the ffmpeg executable (else PATH is searched).
pub const FFMPEG_ENV: &str = "AIPERF_FFMPEG";

/// Finds ffmpeg: `override_path` (the value of `AIPERF_FFMPEG`) when set, else the
/// first `ffmpeg` file in the `PATH`-style list `search_path`.
pub fn locate_ffmpeg(
    override_path: Option<OsString>,
    search_path: Option<OsString>,
) -> Result<PathBuf, MediaError> {
    if let Some(path) = override_path.filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(MediaError::FfmpegOverrideMissing { path })
        };
    }
    search_path
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("ffmpeg"))
        .find(|candidate| candidate.is_file())
        .ok_or(MediaError::FfmpegNotFound)
}

/// Draws frames for `--video-*` and has ffmpeg encode them.
#[derive(Debug, Clone)]
pub struct VideoGenerator {
    ffmpeg: PathBuf,
    options: VideoOptions,
    rng: ChaCha8Rng,
}

impl VideoGenerator {
    /// A generator for (validated, enabled) `options`; finds ffmpeg now so a missing one
    /// fails when the dataset is built, not halfway through.
    pub fn new(options: &VideoOptions, rng: ChaCha8Rng) -> Result<Self, MediaError> {
        let ffmpeg = locate_ffmpeg(std::env::var_os(FFMPEG_ENV), std::env::var_os("PATH"))?;
        Ok(Self {
            ffmpeg,
            options: options.clone(),
            rng,
        })
    }

    /// One clip as a data URL.
    pub fn generate(&mut self) -> Result<String, MediaError> {
        let (width, height) = self.size();
        let raw = frames(&self.options, width, height, &mut self.rng);
        let encoded = encode(&self.ffmpeg, &self.options, &raw)?;
        Ok(format!(
            "data:video/{};base64,{}",
            self.options.format.as_str(),
            base64::engine::general_purpose::STANDARD.encode(encoded)
        ))
    }

    fn size(&self) -> (u32, u32) {
        (
            self.options.width.unwrap_or(1),
            self.options.height.unwrap_or(1),
        )
    }
}

/// `duration × fps` RGB24 frames of `width × height`, concatenated.
pub fn frames(options: &VideoOptions, width: u32, height: u32, rng: &mut ChaCha8Rng) -> Vec<u8> {
    let count = options.frame_count();
    let (w, h) = (width as usize, height as usize);
    let mut out = Vec::with_capacity(count * w * h * 3);
    for index in 0..count {
        match options.synth_type {
            VideoSynthType::Noise => out.extend(noise_rgb(width, height, rng)),
            VideoSynthType::MovingShapes => out.extend(moving_shapes(w, h, index)),
            VideoSynthType::GridClock => out.extend(grid_clock(w, h, index)),
        }
    }
    out
}

/// Three coloured squares sliding across a dark background at different speeds.
fn moving_shapes(w: usize, h: usize, index: usize) -> Vec<u8> {
    let mut frame = vec![16u8; w * h * 3];
    let side = (w.min(h) / 4).max(1);
    let shapes = [
        ([230, 60, 60], 1, 0),
        ([60, 200, 90], 2, h / 3),
        ([70, 110, 240], 3, 2 * h / 3),
    ];
    for (color, speed, top) in shapes {
        let left = (index * speed * side / 2) % w.max(1);
        fill(&mut frame, w, h, left, top, side, color);
    }
    frame
}

/// An 8×8 grid; the cell of `index mod 64` is lit, so each frame shows its number.
fn grid_clock(w: usize, h: usize, index: usize) -> Vec<u8> {
    let mut frame = vec![0u8; w * h * 3];
    let (cell_w, cell_h) = ((w / 8).max(1), (h / 8).max(1));
    for y in 0..h {
        for x in 0..w {
            if x % cell_w == 0 || y % cell_h == 0 {
                frame[(y * w + x) * 3..][..3].copy_from_slice(&[90, 90, 90]);
            }
        }
    }
    let cell = index % 64;
    fill(
        &mut frame,
        w,
        h,
        (cell % 8) * cell_w,
        (cell / 8) * cell_h,
        cell_w.min(cell_h),
        [250, 220, 40],
    );
    frame
}

fn fill(
    frame: &mut [u8],
    w: usize,
    h: usize,
    left: usize,
    top: usize,
    side: usize,
    color: [u8; 3],
) {
    for y in top..(top + side).min(h) {
        for x in left..(left + side).min(w) {
            frame[(y * w + x) * 3..][..3].copy_from_slice(&color);
        }
    }
}

/// The ffmpeg command line: raw RGB24 frames on stdin, the clip written to `output`.
pub fn ffmpeg_args(
    options: &VideoOptions,
    width: u32,
    height: u32,
    output: &Path,
) -> Vec<OsString> {
    let mut args: Vec<OsString> = [
        "-hide_banner",
        "-loglevel",
        "error",
        "-y",
        "-f",
        "rawvideo",
        "-pix_fmt",
        "rgb24",
        "-s",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    args.push(format!("{width}x{height}").into());
    args.push("-r".into());
    args.push(options.fps.to_string().into());
    for arg in ["-i", "-", "-an", "-c:v"] {
        args.push(arg.into());
    }
    args.push(options.codec.clone().into());
    for arg in ["-pix_fmt", "yuv420p", "-f", options.format.as_str()] {
        args.push(arg.into());
    }
    args.push(output.into());
    args
}

/// Runs ffmpeg on `raw` frames and returns the encoded file's bytes. ffmpeg writes to a
/// temporary file because MP4 cannot be written to a pipe without fragmenting it.
pub fn encode(ffmpeg: &Path, options: &VideoOptions, raw: &[u8]) -> Result<Vec<u8>, MediaError> {
    let io = |what: &str| {
        let what = what.to_owned();
        move |source| MediaError::Io { what, source }
    };
    let dir = tempfile::tempdir().map_err(io("create a temporary directory for ffmpeg"))?;
    let output = dir
        .path()
        .join(format!("video.{}", options.format.as_str()));
    let (width, height) = (options.width.unwrap_or(1), options.height.unwrap_or(1));
    let mut child = Command::new(ffmpeg)
        .args(ffmpeg_args(options, width, height, &output))
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(io(&format!("run {}", ffmpeg.display())))?;
    // Write the frames from a thread: ffmpeg may fill its stderr pipe while we write.
    let mut stdin = child.stdin.take();
    let frames = raw.to_vec();
    let writer = std::thread::spawn(move || match stdin.as_mut() {
        Some(pipe) => pipe.write_all(&frames),
        None => Ok(()),
    });
    let result = child
        .wait_with_output()
        .map_err(io(&format!("wait for {}", ffmpeg.display())))?;
    let written = writer.join().unwrap_or(Ok(()));
    if !result.status.success() {
        return Err(MediaError::FfmpegFailed {
            ffmpeg: ffmpeg.to_owned(),
            status: result.status.to_string(),
            stderr: String::from_utf8_lossy(&result.stderr).trim().to_owned(),
        });
    }
    written.map_err(io("write frames to ffmpeg"))?;
    std::fs::read(&output).map_err(io(&format!("read ffmpeg's output {}", output.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn override_wins_and_must_exist() {
        let dir = tempfile::tempdir().unwrap();
        let fake = dir.path().join("my-ffmpeg");
        std::fs::write(&fake, "").unwrap();
        assert_eq!(
            locate_ffmpeg(Some(fake.clone().into()), None).unwrap(),
            fake
        );
        let missing = dir.path().join("nope");
        assert_eq!(
            locate_ffmpeg(Some(missing.clone().into()), None)
                .unwrap_err()
                .to_string(),
            format!(
                "AIPERF_FFMPEG is {} but nothing is there; point it at an ffmpeg executable \
                 or unset it to search PATH",
                missing.display()
            )
        );
    }

    #[test]
    fn path_is_searched_in_order_and_absence_is_explained() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        std::fs::write(b.path().join("ffmpeg"), "").unwrap();
        let path = std::env::join_paths([a.path(), b.path()]).unwrap();
        assert_eq!(
            locate_ffmpeg(None, Some(path)).unwrap(),
            b.path().join("ffmpeg")
        );
        let only_a = std::env::join_paths([a.path()]).unwrap();
        assert_eq!(
            locate_ffmpeg(Some(OsString::new()), Some(only_a))
                .unwrap_err()
                .to_string(),
            "video generation needs ffmpeg on PATH; install it or set AIPERF_FFMPEG"
        );
    }

    #[test]
    fn frames_have_the_configured_count_and_size() {
        let options = VideoOptions {
            width: Some(16),
            height: Some(8),
            duration: 2.0,
            fps: 3,
            ..VideoOptions::default()
        };
        let mut rng = crate::derive_rng(1, "t");
        for synth_type in [
            VideoSynthType::MovingShapes,
            VideoSynthType::GridClock,
            VideoSynthType::Noise,
        ] {
            let options = VideoOptions {
                synth_type,
                ..options.clone()
            };
            let raw = frames(&options, 16, 8, &mut rng);
            assert_eq!(raw.len(), 6 * 16 * 8 * 3, "{synth_type:?}");
        }
    }
}
