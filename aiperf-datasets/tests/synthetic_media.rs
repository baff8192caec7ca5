//! Synthetic images and audio: decoded back and checked field by field.

#![allow(clippy::unwrap_used)]

use std::io::Cursor;

use aiperf_core::config::{ImageFormat, InputConfig};
use aiperf_datasets::media::audio::wav_bytes;
use aiperf_datasets::media::clip_seconds;
use aiperf_datasets::media::image::{encode_jpeg, encode_png, noise_rgb};
use aiperf_datasets::{derive_rng, SyntheticDataset, Tokenizer};
use base64::Engine;

fn b64(text: &str) -> Vec<u8> {
    base64::engine::general_purpose::STANDARD
        .decode(text)
        .unwrap()
}

fn png_size(bytes: &[u8]) -> (u32, u32) {
    let mut reader = png::Decoder::new(Cursor::new(bytes)).read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let info = reader.next_frame(&mut pixels).unwrap();
    assert_eq!(info.color_type, png::ColorType::Rgb);
    (info.width, info.height)
}

/// The (width, height) of the SOF0 segment of a baseline JPEG, and its component count
/// with each component's sampling factors.
fn jpeg_sof(bytes: &[u8]) -> (u16, u16, Vec<u8>) {
    assert_eq!(&bytes[..2], [0xFF, 0xD8]);
    let mut i = 2;
    loop {
        assert_eq!(bytes[i], 0xFF);
        let marker = bytes[i + 1];
        let len = usize::from(u16::from_be_bytes([bytes[i + 2], bytes[i + 3]]));
        if marker == 0xC0 {
            let seg = &bytes[i + 4..i + 2 + len];
            let height = u16::from_be_bytes([seg[1], seg[2]]);
            let width = u16::from_be_bytes([seg[3], seg[4]]);
            let factors = (0..usize::from(seg[5]))
                .map(|c| seg[6 + 3 * c + 1])
                .collect();
            return (width, height, factors);
        }
        i += 2 + len;
    }
}

#[test]
fn png_decodes_to_the_drawn_size() {
    let mut rng = derive_rng(1, "test");
    let pixels = noise_rgb(37, 21, &mut rng);
    assert_eq!(png_size(&encode_png(&pixels, 37, 21).unwrap()), (37, 21));
}

#[test]
fn jpeg_has_the_right_sof_and_no_chroma_subsampling() {
    let mut rng = derive_rng(1, "test");
    let pixels = noise_rgb(40, 24, &mut rng);
    let (w, h, factors) = jpeg_sof(&encode_jpeg(&pixels, 40, 24).unwrap());
    assert_eq!((w, h), (40, 24));
    assert_eq!(factors, [0x11, 0x11, 0x11], "4:4:4");
    assert_eq!(
        encode_jpeg(&[], 70_000, 1).unwrap_err().to_string(),
        "a 70000x1 image is too large for JPEG (at most 65535 pixels a side); lower \
         --image-width-mean/--image-height-mean or use --image-format png"
    );
}

#[test]
fn wav_header_fields_are_exact() {
    for (bits, channels) in [(8u16, 1u16), (16, 2), (24, 1), (32, 2)] {
        let rate = 8000;
        let samples = vec![0.25; 100 * usize::from(channels)];
        let wav = wav_bytes(&samples, rate, channels, bits);
        let u16_at = |i: usize| u16::from_le_bytes([wav[i], wav[i + 1]]);
        let u32_at = |i: usize| u32::from_le_bytes(wav[i..i + 4].try_into().unwrap());
        let data_len = 100 * u32::from(channels) * u32::from(bits / 8);
        assert_eq!(&wav[0..4], b"RIFF");
        assert_eq!(u32_at(4), 36 + data_len);
        assert_eq!(&wav[8..16], b"WAVEfmt ");
        assert_eq!((u32_at(16), u16_at(20)), (16, 1));
        assert_eq!(u16_at(22), channels);
        assert_eq!(u32_at(24), rate);
        assert_eq!(u32_at(28), rate * u32::from(channels) * u32::from(bits / 8));
        assert_eq!(u16_at(32), channels * bits / 8);
        assert_eq!(u16_at(34), bits);
        assert_eq!(&wav[36..40], b"data");
        assert_eq!(u32_at(40), data_len);
        assert_eq!(wav.len(), 44 + data_len as usize);
    }
    // 0.25 full scale at 16 bits; 8-bit is unsigned around 128.
    let wav = wav_bytes(&[0.25, -1.0], 8000, 1, 16);
    assert_eq!(i16::from_le_bytes([wav[44], wav[45]]), 8192);
    assert_eq!(i16::from_le_bytes([wav[46], wav[47]]), -32767);
    assert_eq!(wav_bytes(&[0.0, 1.0], 8000, 1, 8)[44..], [128, 255]);
}

fn media_input() -> InputConfig {
    let mut input = InputConfig {
        isl_mean: 0,
        num_dataset_entries: Some(4),
        random_seed: Some(5),
        ..InputConfig::default()
    };
    input.image.width_mean = 30.0;
    input.image.height_mean = 20.0;
    input.image.batch_size = 2;
    input.audio.length_mean = 0.25;
    input.audio.batch_size = 1;
    input.audio.sample_rates_khz = vec![8.0];
    input.audio.depths = vec![16];
    input.audio.num_channels = 2;
    input
}

#[test]
fn dataset_turns_carry_images_and_audio_without_text() {
    let conversations = SyntheticDataset::new(&media_input(), &[], Tokenizer::builtin())
        .unwrap()
        .generate()
        .unwrap();
    for c in &conversations {
        let turn = &c.turns[0];
        assert!(turn.texts.is_empty());
        assert_eq!(turn.images.len(), 2);
        for image in &turn.images {
            let data = image.strip_prefix("data:image/png;base64,").unwrap();
            assert_eq!(png_size(&b64(data)), (30, 20));
        }
        assert_eq!(turn.audios.len(), 1);
        let wav = b64(turn.audios[0].strip_prefix("wav,").unwrap());
        // 0.25 s × 8000 Hz × 2 channels × 2 bytes.
        assert_eq!(u32::from_le_bytes(wav[40..44].try_into().unwrap()), 8000);
        assert_eq!(u32::from_le_bytes(wav[24..28].try_into().unwrap()), 8000);
        // The audio metrics' clip length, as made and as read back from the header.
        assert_eq!(turn.audio_duration_s, Some(0.25));
        assert_eq!(clip_seconds(&turn.audios[0]), Some(0.25));
    }
}

#[test]
fn a_loaded_clip_is_measured_from_its_wav_header() {
    use base64::engine::general_purpose::STANDARD;
    // 12 000 frames of 16-bit stereo at 8 kHz: 1.5 s, after a LIST chunk of odd size.
    let plain = wav_bytes(&vec![0.0; 24_000], 8000, 2, 16);
    let mut with_list = plain[..36].to_vec();
    with_list.extend_from_slice(b"LIST");
    with_list.extend_from_slice(&3u32.to_le_bytes());
    with_list.extend_from_slice(b"abc\0");
    with_list.extend_from_slice(&plain[36..]);
    assert_eq!(
        clip_seconds(&format!("wav,{}", STANDARD.encode(&plain))),
        Some(1.5)
    );
    assert_eq!(
        clip_seconds(&format!("wav,{}", STANDARD.encode(&with_list))),
        Some(1.5)
    );
    // A streamed file's unset data size counts the bytes there are.
    let mut streamed = plain.clone();
    streamed[40..44].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(
        clip_seconds(&format!("wav,{}", STANDARD.encode(&streamed))),
        Some(1.5)
    );
    assert_eq!(clip_seconds("mp3,SUQzBAAAAAAA"), None);
    assert_eq!(clip_seconds("https://example.com/a.wav"), None);
    assert_eq!(clip_seconds("wav,UklGRg=="), None);
}

#[test]
fn jpeg_and_random_formats_and_sampled_sizes() {
    let mut input = media_input();
    input.audio.length_mean = 0.0;
    input.image.format = ImageFormat::Jpeg;
    input.image.width_stddev = 5.0;
    let conversations = SyntheticDataset::new(&input, &[], Tokenizer::builtin())
        .unwrap()
        .generate()
        .unwrap();
    let mut widths = std::collections::HashSet::new();
    for image in conversations.iter().flat_map(|c| &c.turns[0].images) {
        let data = b64(image.strip_prefix("data:image/jpeg;base64,").unwrap());
        let (w, h, _) = jpeg_sof(&data);
        assert_eq!(h, 20);
        widths.insert(w);
    }
    assert!(widths.len() > 1, "{widths:?}");

    input.image.format = ImageFormat::Random;
    input.num_dataset_entries = Some(20);
    let kinds: std::collections::HashSet<_> =
        SyntheticDataset::new(&input, &[], Tokenizer::builtin())
            .unwrap()
            .generate()
            .unwrap()
            .iter()
            .flat_map(|c| c.turns[0].images.clone())
            .map(|url| url[..15].to_owned())
            .collect();
    assert_eq!(kinds.len(), 2, "{kinds:?}");
}

#[test]
fn audio_lengths_vary_but_stay_above_the_minimum() {
    let mut input = media_input();
    input.image.width_mean = 0.0;
    input.audio.length_mean = 0.02;
    input.audio.length_stddev = 0.05;
    input.audio.num_channels = 1;
    input.num_dataset_entries = Some(30);
    let lengths: Vec<u32> = SyntheticDataset::new(&input, &[], Tokenizer::builtin())
        .unwrap()
        .generate()
        .unwrap()
        .iter()
        .map(|c| {
            let wav = b64(c.turns[0].audios[0].strip_prefix("wav,").unwrap());
            u32::from_le_bytes(wav[40..44].try_into().unwrap())
        })
        .collect();
    // 0.01 s at 8 kHz, 16-bit mono = 160 bytes.
    assert!(lengths.iter().all(|n| *n >= 160), "{lengths:?}");
    assert!(
        lengths
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len()
            > 5
    );
}
