use super::*;

fn read(field: Option<&str>, payload: &str) -> (String, String, bool, Option<Value>) {
    let path = field.map(|f| FieldPath::parse(f).unwrap());
    let piece = ResponseFieldFormat::new(path.as_ref())
        .read(payload.as_bytes())
        .unwrap();
    (
        piece.text,
        piece.reasoning,
        piece.has_other_data,
        piece.usage.map(Value::Object),
    )
}

fn text(s: &str) -> (String, String, bool, Option<Value>) {
    (s.into(), String::new(), false, None)
}

fn data() -> (String, String, bool, Option<Value>) {
    (String::new(), String::new(), true, None)
}

#[test]
fn paths_parse_as_dotted_fields_with_indices_or_pointers() {
    use Step::*;
    assert_eq!(
        FieldPath::parse("choices[0].message.content").unwrap(),
        FieldPath(vec![
            Key("choices".into()),
            Index(0),
            Key("message".into()),
            Key("content".into())
        ])
    );
    assert_eq!(
        FieldPath::parse("outputs[1][2]").unwrap(),
        FieldPath(vec![Key("outputs".into()), Index(1), Index(2)])
    );
    assert_eq!(
        FieldPath::parse("/a~1b/0").unwrap(),
        FieldPath(vec![Key("a/b".into()), KeyOrIndex("0".into(), 0)])
    );
    for bad in ["a..b", "a[x]", "a[0", "a[0]b"] {
        assert!(FieldPath::parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn a_path_picks_one_value_and_skips_the_rest() {
    let payload = r#"{"id":"x","outputs":[{"text":"no"},{"text":"yes \"quoted\"","n":[1,2]}],"usage":{"prompt_tokens":2}}"#;
    let (t, _, d, usage) = read(Some("outputs[1].text"), payload);
    assert_eq!((t.as_str(), d), ("yes \"quoted\"", false));
    assert_eq!(usage, Some(serde_json::json!({"prompt_tokens": 2})));
    assert_eq!(read(Some("/outputs/1/text"), payload).0, "yes \"quoted\"");
    assert_eq!(
        read(Some("outputs[1].n"), payload),
        (String::new(), String::new(), true, usage.clone())
    );
    assert_eq!(read(Some("outputs[5].text"), payload).0, "");
    assert_eq!(
        read(Some("missing"), r#"{"a":1}"#),
        (String::new(), String::new(), false, None)
    );
    // A pointer's number is a field name inside an object.
    assert_eq!(read(Some("/m/0"), r#"{"m":{"0":"zero"}}"#).0, "zero");
}

#[test]
fn the_usual_fields_in_order() {
    assert_eq!(
        read(None, r#"{"data":[{"embedding":[0.1]}],"text":"t"}"#),
        data()
    );
    assert_eq!(
        read(None, r#"{"rankings":[{"index":0,"logit":1.0}]}"#),
        data()
    );
    assert_eq!(read(None, r#"{"data":[],"text":"hello"}"#), text("hello"));
    assert_eq!(read(None, r#"{"generated_text":"g"}"#), text("g"));
    assert_eq!(read(None, r#"{"choices":[{"text":"c"}]}"#), text("c"));
    assert_eq!(
        read(
            None,
            r#"{"choices":[{"delta":{"content":"d","reasoning_content":"r"}}]}"#
        ),
        ("d".into(), "r".into(), false, None)
    );
    assert_eq!(
        read(
            None,
            r#"{"choices":[{"message":{"content":"m"}}],"usage":{"completion_tokens":1}}"#
        ),
        (
            "m".into(),
            String::new(),
            false,
            Some(serde_json::json!({"completion_tokens": 1}))
        )
    );
    assert_eq!(read(None, r#"{"object":"other"}"#), text(""));
}

#[test]
fn error_objects_are_flagged() {
    let piece = ResponseFieldFormat::new(None)
        .read(br#"{"error":{"message":"bad"}}"#)
        .unwrap();
    assert!(piece.is_error);
    let path = FieldPath::parse("text").unwrap();
    let piece = ResponseFieldFormat::new(Some(&path))
        .read(br#"{"error":{"message":"bad"}}"#)
        .unwrap();
    assert!(piece.is_error);
}
