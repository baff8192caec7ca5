//! The Qwen3 chat template, rendered as Hugging Face `transformers` 4.x renders it
//! (`apply_chat_template(messages, tokenize=False, add_generation_prompt=True)`; the
//! expected strings were produced by it). Needs `AIPERF_TEST_TOKENIZER_DIR`.

#![allow(clippy::print_stderr)] // a test says on the terminal which optional input it skipped
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use aiperf_datasets::chat_template::ChatTemplate;
use serde_json::json;

fn qwen3_tokenizer_file() -> Option<PathBuf> {
    let Ok(dir) = std::env::var("AIPERF_TEST_TOKENIZER_DIR") else {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true but AIPERF_TEST_TOKENIZER_DIR is not set"
        );
        eprintln!("skipping the Qwen3 chat template test: AIPERF_TEST_TOKENIZER_DIR is not set");
        return None;
    };
    Some(PathBuf::from(dir).join("qwen3").join("tokenizer.json"))
}

#[test]
fn qwen3_renders_as_transformers_does() {
    let Some(file) = qwen3_tokenizer_file() else {
        return;
    };
    let template = ChatTemplate::beside(&file).unwrap().unwrap();
    let messages = [
        json!({"role": "system", "content": "Be brief."}),
        json!({"role": "user", "content": "hello there"}),
        json!({"role": "assistant", "content": "hi"}),
        json!({"role": "user", "content": "again"}),
    ];
    assert_eq!(
        template.render(&messages).unwrap(),
        "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhello there<|im_end|>\n\
         <|im_start|>assistant\nhi<|im_end|>\n<|im_start|>user\nagain<|im_end|>\n\
         <|im_start|>assistant\n"
    );
}
