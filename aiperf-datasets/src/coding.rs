//! The coding corpus (`--prompt-corpus coding`): documents of the kinds a coding
//! assistant reads, written for this project and assembled from templates with seeded
//! identifiers, numbers and paths — Python, Rust and TypeScript source, shell
//! transcripts, JSON documents, error tracebacks and unified diffs. The prompt generator
//! tokenizes a long seeded stream of them line by line and cuts prompts from it like
//! the prose corpus.

use rand::{Rng, RngExt};

/// Nouns identifiers are made of.
const NOUNS: &[&str] = &[
    "user", "order", "cache", "request", "token", "session", "batch", "queue", "worker", "config",
    "record", "metric", "buffer", "client", "server", "route", "payload", "event", "schema",
    "account", "invoice", "report", "shard", "lease", "chunk", "window", "span", "model", "prompt",
    "result", "handler", "policy", "ledger", "snapshot", "manifest",
];
/// Verbs function names start with.
const VERBS: &[&str] = &[
    "load",
    "parse",
    "fetch",
    "build",
    "merge",
    "flush",
    "resolve",
    "validate",
    "encode",
    "decode",
    "render",
    "schedule",
    "retry",
    "compute",
    "collect",
    "normalize",
    "split",
    "apply",
    "refresh",
    "drain",
    "emit",
    "register",
    "compact",
    "restore",
];
/// Adjectives for variables and messages.
const ADJECTIVES: &[&str] = &[
    "pending", "active", "stale", "primary", "cached", "remote", "local", "partial", "final",
    "default", "raw", "sorted", "unique", "expired", "current", "next",
];
/// Directories of the paths in transcripts, tracebacks and diffs.
const DIRS: &[&str] = &[
    "src", "lib", "app", "core", "api", "services", "utils", "internal", "pkg", "tests",
];

/// One document of a random kind, ending with a newline.
pub(crate) fn document<R: Rng + ?Sized>(rng: &mut R) -> String {
    match rng.random_range(0..7) {
        0 => python_module(rng),
        1 => rust_module(rng),
        2 => typescript_module(rng),
        3 => shell_transcript(rng),
        4 => json_document(rng),
        5 => traceback(rng),
        _ => unified_diff(rng),
    }
}

fn pick<'a, R: Rng + ?Sized>(rng: &mut R, words: &[&'a str]) -> &'a str {
    words[rng.random_range(0..words.len())]
}

fn snake<R: Rng + ?Sized>(rng: &mut R) -> String {
    format!("{}_{}", pick(rng, ADJECTIVES), pick(rng, NOUNS))
}

fn function_name<R: Rng + ?Sized>(rng: &mut R) -> String {
    format!("{}_{}", pick(rng, VERBS), pick(rng, NOUNS))
}

fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_ascii_uppercase().to_string() + chars.as_str()
    })
}

fn pascal<R: Rng + ?Sized>(rng: &mut R) -> String {
    capitalized(pick(rng, NOUNS)) + &capitalized(pick(rng, NOUNS))
}

fn camel<R: Rng + ?Sized>(rng: &mut R) -> String {
    pick(rng, VERBS).to_string() + &capitalized(pick(rng, NOUNS))
}

fn path<R: Rng + ?Sized>(rng: &mut R, extension: &str) -> String {
    format!(
        "{}/{}/{}.{extension}",
        pick(rng, DIRS),
        pick(rng, NOUNS),
        function_name(rng)
    )
}

fn hex<R: Rng + ?Sized>(rng: &mut R, digits: usize) -> String {
    (0..digits)
        .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
        .collect()
}

fn python_module<R: Rng + ?Sized>(rng: &mut R) -> String {
    let class = pascal(rng);
    let field = snake(rng);
    let other = snake(rng);
    let limit = rng.random_range(2..500);
    let mut out = format!(
        "import logging\nfrom dataclasses import dataclass, field\n\nlogger = \
         logging.getLogger(__name__)\n\n\n@dataclass\nclass {class}:\n    \"\"\"Holds the \
         {field} entries until they are flushed.\"\"\"\n\n    {field}: list[str] = \
         field(default_factory=list)\n    {other}: int = {limit}\n"
    );
    for _ in 0..rng.random_range(1..4) {
        let name = function_name(rng);
        let arg = pick(rng, NOUNS);
        let threshold = rng.random_range(1..100);
        out += &format!(
            "\n    def {name}(self, {arg}: str) -> bool:\n        if len(self.{field}) >= \
             self.{other}:\n            logger.warning(\"{name}: %s over limit\", {arg})\n            \
             return False\n        self.{field}.append({arg}.strip())\n        return \
             len(self.{field}) % {threshold} == 0\n"
        );
    }
    out
}

fn rust_module<R: Rng + ?Sized>(rng: &mut R) -> String {
    let name = pascal(rng);
    let field = snake(rng);
    let function = function_name(rng);
    let item = pick(rng, NOUNS);
    let capacity = rng.random_range(8..4096);
    format!(
        "use std::collections::HashMap;\n\n/// Keeps the {field} of each {item}.\n#[derive(Debug, \
         Default)]\npub struct {name} {{\n    {field}: HashMap<String, u64>,\n}}\n\nimpl {name} \
         {{\n    pub fn {function}(&mut self, key: &str, value: u64) -> Option<u64> {{\n        \
         if self.{field}.len() >= {capacity} {{\n            return None;\n        }}\n        \
         let entry = self.{field}.entry(key.to_owned()).or_insert(0);\n        *entry += \
         value;\n        Some(*entry)\n    }}\n}}\n\n#[cfg(test)]\nmod tests {{\n    use \
         super::*;\n\n    #[test]\n    fn {function}_adds_up() {{\n        let mut {item} = \
         {name}::default();\n        assert_eq!({item}.{function}(\"a\", 2), Some(2));\n    }}\n}}\n"
    )
}

fn typescript_module<R: Rng + ?Sized>(rng: &mut R) -> String {
    let interface = pascal(rng);
    let function = camel(rng);
    let field = pick(rng, NOUNS);
    let other = pick(rng, ADJECTIVES);
    let timeout = rng.random_range(1..60) * 500;
    format!(
        "export interface {interface} {{\n  id: string;\n  {field}: number;\n  {other}?: \
         boolean;\n}}\n\nexport async function {function}(url: string): \
         Promise<{interface}[]> {{\n  const controller = new AbortController();\n  const timer \
         = setTimeout(() => controller.abort(), {timeout});\n  try {{\n    const response = \
         await fetch(url, {{ signal: controller.signal }});\n    if (!response.ok) {{\n      \
         throw new Error(`{function} failed: ${{response.status}}`);\n    }}\n    return \
         (await response.json()) as {interface}[];\n  }} finally {{\n    \
         clearTimeout(timer);\n  }}\n}}\n"
    )
}

fn shell_transcript<R: Rng + ?Sized>(rng: &mut R) -> String {
    let crate_name = format!("{}-{}", pick(rng, NOUNS), pick(rng, NOUNS));
    let passed = rng.random_range(3..200);
    let failed = rng.random_range(0..3);
    let seconds = f64::from(rng.random_range(10..9000)) / 100.0;
    let mut out = format!(
        "$ git status --short\n M {}\n?? {}\n",
        path(rng, "rs"),
        path(rng, "rs")
    );
    out += &format!(
        "$ cargo test -p {crate_name}\n   Compiling {crate_name} v0.{}.{}\n",
        rng.random_range(1..9),
        rng.random_range(0..20)
    );
    for _ in 0..rng.random_range(2..6) {
        let outcome = if rng.random_range(0..10) == 0 {
            "FAILED"
        } else {
            "ok"
        };
        out += &format!(
            "test {}::tests::{} ... {outcome}\n",
            pick(rng, NOUNS),
            function_name(rng)
        );
    }
    out += &format!(
        "\ntest result: {}. {passed} passed; {failed} failed; 0 ignored; finished in \
         {seconds:.2}s\n$ ls -la {}\n",
        if failed == 0 { "ok" } else { "FAILED" },
        pick(rng, DIRS)
    );
    for _ in 0..rng.random_range(2..5) {
        out += &format!(
            "-rw-r--r--  1 dev staff {:>6} Mar {:>2} {:02}:{:02} {}.py\n",
            rng.random_range(100..90_000),
            rng.random_range(1..29),
            rng.random_range(0..24),
            rng.random_range(0..60),
            function_name(rng)
        );
    }
    out
}

fn json_document<R: Rng + ?Sized>(rng: &mut R) -> String {
    let mut out = format!(
        "{{\n  \"id\": \"{}-{}\",\n  \"status\": \"{}\",\n  \"items\": [\n",
        pick(rng, NOUNS),
        hex(rng, 8),
        pick(rng, ADJECTIVES)
    );
    let count = rng.random_range(1..4);
    for index in 0..count {
        out += &format!(
            "    {{ \"{}\": \"{}\", \"count\": {}, \"ratio\": {:.3}, \"enabled\": {} }}{}\n",
            pick(rng, NOUNS),
            snake(rng),
            rng.random_range(0..10_000),
            f64::from(rng.random_range(0..1000)) / 1000.0,
            rng.random_range(0..2) == 1,
            if index + 1 < count { "," } else { "" }
        );
    }
    out += &format!(
        "  ],\n  \"next_page\": {},\n  \"elapsed_ms\": {}\n}}\n",
        if rng.random_range(0..2) == 0 {
            "null".to_owned()
        } else {
            format!("\"{}\"", hex(rng, 12))
        },
        rng.random_range(1..2000)
    );
    out
}

fn traceback<R: Rng + ?Sized>(rng: &mut R) -> String {
    let mut out = "Traceback (most recent call last):\n".to_owned();
    for _ in 0..rng.random_range(2..5) {
        out += &format!(
            "  File \"/srv/{}\", line {}, in {}\n    {} = self.{}({})\n",
            path(rng, "py"),
            rng.random_range(10..900),
            function_name(rng),
            snake(rng),
            function_name(rng),
            pick(rng, NOUNS)
        );
    }
    let (kind, message) = match rng.random_range(0..3) {
        0 => ("KeyError", format!("'{}'", snake(rng))),
        1 => (
            "ValueError",
            format!(
                "invalid {}: expected at most {}",
                pick(rng, NOUNS),
                rng.random_range(1..64)
            ),
        ),
        _ => (
            "TimeoutError",
            format!(
                "{} did not answer within {}s",
                pick(rng, NOUNS),
                rng.random_range(1..120)
            ),
        ),
    };
    out + &format!("{kind}: {message}\n")
}

fn unified_diff<R: Rng + ?Sized>(rng: &mut R) -> String {
    let file = path(rng, "py");
    let line = rng.random_range(1..400);
    let old_name = snake(rng);
    let new_name = snake(rng);
    let function = function_name(rng);
    format!(
        "diff --git a/{file} b/{file}\nindex {}..{} 100644\n--- a/{file}\n+++ b/{file}\n@@ \
         -{line},6 +{line},7 @@ def {function}(self):\n     if not self.{old_name}:\n-        \
         return None\n+        logger.debug(\"{function}: nothing to do\")\n+        return \
         []\n-    result = [x for x in self.{old_name}]\n+    result = sorted(self.{new_name})\n     \
         self.{old_name}.clear()\n     return result\n",
        hex(rng, 7),
        hex(rng, 7)
    )
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn documents_are_seeded_and_varied() {
        let docs = |seed| {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            (0..50).map(|_| document(&mut rng)).collect::<Vec<_>>()
        };
        let (a, b) = (docs(1), docs(2));
        assert_eq!(a, docs(1));
        assert_ne!(a, b);
        let text = a.concat();
        for marker in [
            "def ",
            "fn ",
            "export ",
            "$ ",
            "\"id\"",
            "Traceback",
            "@@ -",
        ] {
            assert!(text.contains(marker), "no {marker:?} in 50 documents");
        }
        assert!(a.iter().all(|doc| doc.ends_with('\n') && doc.is_ascii()));
    }
}
