//! Helpers shared by the AFL++ targets in `src/*.rs` (see `README.md`).

/// Splits `data` into consecutive pieces whose lengths are drawn from `seed`, the way a
/// socket may deliver a body: `seed` 0 gives one piece; otherwise pieces are 0 to
/// `seed % 16 + 1` bytes long (empty reads included), from a small PRNG seeded with `seed`,
/// so one input byte lets the fuzzer explore many chunkings of the same body.
pub fn split(data: &[u8], seed: u8) -> Vec<&[u8]> {
    if seed == 0 {
        return vec![data];
    }
    let max = usize::from(seed % 16) + 1;
    let mut state = u32::from(seed) | 0x9E37_7900;
    let mut pieces = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        // xorshift32: cheap, deterministic, good enough to vary split points.
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let len = (state as usize % (max + 1)).min(rest.len());
        let (piece, tail) = rest.split_at(len);
        pieces.push(piece);
        rest = tail;
    }
    pieces
}

/// Takes the first byte of `data` as a selector, or `None` for empty input.
pub fn take_byte(data: &mut &[u8]) -> Option<u8> {
    let (&first, rest) = data.split_first()?;
    *data = rest;
    Some(first)
}

/// A scratch file for this process (in `/dev/shm` when there is one), for the loaders
/// that only read a path; each run overwrites it, and the target removes it on exit.
pub fn scratch_file(target: &str) -> std::path::PathBuf {
    let shm = std::path::Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    base.join(format!("aiperf-fuzz-{target}-{}.input", std::process::id()))
}

/// Formats a loader's error (its `Display` must not panic either); prints the result
/// when `show` (`AIPERF_FUZZ_SHOW` is set).
pub fn report<T: std::fmt::Debug, E: std::fmt::Display>(show: bool, result: &Result<T, E>) {
    let text = match result {
        Ok(value) => format!("Ok({value:?})"),
        Err(error) => format!("Err({error})"),
    };
    if show {
        println!("{text}");
    }
}

#[cfg(test)]
mod tests {
    use super::split;

    #[test]
    fn pieces_cover_the_input_in_order() {
        let data: Vec<u8> = (0..200).collect();
        for seed in 0..=u8::MAX {
            assert_eq!(split(&data, seed).concat(), data, "seed {seed}");
        }
        assert_eq!(split(&data, 0).len(), 1);
        assert!(split(&data, 7).len() > 10);
    }
}
