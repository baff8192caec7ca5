//! Synthetic media (docs/datasets.md#synthetic-media): noise images, noise audio clips and
//! short generated videos, made once per dataset entry when the dataset is built, never on
//! the hot path.

pub mod audio;
pub mod image;
pub mod video;

use std::path::PathBuf;

pub use audio::AudioGenerator;
pub use image::ImageGenerator;
pub use video::{locate_ffmpeg, VideoGenerator};

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
}
