//! `--apply-chat-template`: the chat template of a Hugging Face tokenizer
//! (`tokenizer_config.json`'s `chat_template`), rendered with minijinja, so the input
//! sequence length counts what the server tokenizes: role headers, special tokens and the
//! generation prompt included.
//!
//! ```
//! use aiperf_datasets::chat_template::ChatTemplate;
//! use serde_json::json;
//!
//! let config = json!({
//!     "chat_template": "{% for m in messages %}<{{ m.role }}>{{ m.content.strip() }}\n{% endfor %}\
//!                       {% if add_generation_prompt %}<assistant>{% endif %}"
//! });
//! let template = ChatTemplate::from_config(&config).unwrap().unwrap();
//! let messages = [json!({"role": "user", "content": " hi "})];
//! assert_eq!(template.render(&messages).unwrap(), "<user>hi\n<assistant>");
//! ```

use std::borrow::Cow;
use std::path::Path;

use aiperf_core::TokenCounter;
use minijinja::{Environment, Error, ErrorKind};
use serde_json::Value;

use crate::error::TokenizerError;
use crate::tokenizer::Tokenizer;

/// The file beside `tokenizer.json` that holds the chat template.
pub const TOKENIZER_CONFIG_FILE: &str = "tokenizer_config.json";

const TEMPLATE_NAME: &str = "chat_template";

/// A compiled chat template and the special tokens it may name.
#[derive(Debug)]
pub struct ChatTemplate {
    environment: Environment<'static>,
    bos_token: String,
    eos_token: String,
}

impl ChatTemplate {
    /// The chat template of the `tokenizer_config.json` beside `tokenizer_file`; `None`
    /// when there is no such file or it has no template.
    pub fn beside(tokenizer_file: &Path) -> Result<Option<Self>, TokenizerError> {
        let Some(path) = tokenizer_file
            .parent()
            .map(|dir| dir.join(TOKENIZER_CONFIG_FILE))
            .filter(|path| path.is_file())
        else {
            return Ok(None);
        };
        let invalid = |reason: String| TokenizerError::InvalidChatTemplate {
            path: path.clone(),
            reason,
        };
        let text = std::fs::read_to_string(&path).map_err(|e| invalid(e.to_string()))?;
        let config: Value = serde_json::from_str(&text).map_err(|e| invalid(e.to_string()))?;
        Self::from_config(&config).map_err(|e| invalid(e.to_string()))
    }

    /// The chat template of a parsed `tokenizer_config.json`: `chat_template` as a string,
    /// or the one named `default` (else the first) of a list of named templates.
    pub fn from_config(config: &Value) -> Result<Option<Self>, Error> {
        let source = match &config["chat_template"] {
            Value::String(source) => source.clone(),
            Value::Array(named) => {
                let default = named.iter().find(|t| t["name"] == "default");
                match default
                    .or(named.first())
                    .and_then(|t| t["template"].as_str())
                {
                    Some(source) => source.to_owned(),
                    None => return Ok(None),
                }
            }
            _ => return Ok(None),
        };
        let mut environment = Environment::new();
        environment
            .set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        environment.add_function("raise_exception", |message: String| -> Result<(), Error> {
            Err(Error::new(ErrorKind::InvalidOperation, message))
        });
        environment.add_template_owned(TEMPLATE_NAME, source)?;
        Ok(Some(Self {
            environment,
            bos_token: special_token(&config["bos_token"]),
            eos_token: special_token(&config["eos_token"]),
        }))
    }

    /// `messages` (OpenAI chat messages) as the server renders them before tokenizing,
    /// ending with the prompt for the assistant's reply. A message whose content is a
    /// list of parts keeps its text parts, joined.
    pub fn render(&self, messages: &[Value]) -> Result<String, Error> {
        let messages: Vec<Value> = messages.iter().map(text_only).collect();
        self.environment
            .get_template(TEMPLATE_NAME)?
            .render(minijinja::context! {
                messages => minijinja::Value::from(minijinja::value::Serde(&messages)),
                add_generation_prompt => true,
                bos_token => &self.bos_token,
                eos_token => &self.eos_token,
            })
    }
}

/// A [`TokenCounter`] that counts a chat request's input as `template` renders its
/// messages; other requests (no `messages` in the body, or a template that fails on
/// them) count their input text.
#[derive(Debug)]
pub struct ChatTemplateCounter {
    tokenizer: Tokenizer,
    template: ChatTemplate,
}

impl ChatTemplateCounter {
    /// Counts with `tokenizer`, rendering chat messages with `template`.
    pub fn new(tokenizer: Tokenizer, template: ChatTemplate) -> Self {
        Self {
            tokenizer,
            template,
        }
    }
}

impl TokenCounter for ChatTemplateCounter {
    fn count_tokens(&self, text: &str) -> usize {
        self.tokenizer.count(text)
    }

    fn input_text_to_count<'a>(&self, input_text: &'a str, payload: &[u8]) -> Cow<'a, str> {
        let rendered = serde_json::from_slice::<Value>(payload)
            .ok()
            .and_then(|body| {
                let messages = body.get("messages")?.as_array()?.clone();
                self.template.render(&messages).ok()
            });
        rendered.map_or(Cow::Borrowed(input_text), Cow::Owned)
    }
}

/// A special token as `tokenizer_config.json` writes it: a string or `{"content": …}`.
fn special_token(value: &Value) -> String {
    value
        .as_str()
        .or_else(|| value["content"].as_str())
        .unwrap_or_default()
        .to_owned()
}

fn text_only(message: &Value) -> Value {
    let Some(parts) = message["content"].as_array() else {
        return message.clone();
    };
    let text: String = parts
        .iter()
        .filter_map(|part| part["text"].as_str())
        .collect();
    let mut message = message.clone();
    message["content"] = Value::String(text);
    message
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn named_templates_and_special_tokens() {
        let config = json!({
            "bos_token": {"content": "<s>"},
            "eos_token": "</s>",
            "chat_template": [
                {"name": "tool_use", "template": "tools"},
                {"name": "default", "template": "{{ bos_token }}{{ messages[0].content }}{{ eos_token }}"}
            ]
        });
        let template = ChatTemplate::from_config(&config).unwrap().unwrap();
        let parts = json!({"role": "user", "content": [
            {"type": "text", "text": "a"}, {"type": "image_url", "image_url": {"url": "x"}},
            {"type": "text", "text": "b"}
        ]});
        assert_eq!(template.render(&[parts]).unwrap(), "<s>ab</s>");
        assert!(ChatTemplate::from_config(&json!({})).unwrap().is_none());
    }

    #[test]
    fn raise_exception_fails_the_rendering() {
        let config = json!({"chat_template": "{{ raise_exception('no system role') }}"});
        let template = ChatTemplate::from_config(&config).unwrap().unwrap();
        assert!(template
            .render(&[])
            .unwrap_err()
            .to_string()
            .contains("no system role"));
    }
}
