//! Reading the responses of the `template` and `raw` endpoints, whose APIs are unknown:
//! the value at a user-given path (`--extra-inputs response_field:…`), or the first of the
//! usual fields. Both walk the payload with serde and keep only the one value they
//! want, so a streamed chunk never becomes a JSON tree.

use std::borrow::Cow;
use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::response::{Format, Piece, Unreadable};

/// The `--extra-inputs` key that says where the response's text is, e.g.
/// `choices[0].message.content` or `/choices/0/message/content` (`template` and `raw`
/// endpoints).
pub const RESPONSE_FIELD_KEY: &str = "response_field";

/// One step of a [`FieldPath`].
#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    /// An object's field.
    Key(String),
    /// An array's element.
    Index(usize),
    /// A JSON pointer's number: an element of an array, or a field of an object.
    KeyOrIndex(String, usize),
}

impl Step {
    fn key(&self) -> Option<&str> {
        match self {
            Step::Key(key) | Step::KeyOrIndex(key, _) => Some(key),
            Step::Index(_) => None,
        }
    }

    fn index(&self) -> Option<usize> {
        match self {
            Step::Index(index) | Step::KeyOrIndex(_, index) => Some(*index),
            Step::Key(_) => None,
        }
    }
}

/// Where the text is in a response: `choices[0].message.content` or a JSON pointer
/// `/choices/0/message/content`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldPath(Vec<Step>);

impl FieldPath {
    /// Parses a dotted path with `[n]` indices, or a JSON pointer (starting with `/`).
    pub(crate) fn parse(path: &str) -> Result<Self, String> {
        let invalid = || format!("response_field {path:?} is not a path like a.b[0].c or /a/b/0/c");
        let path = path.trim();
        if let Some(pointer) = path.strip_prefix('/') {
            let steps = pointer
                .split('/')
                .map(|token| {
                    let key = token.replace("~1", "/").replace("~0", "~");
                    match key.parse::<usize>() {
                        Ok(index) => Step::KeyOrIndex(key, index),
                        Err(_) => Step::Key(key),
                    }
                })
                .collect();
            return Ok(Self(steps));
        }
        let mut steps = Vec::new();
        for part in path.split('.') {
            let (name, mut indices) = part.split_once('[').map_or((part, ""), |(name, rest)| {
                (name, &part[name.len()..][..=rest.len()])
            });
            if name.is_empty() && indices.is_empty() {
                return Err(invalid());
            }
            if !name.is_empty() {
                steps.push(Step::Key(name.to_owned()));
            }
            while let Some(rest) = indices.strip_prefix('[') {
                let (number, after) = rest.split_once(']').ok_or_else(invalid)?;
                steps.push(Step::Index(number.trim().parse().map_err(|_| invalid())?));
                indices = after;
            }
            if !indices.is_empty() {
                return Err(invalid());
            }
        }
        Ok(Self(steps))
    }
}

/// What a field held, as far as the benchmark cares.
#[derive(Debug, Default, PartialEq)]
enum Found<'a> {
    /// Missing, `null`, `""`, `[]` or `{}`.
    #[default]
    Nothing,
    /// A non-empty string.
    Text(Cow<'a, str>),
    /// Anything else: numbers, non-empty arrays or objects (embeddings, rankings, …).
    Data,
}

impl Found<'_> {
    fn is_nothing(&self) -> bool {
        *self == Found::Nothing
    }

    /// Adds this value to `piece`: text as text, other data as data.
    fn add_to(self, piece: &mut Piece, reasoning: bool) {
        match self {
            Found::Text(text) if reasoning => piece.reasoning.push_str(&text),
            Found::Text(text) => piece.text.push_str(&text),
            Found::Data => piece.has_other_data = true,
            Found::Nothing => {}
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Found<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Walk(&[]))
    }
}

/// Follows the remaining steps of a path through one value.
#[derive(Clone, Copy)]
struct Walk<'p>(&'p [Step]);

impl<'de> DeserializeSeed<'de> for Walk<'_> {
    type Value = Found<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Found<'de>, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Walk<'_> {
    type Value = Found<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, value: &'de str) -> Result<Found<'de>, E> {
        Ok(self.leaf(|| Found::Text(Cow::Borrowed(value)), value.is_empty()))
    }

    fn visit_str<E>(self, value: &str) -> Result<Found<'de>, E> {
        Ok(self.leaf(
            || Found::Text(Cow::Owned(value.to_owned())),
            value.is_empty(),
        ))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Found<'de>, E> {
        Ok(self.leaf(|| Found::Data, false))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Found<'de>, E> {
        Ok(self.leaf(|| Found::Data, false))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Found<'de>, E> {
        Ok(self.leaf(|| Found::Data, false))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Found<'de>, E> {
        Ok(self.leaf(|| Found::Data, false))
    }

    fn visit_unit<E>(self) -> Result<Found<'de>, E> {
        Ok(Found::Nothing)
    }

    fn visit_none<E>(self) -> Result<Found<'de>, E> {
        Ok(Found::Nothing)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Found<'de>, A::Error> {
        let wanted = self.0.first().map(Step::index);
        let mut found = Found::Nothing;
        let mut index = 0;
        loop {
            let element = match wanted {
                // The value itself is wanted: any element makes it data.
                None => seq.next_element::<IgnoredAny>()?.map(|_| Found::Data),
                Some(Some(wanted)) if wanted == index => {
                    seq.next_element_seed(Walk(&self.0[1..]))?
                }
                Some(_) => seq.next_element::<IgnoredAny>()?.map(|_| Found::Nothing),
            };
            let Some(element) = element else {
                return Ok(found);
            };
            if found.is_nothing() {
                found = element;
            }
            index += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Found<'de>, A::Error> {
        let wanted = self.0.first().map(Step::key);
        let mut found = Found::Nothing;
        while let Some(key) = map.next_key::<Cow<'de, str>>()? {
            let element = match wanted {
                None => {
                    map.next_value::<IgnoredAny>()?;
                    Found::Data
                }
                Some(Some(wanted)) if wanted == key && found.is_nothing() => {
                    map.next_value_seed(Walk(&self.0[1..]))?
                }
                Some(_) => {
                    map.next_value::<IgnoredAny>()?;
                    Found::Nothing
                }
            };
            if found.is_nothing() {
                found = element;
            }
        }
        Ok(found)
    }
}

impl Walk<'_> {
    /// A scalar: what it is when the path ends here, nothing when it goes on.
    fn leaf<'a>(self, found: impl FnOnce() -> Found<'a>, empty: bool) -> Found<'a> {
        if self.0.is_empty() && !empty {
            found()
        } else {
            Found::Nothing
        }
    }
}

/// The fields auto-detection looks at, in order.
#[derive(Debug, Default, Deserialize)]
struct Usual<'a> {
    #[serde(borrow, default)]
    data: Found<'a>,
    #[serde(borrow, default)]
    embeddings: Found<'a>,
    #[serde(borrow, default)]
    rankings: Found<'a>,
    #[serde(borrow, default)]
    results: Found<'a>,
    #[serde(borrow, default)]
    text: Found<'a>,
    #[serde(borrow, default)]
    content: Found<'a>,
    #[serde(borrow, default)]
    response: Found<'a>,
    #[serde(borrow, default)]
    output: Found<'a>,
    #[serde(borrow, default)]
    result: Found<'a>,
    #[serde(borrow, default)]
    generated_text: Found<'a>,
    #[serde(borrow, default)]
    choices: Option<Vec<UsualChoice<'a>>>,
    #[serde(default)]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// An OpenAI choice: completions' `text`, chat's `message` or streamed `delta`.
#[derive(Debug, Default, Deserialize)]
struct UsualChoice<'a> {
    #[serde(borrow, default)]
    text: Found<'a>,
    #[serde(borrow, default)]
    message: Option<UsualMessage<'a>>,
    #[serde(borrow, default)]
    delta: Option<UsualMessage<'a>>,
}

/// A chat message or delta.
#[derive(Debug, Default, Deserialize)]
struct UsualMessage<'a> {
    #[serde(borrow, default)]
    content: Found<'a>,
    #[serde(borrow, default)]
    reasoning_content: Found<'a>,
}

/// The usage and error of a payload read through a [`FieldPath`].
#[derive(Debug, Deserialize)]
struct Envelope {
    #[serde(default)]
    usage: Option<Map<String, Value>>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// Reads a `template` or `raw` endpoint's payloads: through the [`FieldPath`] when there is one,
/// else through the usual fields.
pub(crate) struct ResponseFieldFormat<'p> {
    field: Option<&'p FieldPath>,
}

impl<'p> ResponseFieldFormat<'p> {
    /// A reader of the value at `field`, or of the usual fields.
    pub(crate) fn new(field: Option<&'p FieldPath>) -> Self {
        Self { field }
    }
}

impl Format for ResponseFieldFormat<'_> {
    fn read(&mut self, payload: &[u8]) -> Result<Piece, Unreadable> {
        let Some(FieldPath(steps)) = self.field else {
            return read_usual(payload);
        };
        let mut deserializer = serde_json::Deserializer::from_slice(payload);
        let found = Walk(steps).deserialize(&mut deserializer)?;
        deserializer.end()?;
        let envelope = serde_json::from_slice::<Envelope>(payload).ok();
        let mut piece = Piece::default();
        let is_nothing = found.is_nothing();
        found.add_to(&mut piece, false);
        if let Some(envelope) = envelope {
            piece.is_error = is_nothing && envelope.error.is_some();
            piece.usage = envelope.usage;
        }
        Ok(piece)
    }
}

/// Embeddings, rankings, a text field, then OpenAI choices: the first that has something.
fn read_usual(payload: &[u8]) -> Result<Piece, Unreadable> {
    let usual: Usual = serde_json::from_slice(payload)?;
    let mut piece = Piece {
        usage: usual.usage,
        ..Piece::default()
    };
    let fields = [
        usual.data,
        usual.embeddings,
        usual.rankings,
        usual.results,
        usual.text,
        usual.content,
        usual.response,
        usual.output,
        usual.result,
        usual.generated_text,
    ];
    if let Some(found) = fields.into_iter().find(|found| !found.is_nothing()) {
        found.add_to(&mut piece, false);
    } else if let Some(choice) = usual.choices.and_then(|choices| choices.into_iter().next()) {
        let message = choice.message.or(choice.delta).unwrap_or_default();
        choice.text.add_to(&mut piece, false);
        message.content.add_to(&mut piece, false);
        message.reasoning_content.add_to(&mut piece, true);
    } else {
        piece.is_error = usual.error.is_some();
    }
    Ok(piece)
}

#[cfg(test)]
mod tests;
