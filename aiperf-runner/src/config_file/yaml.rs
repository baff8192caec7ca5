//! The YAML of a configuration file as a tree whose every node knows its line, built
//! from the parser's events, with `${VAR}` and `${VAR:default}` replaced from the
//! environment in scalars (as the Python AIPerf 0.13 does).

use std::borrow::Cow;

use saphyr_parser::{Event, Parser, ScalarStyle, Span};

/// One node of the document.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Node {
    /// The 1-based line the node starts on.
    pub(super) line: usize,
    pub(super) value: Value,
}

/// What a node holds.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Value {
    /// `~`, `null` or nothing.
    Null,
    /// A scalar as written; `quoted` when it was quoted or a block (always a string).
    Scalar {
        text: String,
        quoted: bool,
    },
    Seq(Vec<Node>),
    /// Keys in file order, each with the line it is on.
    Map(Vec<Entry>),
}

/// A key of a mapping and its value.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Entry {
    pub(super) key: String,
    pub(super) line: usize,
    pub(super) value: Node,
}

/// A syntax error: its line and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct SyntaxError {
    pub(super) line: usize,
    pub(super) message: String,
}

/// Parses the first document of `text` (an empty file is `Null`).
pub(super) fn parse(text: &str) -> Result<Node, SyntaxError> {
    let mut events = Events {
        parser: Parser::new_from_str(text),
    };
    loop {
        let (event, span) = events.next()?;
        match event {
            Event::StreamStart | Event::DocumentStart(_) | Event::Nothing => {}
            Event::StreamEnd | Event::DocumentEnd => {
                return Ok(Node {
                    line: span.start.line(),
                    value: Value::Null,
                })
            }
            event => return events.node(event, span),
        }
    }
}

struct Events<'a> {
    parser: Parser<'a, saphyr_parser::StrInput<'a>>,
}

impl<'a> Events<'a> {
    fn next(&mut self) -> Result<(Event<'a>, Span), SyntaxError> {
        match self.parser.next() {
            Some(Ok(event)) => Ok(event),
            Some(Err(error)) => Err(SyntaxError {
                line: error.marker().line(),
                message: error.info().to_owned(),
            }),
            None => Err(SyntaxError {
                line: 0,
                message: "unexpected end of the file".into(),
            }),
        }
    }

    fn node(&mut self, event: Event<'a>, span: Span) -> Result<Node, SyntaxError> {
        let line = span.start.line();
        let value = match event {
            Event::Scalar(text, style, _, _) => scalar(&text, style, line)?,
            Event::SequenceStart(..) => {
                let mut items = Vec::new();
                loop {
                    let (event, span) = self.next()?;
                    if event == Event::SequenceEnd {
                        break;
                    }
                    items.push(self.node(event, span)?);
                }
                Value::Seq(items)
            }
            Event::MappingStart(..) => {
                let mut entries: Vec<Entry> = Vec::new();
                loop {
                    let (event, span) = self.next()?;
                    if event == Event::MappingEnd {
                        break;
                    }
                    let key_line = span.start.line();
                    let key = match self.node(event, span)?.value {
                        Value::Scalar { text, .. } => text,
                        Value::Null => String::new(),
                        _ => {
                            return Err(SyntaxError {
                                line: key_line,
                                message: "a key must be a plain word".into(),
                            })
                        }
                    };
                    if entries.iter().any(|entry| entry.key == key) {
                        return Err(SyntaxError {
                            line: key_line,
                            message: format!("{key}: key given twice"),
                        });
                    }
                    let (event, span) = self.next()?;
                    let value = self.node(event, span)?;
                    entries.push(Entry {
                        key,
                        line: key_line,
                        value,
                    });
                }
                Value::Map(entries)
            }
            Event::Alias(_) => {
                return Err(SyntaxError {
                    line,
                    message: "YAML aliases (*name) are not supported in configuration files".into(),
                })
            }
            _ => {
                return Err(SyntaxError {
                    line,
                    message: "unexpected YAML structure".into(),
                })
            }
        };
        Ok(Node { line, value })
    }
}

fn scalar(text: &str, style: ScalarStyle, line: usize) -> Result<Value, SyntaxError> {
    let plain = style == ScalarStyle::Plain;
    if plain && matches!(text, "" | "~" | "null" | "Null" | "NULL") {
        return Ok(Value::Null);
    }
    let text = substitute_env(text).map_err(|message| SyntaxError { line, message })?;
    Ok(Value::Scalar {
        text: text.into_owned(),
        quoted: !plain,
    })
}

/// `${NAME}` → the variable's value, `${NAME:default}` → its value or `default`.
fn substitute_env(text: &str) -> Result<Cow<'_, str>, String> {
    if !text.contains("${") {
        return Ok(Cow::Borrowed(text));
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unclosed `${{` in {text:?}"))?;
        let (name, default) = match after[..end].split_once(':') {
            Some((name, default)) => (name, Some(default)),
            None => (&after[..end], None),
        };
        match (std::env::var(name), default) {
            (Ok(value), _) => out.push_str(&value),
            (Err(_), Some(default)) => out.push_str(default),
            (Err(_), None) => {
                return Err(format!(
                    "environment variable {name} is not set and `${{{name}}}` gives no default"
                ))
            }
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(Cow::Owned(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(value: &Value) -> &str {
        match value {
            Value::Scalar { text, .. } => text,
            other => panic!("not a scalar: {other:?}"),
        }
    }

    #[test]
    fn keys_know_their_lines() {
        let node = parse("a: 1\nb:\n  c: 'x'\n  d: [1, 2]\n").unwrap();
        let Value::Map(entries) = &node.value else {
            panic!("a map")
        };
        assert_eq!(entries[0].key, "a");
        assert_eq!(entries[0].line, 1);
        let Value::Map(inner) = &entries[1].value.value else {
            panic!("a map")
        };
        assert_eq!((inner[0].key.as_str(), inner[0].line), ("c", 3));
        assert_eq!(
            inner[0].value.value,
            Value::Scalar {
                text: "x".into(),
                quoted: true
            }
        );
        assert_eq!((inner[1].key.as_str(), inner[1].line), ("d", 4));
    }

    #[test]
    fn environment_variables_are_substituted() {
        let node = parse("a: ${AIPERF_TEST_SURELY_UNSET:fallback}/x\n").unwrap();
        let Value::Map(entries) = &node.value else {
            panic!("a map")
        };
        assert_eq!(text(&entries[0].value.value), "fallback/x");
        let error = parse("a: 1\nb: ${AIPERF_TEST_SURELY_UNSET}\n").unwrap_err();
        assert_eq!(error.line, 2);
        assert_eq!(
            error.message,
            "environment variable AIPERF_TEST_SURELY_UNSET is not set and \
             `${AIPERF_TEST_SURELY_UNSET}` gives no default"
        );
    }

    #[test]
    fn duplicate_keys_and_syntax_errors_have_lines() {
        assert_eq!(parse("a: 1\na: 2\n").unwrap_err().line, 2);
        assert_eq!(parse("a: 1\nb: [1, 2\n").unwrap_err().line, 3);
    }
}
