//! Media values of dataset lines: URLs pass through, encoded data is kept, local files
//! are read and base64-encoded in the form each endpoint expects.

use std::path::Path;

use base64::Engine;

/// Which modality a value belongs to (decides the encoding of a local file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Modality {
    Image,
    Audio,
    Video,
}

/// Resolves one media value. `Err` is the message for the field's error.
pub(crate) fn resolve(modality: Modality, value: &str) -> Result<String, String> {
    let lower = value.get(..8).unwrap_or(value).to_ascii_lowercase();
    if lower.starts_with("http://") || lower.starts_with("https://") || lower.starts_with("data:") {
        return Ok(value.to_string());
    }
    let path = Path::new(value);
    if path.is_file() {
        return encode_file(modality, path);
    }
    // Base64 never holds a dot: a value with one is a file name that is not there.
    if value.contains('.') {
        return Err(format!(
            "{value} is neither an http(s) URL, a data: URL nor an existing file"
        ));
    }
    Ok(value.to_string())
}

fn encode_file(modality: Modality, path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let encoded = base64::engine::general_purpose::STANDARD.encode(&bytes);
    Ok(match modality {
        Modality::Image => {
            let format = image_format(&bytes, extension.as_deref()).ok_or_else(|| {
                format!(
                    "cannot tell the image format of {} (use a .png, .jpeg, .gif, .webp or \
                     .bmp file)",
                    path.display()
                )
            })?;
            format!("data:image/{format};base64,{encoded}")
        }
        Modality::Audio => {
            let format = extension.ok_or_else(|| {
                format!(
                    "cannot tell the audio format of {} (name it .wav or .mp3)",
                    path.display()
                )
            })?;
            format!("{format},{encoded}")
        }
        Modality::Video => {
            let format = extension.ok_or_else(|| {
                format!(
                    "cannot tell the video format of {} (name it .mp4 or .webm)",
                    path.display()
                )
            })?;
            format!("data:video/{format};base64,{encoded}")
        }
    })
}

/// The image's format from its first bytes, else from its file extension.
fn image_format(bytes: &[u8], extension: Option<&str>) -> Option<&'static str> {
    let sniffed = if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("png")
    } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("jpeg")
    } else if bytes.starts_with(b"GIF8") {
        Some("gif")
    } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
        Some("webp")
    } else if bytes.starts_with(b"BM") {
        Some("bmp")
    } else {
        None
    };
    sniffed.or(match extension? {
        "png" => Some("png"),
        "jpg" | "jpeg" => Some("jpeg"),
        "gif" => Some("gif"),
        "webp" => Some("webp"),
        "bmp" => Some("bmp"),
        "tif" | "tiff" => Some("tiff"),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_data_urls_pass_through() {
        for value in [
            "https://x/a.png",
            "HTTP://x/a.wav",
            "data:image/png;base64,AAAA",
        ] {
            assert_eq!(resolve(Modality::Image, value).unwrap(), value);
        }
        assert_eq!(
            resolve(Modality::Audio, "wav,UklGRg==").unwrap(),
            "wav,UklGRg=="
        );
    }

    #[test]
    fn local_files_are_encoded_per_modality() {
        let dir = tempfile::tempdir().unwrap();
        let png = dir.path().join("pixel.bin");
        std::fs::write(&png, b"\x89PNG\r\n\x1a\nrest").unwrap();
        let audio = dir.path().join("clip.wav");
        std::fs::write(&audio, b"abc").unwrap();
        let video = dir.path().join("clip.webm");
        std::fs::write(&video, b"abc").unwrap();
        let png = png.to_str().unwrap();
        assert_eq!(
            resolve(Modality::Image, png).unwrap(),
            "data:image/png;base64,iVBORw0KGgpyZXN0"
        );
        assert_eq!(
            resolve(Modality::Audio, audio.to_str().unwrap()).unwrap(),
            "wav,YWJj"
        );
        assert_eq!(
            resolve(Modality::Video, video.to_str().unwrap()).unwrap(),
            "data:video/webm;base64,YWJj"
        );
    }

    #[test]
    fn a_missing_file_is_an_error() {
        let err = resolve(Modality::Image, "/nope/cat.png").unwrap_err();
        assert_eq!(
            err,
            "/nope/cat.png is neither an http(s) URL, a data: URL nor an existing file"
        );
    }
}
