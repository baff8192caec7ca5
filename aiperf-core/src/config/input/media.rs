//! Synthetic image, audio and video options (docs/cli.md#audio--image--video-input,
//! rules in docs/cli-rules.md#input-rules).

use serde::{Deserialize, Serialize};

use crate::config::{at_least_one, non_negative, out_of_range, ConfigError};

/// `--image-*`: noise images sent with every synthetic turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ImageOptions {
    /// Mean width in pixels; images are on when both means are above 0.
    pub width_mean: f64,
    /// Width standard deviation.
    pub width_stddev: f64,
    /// Mean height in pixels.
    pub height_mean: f64,
    /// Height standard deviation.
    pub height_stddev: f64,
    /// Images per turn (`--image-batch-size`).
    pub batch_size: usize,
    /// Encoding (`--image-format`).
    pub format: ImageFormat,
}

impl Default for ImageOptions {
    fn default() -> Self {
        Self {
            width_mean: 0.0,
            width_stddev: 0.0,
            height_mean: 0.0,
            height_stddev: 0.0,
            batch_size: 1,
            format: ImageFormat::Png,
        }
    }
}

impl ImageOptions {
    /// Whether turns carry images: both mean dimensions above 0 and a batch of at least 1.
    pub fn enabled(&self) -> bool {
        self.width_mean > 0.0 && self.height_mean > 0.0 && self.batch_size > 0
    }

    fn validate(&self) -> Result<(), ConfigError> {
        non_negative("input.image.width_mean", self.width_mean)?;
        non_negative("input.image.width_stddev", self.width_stddev)?;
        non_negative("input.image.height_mean", self.height_mean)?;
        non_negative("input.image.height_stddev", self.height_stddev)
    }
}

/// `--image-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageFormat {
    /// Lossless PNG.
    Png,
    /// JPEG, quality 85, no chroma subsampling.
    Jpeg,
    /// PNG or JPEG, drawn per image.
    Random,
}

/// `--audio-*`: Gaussian-noise clips sent with every synthetic turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AudioOptions {
    /// Mean clip length in seconds; 0 turns audio off.
    pub length_mean: f64,
    /// Clip length standard deviation in seconds.
    pub length_stddev: f64,
    /// Clips per turn (`--audio-batch-size`).
    pub batch_size: usize,
    /// Container (`--audio-format`).
    pub format: AudioFormat,
    /// Bit depths drawn from per clip (8, 16, 24 or 32).
    pub depths: Vec<u16>,
    /// Sample rates in kHz drawn from per clip.
    pub sample_rates_khz: Vec<f64>,
    /// Channels (1 or 2).
    pub num_channels: u16,
}

/// The shortest clip: lengths are redrawn below it, and a mean below it is an error.
pub const MIN_AUDIO_SECONDS: f64 = 0.01;

impl Default for AudioOptions {
    fn default() -> Self {
        Self {
            length_mean: 0.0,
            length_stddev: 0.0,
            batch_size: 1,
            format: AudioFormat::Wav,
            depths: vec![16],
            sample_rates_khz: vec![16.0],
            num_channels: 1,
        }
    }
}

impl AudioOptions {
    /// Whether turns carry audio.
    pub fn enabled(&self) -> bool {
        self.length_mean > 0.0 && self.batch_size > 0
    }

    fn validate(&self) -> Result<(), ConfigError> {
        non_negative("input.audio.length_mean", self.length_mean)?;
        non_negative("input.audio.length_stddev", self.length_stddev)?;
        if self.length_mean > 0.0 && self.length_mean < MIN_AUDIO_SECONDS {
            return Err(out_of_range(
                "input.audio.length_mean",
                "0 (no audio) or at least 0.01 seconds",
                self.length_mean,
            ));
        }
        if !self.enabled() {
            return Ok(());
        }
        if self.format == AudioFormat::Mp3 {
            return Err(ConfigError::Invalid {
                field: "input.audio.format",
                reason: "mp3 is not supported: aiperf-rs has no MP3 encoder (no well-kept \
                         pure-Rust one exists); use input.audio.format wav"
                    .into(),
            });
        }
        if self.depths.is_empty() {
            return Err(out_of_range(
                "input.audio.depths",
                "one or more of 8, 16, 24, 32",
                "none",
            ));
        }
        if let Some(d) = self.depths.iter().find(|d| ![8, 16, 24, 32].contains(*d)) {
            return Err(out_of_range("input.audio.depths", "8, 16, 24 or 32", d));
        }
        if self.sample_rates_khz.is_empty() {
            return Err(out_of_range(
                "input.audio.sample_rates_khz",
                "one or more rates in kHz",
                "none",
            ));
        }
        for rate in &self.sample_rates_khz {
            if !(rate.is_finite() && *rate * 1000.0 >= 1.0) {
                return Err(out_of_range(
                    "input.audio.sample_rates_khz",
                    "at least 0.001 kHz",
                    rate,
                ));
            }
        }
        if !(1..=2).contains(&self.num_channels) {
            return Err(out_of_range(
                "input.audio.num_channels",
                "1 or 2",
                self.num_channels,
            ));
        }
        Ok(())
    }
}

/// `--audio-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AudioFormat {
    /// PCM WAV.
    Wav,
    /// MP3 (accepted for compatibility, rejected by validation: no encoder).
    Mp3,
}

/// `--video-*`: synthetic clips encoded by `ffmpeg`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct VideoOptions {
    /// Frame width; video is on when width and height are set.
    pub width: Option<u32>,
    /// Frame height.
    pub height: Option<u32>,
    /// Clip length in seconds.
    pub duration: f64,
    /// Frames per second.
    pub fps: u32,
    /// Clips per turn (`--video-batch-size`).
    pub batch_size: usize,
    /// What the frames show.
    pub synth_type: VideoSynthType,
    /// Container.
    pub format: VideoFormat,
    /// ffmpeg video codec.
    pub codec: String,
}

impl Default for VideoOptions {
    fn default() -> Self {
        Self {
            width: None,
            height: None,
            duration: 5.0,
            fps: 4,
            batch_size: 1,
            synth_type: VideoSynthType::MovingShapes,
            format: VideoFormat::Webm,
            codec: "libvpx-vp9".into(),
        }
    }
}

impl VideoOptions {
    /// Whether turns carry video.
    pub fn enabled(&self) -> bool {
        self.width.is_some() && self.height.is_some() && self.batch_size > 0
    }

    /// Frames per clip: `duration × fps`, at least 1.
    pub fn frame_count(&self) -> usize {
        ((self.duration * f64::from(self.fps)).round() as usize).max(1)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        match (self.width, self.height) {
            (Some(_), None) => Err(ConfigError::Requires {
                field: "input.video.width",
                needs: "input.video.height",
            }),
            (None, Some(_)) => Err(ConfigError::Requires {
                field: "input.video.height",
                needs: "input.video.width",
            }),
            (Some(w), Some(h)) => {
                at_least_one("input.video.width", u64::from(w))?;
                at_least_one("input.video.height", u64::from(h))?;
                at_least_one("input.video.fps", u64::from(self.fps))?;
                if !(self.duration.is_finite() && self.duration > 0.0) {
                    return Err(out_of_range(
                        "input.video.duration",
                        "greater than 0",
                        self.duration,
                    ));
                }
                Ok(())
            }
            (None, None) => Ok(()),
        }
    }
}

/// `--video-synth-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VideoSynthType {
    /// Coloured shapes moving over a dark background.
    MovingShapes,
    /// A grid with a block that steps one cell per frame (a frame counter).
    GridClock,
    /// Uniform random pixels.
    Noise,
}

/// `--video-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VideoFormat {
    /// WebM.
    Webm,
    /// MP4.
    Mp4,
}

impl VideoFormat {
    /// The container name (ffmpeg `-f` value and MIME subtype).
    pub fn as_str(&self) -> &'static str {
        match self {
            VideoFormat::Webm => "webm",
            VideoFormat::Mp4 => "mp4",
        }
    }
}

pub(super) fn validate_media(
    image: &ImageOptions,
    audio: &AudioOptions,
    video: &VideoOptions,
) -> Result<(), ConfigError> {
    image.validate()?;
    audio.validate()?;
    video.validate()
}
