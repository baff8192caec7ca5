//! Synthetic media (docs/datasets.md#synthetic-media): noise images, noise audio clips and
//! short generated videos, made once per dataset entry when the dataset is built, never on
//! the hot path.
//!
//! The generators need the `media` feature (on by default). Without it [`MediaError`]
//! stays, and a configuration that asks for images, audio or video is
//! [`MediaError::Disabled`] when the synthetic dataset is built.

#[cfg(feature = "media")]
pub mod audio;
#[cfg(feature = "media")]
pub mod image;
#[cfg(feature = "media")]
pub mod video;

use std::path::PathBuf;

use aiperf_core::config::InputConfig;

#[cfg(feature = "media")]
pub use audio::{AudioClip, AudioGenerator};
#[cfg(feature = "media")]
pub use image::ImageGenerator;
#[cfg(feature = "media")]
pub use video::{locate_ffmpeg, VideoGenerator};

/// The length in seconds of a `"wav,<base64>"` clip, from its WAV header (the data
/// chunk's size over the format's byte rate); `None` for other formats, URLs and clips
/// whose header cannot be read. Datasets call it when they load a clip, so that the
/// audio metrics know its length.
pub fn clip_seconds(clip: &str) -> Option<f64> {
    use base64::Engine;

    let (format, data) = clip.split_once(',')?;
    if !format.eq_ignore_ascii_case("wav") {
        return None;
    }
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .ok()?;
    wav_seconds(&bytes)
}

/// The length of a RIFF WAV file, walking its chunks to `fmt ` and `data`.
fn wav_seconds(bytes: &[u8]) -> Option<f64> {
    let le_u32 = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    if bytes.get(..4)? != b"RIFF" || bytes.get(8..12)? != b"WAVE" {
        return None;
    }
    let mut byte_rate = None;
    let mut at = 12;
    while let (Some(id), Some(size)) = (bytes.get(at..at + 4), le_u32(at + 4)) {
        let body = at + 8;
        match id {
            b"fmt " => byte_rate = le_u32(body + 8).filter(|rate| *rate > 0),
            b"data" => {
                // A streamed file leaves the size unset (0 or all ones): count the bytes.
                let present = bytes.len().saturating_sub(body);
                let size = (size as usize).min(present);
                return byte_rate.map(|rate| size as f64 / f64::from(rate));
            }
            _ => {}
        }
        at = body + size as usize + size as usize % 2;
    }
    None
}

/// Why a synthetic image, clip or video could not be made.
#[derive(Debug, thiserror::Error)]
pub enum MediaError {
    /// The image encoder failed.
    #[error("cannot encode a synthetic {format} image: {reason}")]
    Image {
        /// `png` or `jpeg`.
        format: &'static str,
        /// What the encoder reported.
        reason: String,
    },

    /// JPEG stores dimensions in 16 bits.
    #[error(
        "a {width}x{height} image is too large for JPEG (at most 65535 pixels a side); \
         lower --image-width-mean/--image-height-mean or use --image-format png"
    )]
    JpegTooLarge {
        /// Drawn width.
        width: u32,
        /// Drawn height.
        height: u32,
    },

    /// No ffmpeg to encode video with.
    #[error("video generation needs ffmpeg on PATH; install it or set AIPERF_FFMPEG")]
    FfmpegNotFound,

    /// `AIPERF_FFMPEG` names a file that does not exist.
    #[error(
        "AIPERF_FFMPEG is {path} but nothing is there; point it at an ffmpeg executable \
         or unset it to search PATH"
    )]
    FfmpegOverrideMissing {
        /// The path given.
        path: PathBuf,
    },

    /// ffmpeg ran and failed.
    #[error("ffmpeg ({ffmpeg}) failed to encode a synthetic video ({status}): {stderr}")]
    FfmpegFailed {
        /// The executable.
        ffmpeg: PathBuf,
        /// Its exit status.
        status: String,
        /// What it printed on stderr.
        stderr: String,
    },

    /// Running ffmpeg or handling its files failed.
    #[error("cannot {what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The I/O error.
        source: std::io::Error,
    },

    /// Synthetic media was asked for, but this build has no generators (the crate's
    /// `media` feature is off).
    #[error(
        "cannot make synthetic {what}: this build has no media synthesis (feature \"media\" \
         of aiperf-datasets)"
    )]
    Disabled {
        /// `images`, `audio` or `video`.
        what: &'static str,
    },
}

/// One turn's synthetic media, as [`aiperf_core::Turn`] carries it.
#[derive(Debug, Default)]
pub(crate) struct TurnMedia {
    pub(crate) images: Vec<String>,
    pub(crate) audios: Vec<String>,
    /// The first clip's length in seconds.
    pub(crate) audio_duration_s: Option<f64>,
    pub(crate) videos: Vec<String>,
}

/// Random streams of the generators, apart from the synthetic dataset's others so that
/// turning media on leaves every other draw unchanged.
#[cfg(feature = "media")]
mod streams {
    pub(super) const IMAGE: &str = "dataset.image";
    pub(super) const AUDIO: &str = "dataset.audio";
    pub(super) const VIDEO: &str = "dataset.video";
}

/// Each turn's media for a synthetic dataset: the generators of the kinds the input
/// enables, with their batch sizes. A clone continues from the same random state, so
/// every pass over the dataset that starts from the same value makes the same media.
#[cfg(feature = "media")]
#[derive(Debug, Clone)]
pub(crate) struct MediaSynth {
    images: Option<(ImageGenerator, usize)>,
    audios: Option<(AudioGenerator, usize)>,
    video: Option<(VideoGenerator, usize)>,
}

#[cfg(feature = "media")]
impl MediaSynth {
    /// The generators for (validated) `input`, each drawing from its own stream of
    /// `root_seed`; finds ffmpeg now when video is on, so a missing one fails when the
    /// dataset is built, not halfway through.
    pub(crate) fn new(input: &InputConfig, root_seed: u64) -> Result<Self, MediaError> {
        use crate::seed::derive_rng;

        let video = if input.video.enabled() {
            let rng = derive_rng(root_seed, streams::VIDEO);
            Some((
                VideoGenerator::new(&input.video, rng)?,
                input.video.batch_size,
            ))
        } else {
            None
        };
        Ok(Self {
            images: input.image.enabled().then(|| {
                let rng = derive_rng(root_seed, streams::IMAGE);
                (
                    ImageGenerator::new(&input.image, rng),
                    input.image.batch_size,
                )
            }),
            audios: input.audio.enabled().then(|| {
                let rng = derive_rng(root_seed, streams::AUDIO);
                (
                    AudioGenerator::new(&input.audio, rng),
                    input.audio.batch_size,
                )
            }),
            video,
        })
    }

    /// The next turn's images, audio clips and videos.
    pub(crate) fn turn(&mut self) -> Result<TurnMedia, MediaError> {
        let images = match &mut self.images {
            Some((generator, count)) => (0..*count)
                .map(|_| generator.generate())
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        let clips: Vec<AudioClip> = match &mut self.audios {
            Some((generator, count)) => (0..*count).map(|_| generator.generate()).collect(),
            None => Vec::new(),
        };
        let audio_duration_s = clips.first().map(|clip| clip.seconds);
        let audios = clips.into_iter().map(|clip| clip.data).collect();
        let videos = match &mut self.video {
            Some((generator, count)) => (0..*count)
                .map(|_| generator.generate())
                .collect::<Result<_, _>>()?,
            None => Vec::new(),
        };
        Ok(TurnMedia {
            images,
            audios,
            audio_duration_s,
            videos,
        })
    }
}

/// Without the `media` feature: refuses an input that enables any kind of media, and
/// makes none.
#[cfg(not(feature = "media"))]
#[derive(Debug, Clone)]
pub(crate) struct MediaSynth;

#[cfg(not(feature = "media"))]
impl MediaSynth {
    /// [`MediaError::Disabled`] for the first kind of media `input` enables.
    pub(crate) fn new(input: &InputConfig, _root_seed: u64) -> Result<Self, MediaError> {
        let asked = [
            (input.image.enabled(), "images"),
            (input.audio.enabled(), "audio"),
            (input.video.enabled(), "video"),
        ];
        match asked.into_iter().find(|(enabled, _)| *enabled) {
            Some((_, what)) => Err(MediaError::Disabled { what }),
            None => Ok(Self),
        }
    }

    /// No media: [`MediaSynth::new`] refused every input that asks for some.
    pub(crate) fn turn(&mut self) -> Result<TurnMedia, MediaError> {
        Ok(TurnMedia::default())
    }
}
