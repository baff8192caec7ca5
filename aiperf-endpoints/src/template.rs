//! The `template` endpoint: a request body rendered from the user's Jinja template.

use std::path::Path;

use aiperf_core::conversation::Turn;
use aiperf_core::{
    ApiKeyHeader, BuiltRequest, Endpoint, EndpointError, EndpointInfo, ParsedExchange, RawExchange,
    RequestInput,
};
use minijinja::value::Kwargs;
use minijinja::{Environment, ErrorKind, UndefinedBehavior};
use serde_json::{json, Value};

use crate::payload::{current_turn, finish, model, texts, UsageChunk};
use crate::response::parse_with;
use crate::response_field::{FieldPath, ResponseFieldFormat, RESPONSE_FIELD_KEY};
use crate::EndpointOptions;

const INFO: EndpointInfo = EndpointInfo {
    name: "template",
    // No API of its own: the URL (or `--endpoint`) says where requests go.
    default_path: "",
    streaming_path: None,
    supports_streaming: true,
    produces_tokens: true,
    tokenizes_input: true,
    takes_rankings: false,
    api_key_header: ApiKeyHeader::Bearer,
};

/// The `--extra-inputs` key that gives the template: a named template, a file path, or
/// the template text itself.
pub const PAYLOAD_TEMPLATE_KEY: &str = "payload_template";

/// Templates known by name: `nv-embedqa` sends the texts as NVIDIA's embedding QA models
/// take them.
pub const NAMED_TEMPLATES: &[(&str, &str)] = &[("nv-embedqa", r#"{"text": {{ texts|tojson }}}"#)];

/// The name the template is compiled under (shown in errors; no extension, so nothing is
/// escaped automatically, as in Jinja2).
const TEMPLATE_NAME: &str = "payload_template";

/// A body rendered from a Jinja template (`--extra-inputs payload_template:<template>`)
/// with [`minijinja`], for APIs no built-in format speaks.
///
/// The template is [`PAYLOAD_TEMPLATE_KEY`]'s value in `--extra-inputs`: a name from
/// [`NAMED_TEMPLATES`], else the path of a file holding it, else the template itself. It
/// sees these variables (absent values are `none`; using an unknown variable is an error):
///
/// | variable | value |
/// | --- | --- |
/// | `text`, `texts` | the current turn's first non-empty text; all of them |
/// | `image`, `images`, `audio`, `audios`, `video`, `videos` | the turn's media, first and all |
/// | `query`, `queries` | the first text; a list of it (rankings datasets put the query first) |
/// | `passage`, `passages` | the texts after the first: the first of them; all of them |
/// | `model`, `max_tokens`, `stream` | the turn's model (else the primary one), its output length, whether streaming |
/// | `role`, `system_message`, `user_context_message` | the turn's role (`user` when unset); the conversation's prompts |
/// | `turn`, `turns` | the current turn and every turn sent, as objects with the fields above (`texts`, `images`, …) |
///
/// The rendering must be a JSON object; the other `--extra-inputs` and then the turn's
/// `extra` are merged over it. Errors in the template (syntax, unknown variables, a
/// non-JSON result) fail the request with an [`EndpointError`] naming the template's
/// line; [`TemplateEndpoint::check`] finds the ones known before any request.
///
/// Responses, streamed or whole: the text is at [`RESPONSE_FIELD_KEY`] when given
/// (`a.b[0].c`, a JMESPath of field names and indices, or a JSON pointer `/a/b/0/c`; a
/// string is text, any other non-empty value is non-text data), else found automatically:
/// embeddings (`data`, `embeddings`), rankings (`rankings`, `results`), a text field
/// (`text`, `content`, `response`, `output`, `result`, `generated_text`), then OpenAI
/// `choices[0]` (`text`, `message.content`, `delta.content`; `reasoning_content` is
/// reasoning). `usage` is read when present.
#[derive(Debug)]
pub struct TemplateEndpoint {
    options: EndpointOptions,
    template: Result<Environment<'static>, EndpointError>,
    response_field: Result<Option<FieldPath>, EndpointError>,
}

impl TemplateEndpoint {
    /// A template endpoint with these options; the template and response field are taken
    /// out of `options.extra_inputs`. Problems with them are reported by [`check`] and by
    /// every [`build`](Endpoint::build).
    ///
    /// [`check`]: TemplateEndpoint::check
    pub fn new(mut options: EndpointOptions) -> Self {
        let template = options.extra_inputs.shift_remove(PAYLOAD_TEMPLATE_KEY);
        let field = options.extra_inputs.shift_remove(RESPONSE_FIELD_KEY);
        Self {
            options,
            template: compile(template.as_ref()),
            response_field: match field {
                None => Ok(None),
                Some(Value::String(path)) => FieldPath::parse(&path).map(Some).map_err(error),
                Some(other) => Err(error(format!(
                    "{RESPONSE_FIELD_KEY} must be a string, got {other}"
                ))),
            },
        }
    }

    /// Whether the template and response field are usable (the template compiles).
    pub fn check(&self) -> Result<(), EndpointError> {
        self.template.as_ref().map_err(Clone::clone)?;
        self.response_field.as_ref().map_err(Clone::clone)?;
        Ok(())
    }
}

impl Endpoint for TemplateEndpoint {
    fn info(&self) -> &EndpointInfo {
        &INFO
    }

    fn build(&self, input: &RequestInput<'_>) -> Result<BuiltRequest, EndpointError> {
        self.check()?;
        let environment = self.template.as_ref().map_err(Clone::clone)?;
        let turn = current_turn(INFO.name, input)?;
        let template = environment
            .get_template(TEMPLATE_NAME)
            .map_err(template_error)?;
        let context = minijinja::Value::from(minijinja::value::Serde(variables(input, turn)));
        let rendered = template.render(context).map_err(template_error)?;
        let body = match serde_json::from_str::<Value>(&rendered) {
            Ok(Value::Object(body)) => body,
            Ok(other) => {
                return Err(error(format!(
                    "the payload template must render a JSON object, got {other}"
                )))
            }
            Err(e) => {
                return Err(error(format!(
                    "the payload template did not render JSON ({e}): {rendered}"
                )))
            }
        };
        Ok(finish(
            body,
            &self.options,
            turn,
            input.streaming,
            UsageChunk::Never,
        ))
    }

    fn parse(&self, exchange: &RawExchange) -> ParsedExchange {
        let field = self.response_field.as_ref().ok().and_then(Option::as_ref);
        parse_with(exchange, ResponseFieldFormat::new(field))
    }
}

/// The compiled template named by `source` (see [`TemplateEndpoint`]).
fn compile(source: Option<&Value>) -> Result<Environment<'static>, EndpointError> {
    let source = match source {
        Some(Value::String(source)) => source,
        Some(other) => {
            return Err(error(format!(
                "{PAYLOAD_TEMPLATE_KEY} must be a string, got {other}"
            )))
        }
        None => {
            return Err(error(format!(
                "no template: give one with --extra-inputs {PAYLOAD_TEMPLATE_KEY}:<name, file \
                 or template> (names: {})",
                NAMED_TEMPLATES
                    .iter()
                    .map(|(name, _)| *name)
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    };
    let text = match NAMED_TEMPLATES.iter().find(|(name, _)| name == source) {
        Some((_, template)) => (*template).to_owned(),
        None if Path::new(source).is_file() => std::fs::read_to_string(source)
            .map_err(|e| error(format!("cannot read the template file {source}: {e}")))?,
        None => source.clone(),
    };
    let mut environment = Environment::new();
    // A misspelt variable should fail loudly, not send an empty field.
    environment.set_undefined_behavior(UndefinedBehavior::Strict);
    environment.add_filter("tojson", strict_tojson);
    environment
        .add_template_owned(TEMPLATE_NAME, text)
        .map_err(template_error)?;
    Ok(environment)
}

/// Jinja's `tojson`, except that an undefined value is an error rather than `null`: strict
/// mode alone lets `{{ misspelt|tojson }}` through, and that is how payloads are written.
fn strict_tojson(
    value: &minijinja::Value,
    indent: Option<minijinja::Value>,
    args: Kwargs,
) -> Result<minijinja::Value, minijinja::Error> {
    if value.is_undefined() {
        return Err(minijinja::Error::new(
            ErrorKind::UndefinedError,
            "tojson of an undefined value",
        ));
    }
    minijinja::filters::tojson(value, indent, args)
}

/// The variables a template sees (see [`TemplateEndpoint`]).
fn variables(input: &RequestInput<'_>, turn: &Turn) -> Value {
    let all: Vec<&str> = texts(turn).collect();
    let first = |items: &[String]| items.iter().find(|s| !s.is_empty()).cloned();
    let passages = all.get(1..).unwrap_or_default();
    json!({
        "text": all.first(),
        "texts": all,
        "image": first(&turn.images),
        "images": turn.images,
        "audio": first(&turn.audios),
        "audios": turn.audios,
        "video": first(&turn.videos),
        "videos": turn.videos,
        "query": all.first(),
        "queries": all.first().into_iter().collect::<Vec<_>>(),
        "passage": passages.first(),
        "passages": passages,
        "model": model(input, turn),
        "max_tokens": turn.max_tokens,
        "stream": input.streaming,
        "role": turn.role.as_deref().unwrap_or("user"),
        "system_message": input.system_message,
        "user_context_message": input.user_context_message,
        "turn": turn,
        "turns": input.turns,
    })
}

/// A template problem, with the template's line when minijinja knows it.
fn template_error(e: minijinja::Error) -> EndpointError {
    let what = match e.detail() {
        Some(detail) => format!("{}: {detail}", e.kind()),
        None => e.kind().to_string(),
    };
    match e.line() {
        Some(line) => error(format!("payload template line {line}: {what}")),
        None => error(format!("payload template: {what}")),
    }
}

/// An error of this endpoint.
fn error(reason: impl Into<String>) -> EndpointError {
    EndpointError {
        endpoint: INFO.name,
        reason: reason.into(),
    }
}

#[cfg(test)]
mod tests;
