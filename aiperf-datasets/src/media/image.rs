//! Noise images as `data:image/{png,jpeg};base64,…` URLs.

use aiperf_core::config::{ImageFormat, ImageOptions};
use base64::Engine;
use rand::{Rng, RngExt};
use rand_chacha::ChaCha8Rng;

use super::MediaError;
use crate::synthetic::LengthDistribution;

/// JPEG quality of synthetic images (the Python AIPerf's setting).
pub const JPEG_QUALITY: u8 = 85;

/// Draws image sizes from `--image-*-mean/-stddev`, fills them with uniform noise and
/// encodes them.
#[derive(Debug, Clone)]
pub struct ImageGenerator {
    width: LengthDistribution,
    height: LengthDistribution,
    format: ImageFormat,
    rng: ChaCha8Rng,
}

impl ImageGenerator {
    /// A generator for `options`, drawing from `rng`.
    pub fn new(options: &ImageOptions, rng: ChaCha8Rng) -> Self {
        Self {
            width: LengthDistribution::unchecked(options.width_mean, options.width_stddev),
            height: LengthDistribution::unchecked(options.height_mean, options.height_stddev),
            format: options.format,
            rng,
        }
    }

    /// One image as a data URL.
    pub fn generate(&mut self) -> Result<String, MediaError> {
        let width = self.width.sample(&mut self.rng);
        let height = self.height.sample(&mut self.rng);
        let jpeg = match self.format {
            ImageFormat::Png => false,
            ImageFormat::Jpeg => true,
            ImageFormat::Random => self.rng.random::<bool>(),
        };
        let pixels = noise_rgb(width, height, &mut self.rng);
        let (mime, bytes) = if jpeg {
            ("jpeg", encode_jpeg(&pixels, width, height)?)
        } else {
            ("png", encode_png(&pixels, width, height)?)
        };
        Ok(format!(
            "data:image/{mime};base64,{}",
            base64::engine::general_purpose::STANDARD.encode(bytes)
        ))
    }
}

/// `width × height` uniform random RGB pixels.
pub fn noise_rgb<R: Rng + ?Sized>(width: u32, height: u32, rng: &mut R) -> Vec<u8> {
    let mut pixels = vec![0u8; width as usize * height as usize * 3];
    rng.fill_bytes(&mut pixels);
    pixels
}

/// An 8-bit RGB PNG.
pub fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, MediaError> {
    let failed = |e: png::EncodingError| MediaError::Image {
        format: "png",
        reason: e.to_string(),
    };
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(failed)?;
    writer.write_image_data(rgb).map_err(failed)?;
    writer.finish().map_err(failed)?;
    Ok(out)
}

/// A baseline JPEG, quality 85, without chroma subsampling (4:4:4).
pub fn encode_jpeg(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, MediaError> {
    let (Ok(w), Ok(h)) = (u16::try_from(width), u16::try_from(height)) else {
        return Err(MediaError::JpegTooLarge { width, height });
    };
    let mut out = Vec::new();
    let mut encoder = jpeg_encoder::Encoder::new(&mut out, JPEG_QUALITY);
    encoder.set_sampling_factor(jpeg_encoder::SamplingFactor::R_4_4_4);
    encoder
        .encode(rgb, w, h, jpeg_encoder::ColorType::Rgb)
        .map_err(|e| MediaError::Image {
            format: "jpeg",
            reason: e.to_string(),
        })?;
    Ok(out)
}
