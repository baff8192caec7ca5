//! Every route: exact shapes, exact token counts, usage, `[DONE]`, errors.

#![allow(clippy::unwrap_used)]

mod common;

use aiperf_mock_server::{MockConfig, MockServer, CORPUS, EMBEDDING_DIMS};
use common::*;
use hyper::Method;
use serde_json::{json, Value};

async fn fast() -> MockServer {
    MockServer::start(MockConfig::fast()).await.unwrap()
}

fn assert_chunk_head(v: &Value, object: &str, id_prefix: &str, model: &str) {
    assert_eq!(v["object"], object, "{v}");
    assert!(v["id"].as_str().unwrap().starts_with(id_prefix), "{v}");
    assert!(v["created"].as_u64().unwrap() > 1_600_000_000);
    assert_eq!(v["model"], model);
}

#[tokio::test]
async fn chat_streaming_shape_and_counts() {
    let s = fast().await;
    let body = json!({
        "model": "my-model",
        "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": [{"type": "text", "text": "hello there"}, {"type": "image_url", "image_url": {"url": "x"}}]}],
        "max_tokens": 37, "stream": true, "stream_options": {"include_usage": true}
    });
    let r = post(s.addr(), "/v1/chat/completions", &body).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "text/event-stream");
    let events = r.events();
    assert_eq!(events.last().unwrap().data, "[DONE]");
    assert!(events.iter().all(|e| e.event.is_none()));
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|e| serde_json::from_str(&e.data).unwrap())
        .collect();
    // role chunk + 37 content chunks + usage chunk
    assert_eq!(chunks.len(), 1 + 37 + 1);
    let id = chunks[0]["id"].clone();
    for c in &chunks {
        assert_chunk_head(c, "chat.completion.chunk", "chatcmpl-", "my-model");
        assert_eq!(c["id"], id);
    }
    assert_eq!(
        chunks[0]["choices"],
        json!([{"index": 0, "delta": {"role": "assistant", "content": ""}, "logprobs": null, "finish_reason": null}])
    );
    for (k, c) in chunks[1..38].iter().enumerate() {
        let choice = &c["choices"][0];
        assert_eq!(choice["index"], 0);
        assert_eq!(
            choice["delta"]["content"],
            format!(" {}", CORPUS[k % CORPUS.len()])
        );
        let fin = if k == 36 {
            json!("length")
        } else {
            Value::Null
        };
        assert_eq!(choice["finish_reason"], fin, "chunk {k}");
    }
    let usage = &chunks[38];
    assert_eq!(usage["choices"], json!([]));
    // prompt = "be brief hello there" -> 4 words
    assert_eq!(
        usage["usage"],
        json!({"prompt_tokens": 4, "completion_tokens": 37, "total_tokens": 41})
    );
    let (content, reasoning) = chat_content(&r);
    assert_eq!(words(&content), 37);
    assert!(reasoning.is_empty());
}

#[tokio::test]
async fn chat_streaming_without_usage_and_max_completion_tokens_wins() {
    let s = fast().await;
    let body = json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 5, "max_completion_tokens": 9, "stream": true});
    let r = post(s.addr(), "/v1/chat/completions", &body).await;
    let chunks = r.data_json();
    assert_eq!(chunks.len(), 1 + 9);
    assert!(chunks.iter().all(|c| c.get("usage").is_none()));
    assert_eq!(chunks[1]["model"], "mock-model");
    assert_eq!(r.events().last().unwrap().data, "[DONE]");
}

#[tokio::test]
async fn chat_non_streaming_shape() {
    let s = fast().await;
    let body = json!({"model": "m", "messages": [{"role": "user", "content": "one two three"}], "max_completion_tokens": 12});
    let r = post(s.addr(), "/v1/chat/completions", &body).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "application/json");
    let v = r.json();
    assert_chunk_head(&v, "chat.completion", "chatcmpl-", "m");
    let expected: String = (0..12).map(|k| format!(" {}", CORPUS[k])).collect();
    assert_eq!(
        v["choices"],
        json!([{"index": 0, "message": {"role": "assistant", "content": expected}, "logprobs": null, "finish_reason": "length"}])
    );
    assert_eq!(
        v["usage"],
        json!({"prompt_tokens": 3, "completion_tokens": 12, "total_tokens": 15})
    );
}

#[tokio::test]
async fn chat_default_length_min_tokens_and_ignore_eos() {
    let s = fast().await;
    let prompt = "word ".repeat(100);
    let body = json!({"messages": [{"role": "user", "content": prompt}]});
    let a = post(s.addr(), "/v1/chat/completions", &body).await.json();
    let b = post(s.addr(), "/v1/chat/completions", &body).await.json();
    let n = a["usage"]["completion_tokens"].as_u64().unwrap();
    assert_eq!(
        n,
        b["usage"]["completion_tokens"].as_u64().unwrap(),
        "deterministic"
    );
    assert!((80..=120).contains(&n), "{n}");
    assert_eq!(a["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        words(a["choices"][0]["message"]["content"].as_str().unwrap()) as u64,
        n
    );

    let short = json!({"messages": [{"role": "user", "content": "hi"}]});
    let v = post(s.addr(), "/v1/chat/completions", &short).await.json();
    assert_eq!(v["usage"]["completion_tokens"], 16, "minimum 16");
    let v = post(
        s.addr(),
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "hi"}], "min_tokens": 300}),
    )
    .await
    .json();
    assert_eq!(v["usage"]["completion_tokens"], 300);
    let v = post(s.addr(), "/v1/chat/completions", &json!({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 50, "min_tokens": 50, "ignore_eos": true})).await.json();
    assert_eq!(v["usage"]["completion_tokens"], 50);
    assert_eq!(v["choices"][0]["finish_reason"], "length");
}

#[tokio::test]
async fn chat_reasoning_models() {
    let s = fast().await;
    // streaming, qwen, medium effort capped at half the budget
    let body = json!({"model": "Qwen/Qwen3-0.6B", "messages": [{"role": "user", "content": "a b"}], "max_tokens": 100, "stream": true, "stream_options": {"include_usage": true}});
    let r = post(s.addr(), "/v1/chat/completions", &body).await;
    let (content, reasoning) = chat_content(&r);
    assert_eq!((words(&reasoning), words(&content)), (50, 50));
    let chunks = r.data_json();
    // reasoning deltas come first
    assert!(chunks[1]["choices"][0]["delta"]["reasoning_content"].is_string());
    assert!(chunks[50]["choices"][0]["delta"]["reasoning_content"].is_string());
    assert!(chunks[51]["choices"][0]["delta"]["content"].is_string());
    assert_eq!(chunks[100]["choices"][0]["finish_reason"], "length");
    let usage = &chunks.last().unwrap()["usage"];
    assert_eq!(usage["completion_tokens"], 100);
    assert_eq!(usage["completion_tokens_details"]["reasoning_tokens"], 50);

    // non-streaming, gpt-oss, low effort
    let body = json!({"model": "openai/gpt-oss-20b", "messages": [{"role": "user", "content": "a"}], "max_completion_tokens": 1000, "reasoning_effort": "low"});
    let v = post(s.addr(), "/v1/chat/completions", &body).await.json();
    let msg = &v["choices"][0]["message"];
    assert_eq!(words(msg["reasoning_content"].as_str().unwrap()), 100);
    assert_eq!(words(msg["content"].as_str().unwrap()), 900);
    assert_eq!(
        v["usage"]["completion_tokens_details"]["reasoning_tokens"],
        100
    );

    // no max: effort + default content length
    let body = json!({"model": "deepseek-r1", "messages": [{"role": "user", "content": "a"}], "reasoning_effort": "high"});
    let v = post(s.addr(), "/v1/chat/completions", &body).await.json();
    assert_eq!(v["usage"]["completion_tokens"], 516);
    assert_eq!(v["choices"][0]["finish_reason"], "stop");

    // plain model: no reasoning
    let v = post(
        s.addr(),
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "a"}], "max_tokens": 4}),
    )
    .await
    .json();
    assert!(v["choices"][0]["message"]
        .get("reasoning_content")
        .is_none());
    assert!(v["usage"].get("completion_tokens_details").is_none());

    // --reasoning turns it on for every model
    let r = MockServer::start(MockConfig {
        reasoning: true,
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let v = post(
        r.addr(),
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "a"}], "max_tokens": 600}),
    )
    .await
    .json();
    assert_eq!(
        v["usage"]["completion_tokens_details"]["reasoning_tokens"],
        250
    );
}

#[tokio::test]
async fn tokens_per_event_groups_tokens() {
    let s = MockServer::start(MockConfig {
        tokens_per_event: 3,
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let body = json!({"messages": [{"role": "user", "content": "a"}], "max_tokens": 10, "stream": true, "stream_options": {"include_usage": true}});
    let r = post(s.addr(), "/v1/chat/completions", &body).await;
    let chunks = r.data_json();
    let sizes: Vec<usize> = chunks[1..chunks.len() - 1]
        .iter()
        .map(|c| words(c["choices"][0]["delta"]["content"].as_str().unwrap()))
        .collect();
    assert_eq!(sizes, vec![3, 3, 3, 1]);
    assert_eq!(chunks.last().unwrap()["usage"]["completion_tokens"], 10);
}

#[tokio::test]
async fn completions_streaming_and_not() {
    let s = fast().await;
    let body = json!({"model": "m", "prompt": "the quick brown fox", "max_tokens": 20, "stream": true, "stream_options": {"include_usage": true}});
    let r = post(s.addr(), "/v1/completions", &body).await;
    assert_eq!(r.events().last().unwrap().data, "[DONE]");
    let chunks = r.data_json();
    assert_eq!(chunks.len(), 21);
    for (k, c) in chunks[..20].iter().enumerate() {
        assert_chunk_head(c, "text_completion", "cmpl-", "m");
        assert_eq!(c["choices"][0]["text"], format!(" {}", CORPUS[k]));
        assert_eq!(c["choices"][0]["index"], 0);
        assert_eq!(
            c["choices"][0]["finish_reason"],
            if k == 19 {
                json!("length")
            } else {
                Value::Null
            }
        );
    }
    assert_eq!(chunks[20]["choices"], json!([]));
    assert_eq!(
        chunks[20]["usage"],
        json!({"prompt_tokens": 4, "completion_tokens": 20, "total_tokens": 24})
    );

    let body = json!({"prompt": ["a b", "c"], "max_tokens": 7});
    let v = post(s.addr(), "/v1/completions", &body).await.json();
    assert_chunk_head(&v, "text_completion", "cmpl-", "mock-model");
    assert_eq!(words(v["choices"][0]["text"].as_str().unwrap()), 7);
    assert_eq!(v["choices"][0]["finish_reason"], "length");
    assert_eq!(
        v["usage"],
        json!({"prompt_tokens": 3, "completion_tokens": 7, "total_tokens": 10})
    );
    // token-id prompts count ids
    let v = post(
        s.addr(),
        "/v1/completions",
        &json!({"prompt": [1, 2, 3, 4, 5], "max_tokens": 2}),
    )
    .await
    .json();
    assert_eq!(v["usage"]["prompt_tokens"], 5);
}

#[tokio::test]
async fn responses_api() {
    let s = fast().await;
    let body = json!({"model": "m", "input": [{"role": "user", "content": [{"type": "input_text", "text": "one two"}]}], "instructions": "three", "max_output_tokens": 8});
    let v = post(s.addr(), "/v1/responses", &body).await.json();
    assert_eq!(v["object"], "response");
    assert_eq!(v["status"], "completed");
    assert!(v["id"].as_str().unwrap().starts_with("resp_"));
    let out = &v["output"][0];
    assert_eq!(out["type"], "message");
    assert_eq!(out["content"][0]["type"], "output_text");
    assert_eq!(words(out["content"][0]["text"].as_str().unwrap()), 8);
    assert_eq!(v["usage"]["input_tokens"], 3);
    assert_eq!(v["usage"]["output_tokens"], 8);
    assert_eq!(v["usage"]["total_tokens"], 11);

    let body = json!({"input": "hello world", "max_output_tokens": 6, "stream": true});
    let r = post(s.addr(), "/v1/responses", &body).await;
    let events = r.events();
    let types: Vec<String> = events.iter().map(|e| e.event.clone().unwrap()).collect();
    assert_eq!(types[0], "response.created");
    assert_eq!(types.last().unwrap(), "response.completed");
    let deltas: Vec<&common::Event> = events
        .iter()
        .filter(|e| e.event.as_deref() == Some("response.output_text.delta"))
        .collect();
    assert_eq!(deltas.len(), 6);
    let mut text = String::new();
    let mut last_seq = -1i64;
    for e in &events {
        let v: Value = serde_json::from_str(&e.data).unwrap();
        assert_eq!(v["type"].as_str(), e.event.as_deref());
        let seq = v["sequence_number"].as_i64().unwrap();
        assert_eq!(seq, last_seq + 1);
        last_seq = seq;
        if e.event.as_deref() == Some("response.output_text.delta") {
            text.push_str(v["delta"].as_str().unwrap());
        }
    }
    assert_eq!(words(&text), 6);
    let done: Value = serde_json::from_str(&events.last().unwrap().data).unwrap();
    assert_eq!(done["response"]["usage"]["output_tokens"], 6);
    assert_eq!(done["response"]["usage"]["input_tokens"], 2);
    assert_eq!(done["response"]["output"][0]["content"][0]["text"], text);
}

#[tokio::test]
async fn tgi_generate_and_stream() {
    let s = fast().await;
    let v = post(
        s.addr(),
        "/generate",
        &json!({"inputs": "a b c", "parameters": {"max_new_tokens": 9}}),
    )
    .await
    .json();
    assert_eq!(v.as_object().unwrap().len(), 1);
    assert_eq!(words(v["generated_text"].as_str().unwrap()), 9);
    let v = post(
        s.addr(),
        "/generate",
        &json!({"inputs": "a", "parameters": {"max_new_tokens": 4, "details": true}}),
    )
    .await
    .json();
    assert_eq!(v["details"]["generated_tokens"], 4);
    assert_eq!(v["details"]["finish_reason"], "length");

    let r = post(
        s.addr(),
        "/generate_stream",
        &json!({"inputs": "a b c", "parameters": {"max_new_tokens": 5}}),
    )
    .await;
    let chunks = r.data_json();
    assert_eq!(chunks.len(), 5);
    assert_eq!(r.events().len(), 5, "no [DONE] for TGI");
    for (k, c) in chunks.iter().enumerate() {
        assert_eq!(c["token"]["text"], format!(" {}", CORPUS[k]));
        assert_eq!(c["index"], k);
        if k < 4 {
            assert_eq!(c["generated_text"], Value::Null);
        }
    }
    assert_eq!(chunks[4]["generated_text"], " the of and to in");
    assert_eq!(chunks[4]["details"]["generated_tokens"], 5);
}

#[tokio::test]
async fn embeddings_are_deterministic_unit_vectors() {
    let s = fast().await;
    let v = post(
        s.addr(),
        "/v1/embeddings",
        &json!({"model": "e", "input": ["hello world", "bye"]}),
    )
    .await
    .json();
    assert_eq!(v["object"], "list");
    assert_eq!(v["model"], "e");
    assert_eq!(v["usage"], json!({"prompt_tokens": 3, "total_tokens": 3}));
    let data = v["data"].as_array().unwrap();
    assert_eq!(data.len(), 2);
    for (i, d) in data.iter().enumerate() {
        assert_eq!(d["object"], "embedding");
        assert_eq!(d["index"], i);
        let e: Vec<f64> = d["embedding"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_f64().unwrap())
            .collect();
        assert_eq!(e.len(), EMBEDDING_DIMS);
        let norm: f64 = e.iter().map(|x| x * x).sum::<f64>().sqrt();
        assert!((norm - 1.0).abs() < 1e-4);
    }
    let again = post(s.addr(), "/v1/embeddings", &json!({"input": "hello world"}))
        .await
        .json();
    assert_eq!(again["data"][0]["embedding"], data[0]["embedding"]);
    assert_ne!(data[0]["embedding"], data[1]["embedding"]);
}

#[tokio::test]
async fn rankings_three_flavours() {
    let s = fast().await;
    let v = post(s.addr(), "/v1/ranking", &json!({"model": "r", "query": {"text": "red apple"}, "passages": [{"text": "blue sky"}, {"text": "a red apple"}, {"text": "red car"}]})).await.json();
    let r = v["rankings"].as_array().unwrap();
    assert_eq!(r.len(), 3);
    assert_eq!(r[0]["index"], 1);
    assert_eq!(r[1]["index"], 2);
    assert!(r[0]["logit"].as_f64().unwrap() > r[1]["logit"].as_f64().unwrap());

    let v = post(
        s.addr(),
        "/rerank",
        &json!({"query": "red apple", "texts": ["blue sky", "a red apple"]}),
    )
    .await
    .json();
    let r = v.as_array().unwrap();
    assert_eq!(r[0]["index"], 1);
    let score = r[0]["score"].as_f64().unwrap();
    assert!(score > 0.5 && score < 1.0);

    let v = post(s.addr(), "/v2/rerank", &json!({"model": "c", "query": "red apple", "documents": ["blue sky", {"text": "a red apple"}, "x"], "top_n": 2})).await.json();
    let r = v["results"].as_array().unwrap();
    assert_eq!(r.len(), 2);
    assert_eq!(r[0]["index"], 1);
    assert!(r[0]["relevance_score"].as_f64().unwrap() > r[1]["relevance_score"].as_f64().unwrap());
}

#[tokio::test]
async fn info_routes() {
    let s = MockServer::start(MockConfig {
        default_model: "served".into(),
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let v = get(s.addr(), "/v1/models").await.json();
    assert_eq!(v["object"], "list");
    assert_eq!(v["data"][0]["id"], "served");
    assert_eq!(v["data"][0]["object"], "model");
    let h = get(s.addr(), "/health").await;
    assert_eq!(h.status, 200);
    assert_eq!(h.json()["status"], "healthy");
    // a request without a model is answered with the default model
    let v = post(
        s.addr(),
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "x"}], "max_tokens": 1}),
    )
    .await
    .json();
    assert_eq!(v["model"], "served");
}

#[tokio::test]
async fn errors_404_405_400() {
    let s = fast().await;
    let r = get(s.addr(), "/v1/nope").await;
    assert_eq!(r.status, 404);
    assert!(r.json()["error"]["message"]
        .as_str()
        .unwrap()
        .contains("/v1/nope"));
    let r = get(s.addr(), "/v1/chat/completions").await;
    assert_eq!(r.status, 405);
    assert_eq!(r.headers["allow"], "POST");
    let r = request(s.addr(), Method::POST, "/metrics", &[], "")
        .await
        .unwrap();
    assert_eq!(r.status, 405);

    for bad in [
        "{not json",
        "[]",
        "{\"messages\": 3}",
        "{\"messages\": [], \"max_tokens\": 0}",
    ] {
        let r = request(s.addr(), Method::POST, "/v1/chat/completions", &[], bad)
            .await
            .unwrap();
        assert_eq!(r.status, 400, "{bad}");
        let e = &r.json()["error"];
        assert_eq!(e["type"], "invalid_request_error");
        assert_eq!(e["code"], 400);
        assert!(!e["message"].as_str().unwrap().is_empty());
    }
    for path in [
        "/v1/completions",
        "/v1/embeddings",
        "/v1/ranking",
        "/rerank",
        "/v2/rerank",
        "/v1/responses",
        "/generate",
        "/generate_stream",
    ] {
        let r = request(s.addr(), Method::POST, path, &[], "{oops")
            .await
            .unwrap();
        assert_eq!(r.status, 400, "{path}");
        assert_eq!(r.json()["error"]["code"], 400);
    }
}

#[tokio::test]
async fn tokenizer_file_counts_prompt_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tokenizer.json");
    // A word-level tokenizer whose pre-tokenizer splits punctuation: "hello, world!" = 4 tokens.
    let tok = json!({
        "version": "1.0", "truncation": null, "padding": null, "added_tokens": [],
        "normalizer": null, "pre_tokenizer": {"type": "Whitespace"}, "post_processor": null, "decoder": null,
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "hello": 1, "world": 2}, "unk_token": "[UNK]"}
    });
    std::fs::write(&path, tok.to_string()).unwrap();
    let s = MockServer::start(MockConfig {
        tokenizer: Some(path),
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let v = post(
        s.addr(),
        "/v1/chat/completions",
        &json!({"messages": [{"role": "user", "content": "hello, world!"}], "max_tokens": 2}),
    )
    .await
    .json();
    assert_eq!(v["usage"]["prompt_tokens"], 4);

    let err = MockServer::start(MockConfig {
        tokenizer: Some(dir.path().join("missing.json")),
        ..MockConfig::fast()
    })
    .await
    .unwrap_err();
    assert!(err.to_string().contains("missing.json"), "{err}");
}

#[tokio::test]
async fn config_validation() {
    let mut c = MockConfig::fast();
    c.faults.error_rate = 101.0;
    assert!(MockServer::start(c)
        .await
        .unwrap_err()
        .to_string()
        .contains("error-rate"));
    let c = MockConfig {
        tokens_per_event: 0,
        ..MockConfig::fast()
    };
    assert!(MockServer::start(c).await.is_err());
    assert!("h100".parse::<aiperf_mock_server::GpuModel>().is_ok());
    assert!("v100"
        .parse::<aiperf_mock_server::GpuModel>()
        .unwrap_err()
        .to_string()
        .contains("h200"));
}
