//! `inputs.json`: the exact body each conversation's turns are sent with.

use std::io::Write;
use std::path::Path;

use aiperf_core::{build_request, BenchmarkConfig, Conversation, Endpoint, RequestInput};
use serde_json::{json, Value};

use crate::RunError;

/// Writes the body of every turn of `conversations` and of the sessions they start
/// (each after its parent), per session, to `path`. A body that is not JSON is kept as
/// a string; a multipart form is written as its JSON view.
pub(crate) fn write(
    path: &Path,
    endpoint: &dyn Endpoint,
    config: &BenchmarkConfig,
    conversations: &[Conversation],
) -> Result<(), RunError> {
    let mut data = Vec::with_capacity(conversations.len());
    for conversation in conversations
        .iter()
        .flat_map(Conversation::with_descendants)
    {
        let mut payloads = Vec::with_capacity(conversation.turns.len());
        for turn in conversation.turns.chunks(1) {
            let built = build_request(
                endpoint,
                &RequestInput {
                    model: turn[0].model.as_deref().unwrap_or(config.primary_model()),
                    system_message: conversation.system_message.as_deref(),
                    user_context_message: conversation.user_context_message.as_deref(),
                    turns: turn,
                    streaming: config.endpoint.streaming,
                },
            )?;
            let recorded = built.recorded_payload();
            let payload = serde_json::from_slice::<Value>(recorded)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(recorded).into_owned()));
            payloads.push(payload);
        }
        data.push(json!({"session_id": conversation.session_id, "payloads": payloads}));
    }
    let file = std::fs::File::create(path).map_err(RunError::write(path))?;
    let mut writer = std::io::BufWriter::new(file);
    serde_json::to_writer_pretty(&mut writer, &json!({ "data": data }))
        .map_err(std::io::Error::from)
        .and_then(|()| writer.flush())
        .map_err(RunError::write(path))
}
