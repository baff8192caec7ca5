//! Gaussian-noise audio clips as `"wav,<base64>"` strings.

use aiperf_core::config::{AudioOptions, MIN_AUDIO_SECONDS};
use base64::Engine;
use rand::{Rng, RngExt};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// Standard deviation of the noise, in full-scale units, before clipping to [-1, 1].
const NOISE_SIGMA: f64 = 0.3;

/// A synthetic clip.
#[derive(Debug, Clone, PartialEq)]
pub struct AudioClip {
    /// The clip as `"wav,<base64>"`.
    pub data: String,
    /// Its length in seconds (whole frames at its sample rate).
    pub seconds: f64,
}

/// Draws clip lengths, sample rates and bit depths from `--audio-*` and writes noise
/// clips as PCM WAV.
#[derive(Debug, Clone)]
pub struct AudioGenerator {
    options: AudioOptions,
    rng: ChaCha8Rng,
}

impl AudioGenerator {
    /// A generator for (validated) `options`, drawing from `rng`.
    pub fn new(options: &AudioOptions, rng: ChaCha8Rng) -> Self {
        Self {
            options: options.clone(),
            rng,
        }
    }

    /// One clip.
    pub fn generate(&mut self) -> AudioClip {
        let seconds = self.draw_seconds();
        let rate_khz = pick(&self.options.sample_rates_khz, &mut self.rng).unwrap_or(16.0);
        let sample_rate = (rate_khz * 1000.0).round() as u32;
        let bits = pick(&self.options.depths, &mut self.rng).unwrap_or(16);
        let channels = self.options.num_channels;
        let frames = (seconds * f64::from(sample_rate)).round() as usize;
        let noise = Normal::new(0.0, NOISE_SIGMA).ok();
        let samples: Vec<f64> = (0..frames * usize::from(channels))
            .map(|_| {
                noise
                    .map_or(0.0, |n| n.sample(&mut self.rng))
                    .clamp(-1.0, 1.0)
            })
            .collect();
        let wav = wav_bytes(&samples, sample_rate, channels, bits);
        AudioClip {
            data: format!(
                "wav,{}",
                base64::engine::general_purpose::STANDARD.encode(wav)
            ),
            seconds: frames as f64 / f64::from(sample_rate),
        }
    }

    /// N(mean, sd), redrawn below the 0.01 s minimum.
    fn draw_seconds(&mut self) -> f64 {
        let mean = self.options.length_mean;
        let Ok(normal) = Normal::new(mean, self.options.length_stddev) else {
            return mean;
        };
        if self.options.length_stddev <= 0.0 {
            return mean;
        }
        (0..100)
            .map(|_| normal.sample(&mut self.rng))
            .find(|s| *s >= MIN_AUDIO_SECONDS)
            .unwrap_or(mean.max(MIN_AUDIO_SECONDS))
    }
}

fn pick<T: Copy, R: Rng + ?Sized>(items: &[T], rng: &mut R) -> Option<T> {
    (!items.is_empty()).then(|| items[rng.random_range(0..items.len())])
}

/// A PCM WAV file: the 44-byte RIFF header, then `samples` (interleaved, in [-1, 1])
/// at `bits` per sample (8-bit unsigned, 16/24/32-bit signed little-endian).
pub fn wav_bytes(samples: &[f64], sample_rate: u32, channels: u16, bits: u16) -> Vec<u8> {
    let mut out = wav_header(samples.len(), sample_rate, channels, bits);
    for &x in samples {
        match bits {
            8 => out.push(((x * 127.0).round() + 128.0) as u8),
            16 => out.extend_from_slice(&((x * 32_767.0).round() as i16).to_le_bytes()),
            24 => out.extend_from_slice(&((x * 8_388_607.0).round() as i32).to_le_bytes()[..3]),
            _ => out.extend_from_slice(&((x * 2_147_483_647.0).round() as i32).to_le_bytes()),
        }
    }
    out
}

/// A 16-bit PCM WAV file of `samples` (interleaved) as they are.
pub fn pcm16_wav(samples: &[i16], sample_rate: u32, channels: u16) -> Vec<u8> {
    let mut out = wav_header(samples.len(), sample_rate, channels, 16);
    for sample in samples {
        out.extend_from_slice(&sample.to_le_bytes());
    }
    out
}

/// The 44-byte RIFF header of a PCM WAV file of `samples` samples, with room for them.
fn wav_header(samples: usize, sample_rate: u32, channels: u16, bits: u16) -> Vec<u8> {
    let bytes_per_sample = usize::from(bits / 8);
    let data_len = samples * bytes_per_sample;
    let block_align = channels * (bits / 8);
    let mut out = Vec::with_capacity(44 + data_len);
    out.extend_from_slice(b"RIFF");
    out.extend_from_slice(&(36 + data_len as u32).to_le_bytes());
    out.extend_from_slice(b"WAVEfmt ");
    out.extend_from_slice(&16u32.to_le_bytes());
    out.extend_from_slice(&1u16.to_le_bytes()); // PCM
    out.extend_from_slice(&channels.to_le_bytes());
    out.extend_from_slice(&sample_rate.to_le_bytes());
    out.extend_from_slice(&(sample_rate * u32::from(block_align)).to_le_bytes());
    out.extend_from_slice(&block_align.to_le_bytes());
    out.extend_from_slice(&bits.to_le_bytes());
    out.extend_from_slice(b"data");
    out.extend_from_slice(&(data_len as u32).to_le_bytes());
    out
}
