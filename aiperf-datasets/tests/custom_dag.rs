//! `dag_jsonl`: sessions that start one another become root conversations carrying
//! their children (spawns joined by a later turn, forks continuing the history); every
//! malformed line is an error naming its line and field.
#![allow(clippy::unwrap_used)]

use aiperf_core::config::CustomDatasetType;
use aiperf_core::{BranchMode, ContextMode, Conversation};
use aiperf_datasets::{detect_dataset_type, load_custom_dataset, CustomDatasetOptions, Tokenizer};

fn write(dir: &tempfile::TempDir, lines: &[&str]) -> std::path::PathBuf {
    let path = dir.path().join("dag.jsonl");
    std::fs::write(&path, lines.join("\n")).unwrap();
    path
}

fn load(lines: &[&str]) -> Result<Vec<Conversation>, String> {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, lines);
    let options = CustomDatasetOptions {
        dataset_type: Some(CustomDatasetType::DagJsonl),
        ..CustomDatasetOptions::default()
    };
    load_custom_dataset(&path, &options, &Tokenizer::builtin())
        .map(|loaded| loaded.conversations)
        .map_err(|e| e.to_string().replace(&path.display().to_string(), "F"))
}

/// A branch as (mode, child session ids, join turn).
type BranchSummary<'a> = (BranchMode, Vec<&'a str>, Option<usize>);

const USER: &str = r#"[{"role": "user", "content": "go"}]"#;

fn line(id: &str, turns: &[&str]) -> String {
    format!(
        r#"{{"session_id": "{id}", "turns": [{}]}}"#,
        turns.join(", ")
    )
}

fn turn(extra: &str) -> String {
    if extra.is_empty() {
        format!(r#"{{"messages": {USER}}}"#)
    } else {
        format!(r#"{{"messages": {USER}, {extra}}}"#)
    }
}

#[test]
fn spawns_join_the_next_turn_and_forks_continue_the_parent() {
    let lines = [
        line(
            "root",
            &[
                &turn(r#""spawns": ["a", "b"], "delay": 5"#),
                &turn(r#""spawns": [{"children": ["c"], "join_at": 3}]"#),
                &turn(r#""forks": [{"child": "side", "background": true}]"#),
                &turn(
                    r#""forks": ["end"], "max_tokens": 9, "model": "m2", "extra": {"temperature": 0}"#,
                ),
            ],
        ),
        line("a", &[&turn("")]),
        line("b", &[&turn(""), &turn("")]),
        line("c", &[&turn("")]),
        line("side", &[&turn("")]),
        line("end", &[&turn("")]),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let roots = load(&lines).unwrap();
    assert_eq!(roots.len(), 1, "only the session nobody starts is a root");
    let root = &roots[0];
    assert_eq!(root.session_id, "root");
    assert_eq!(root.context_mode, ContextMode::DeltasWithoutResponses);
    let summary: Vec<Vec<BranchSummary>> = root
        .turns
        .iter()
        .map(|t| {
            t.branches
                .iter()
                .map(|b| {
                    let ids = b.children.iter().map(|c| c.session_id.as_str()).collect();
                    (b.mode, ids, b.join_at)
                })
                .collect()
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            vec![(BranchMode::Spawn, vec!["a", "b"], Some(1))],
            vec![(BranchMode::Spawn, vec!["c"], Some(3))],
            vec![(BranchMode::Fork, vec!["side"], None)],
            vec![(BranchMode::Fork, vec!["end"], None)],
        ]
    );
    assert_eq!(root.turns[0].delay_ms, Some(5.0));
    assert_eq!(root.turns[0].branches[0].children[1].turns.len(), 2);
    let last = &root.turns[3];
    assert_eq!(
        (last.max_tokens, last.model.as_deref()),
        (Some(9), Some("m2"))
    );
    assert_eq!(
        serde_json::Value::Object(last.extra.clone().unwrap()),
        serde_json::json!({"temperature": 0})
    );
    assert_eq!(
        last.raw_messages.as_deref().unwrap(),
        [serde_json::json!({"role": "user", "content": "go"})]
    );
}

#[test]
fn a_spawn_from_the_last_turn_is_never_joined_and_pre_session_spawns_start_first() {
    let lines = [
        r#"{"session_id": "p", "pre_session_spawns": ["early"], "turns": [{"messages": [{"role": "user", "content": "x"}], "spawns": ["late"]}]}"#,
        r#"{"session_id": "early", "turns": [{"messages": [{"role": "user", "content": "e"}]}]}"#,
        r#"{"session_id": "late", "context_mode": "message_array_with_responses", "turns": [{"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "l"}]}]}"#,
    ];
    let roots = load(&lines).unwrap();
    assert_eq!(roots.len(), 1);
    assert_eq!(roots[0].pre_session_spawns[0].session_id, "early");
    let late = &roots[0].turns[0].branches[0];
    assert_eq!(late.join_at, None);
    assert_eq!(
        late.children[0].context_mode,
        ContextMode::MessageArrayWithResponses
    );
}

#[test]
fn a_dag_file_is_detected_by_its_turns_and_a_multi_turn_file_still_is_one() {
    let dir = tempfile::tempdir().unwrap();
    let dag = write(&dir, &[&line("s", &[&turn("")])]);
    assert_eq!(
        detect_dataset_type(&dag).unwrap(),
        CustomDatasetType::DagJsonl
    );
    let path = dir.path().join("multi.jsonl");
    std::fs::write(&path, r#"{"session_id": "s", "turns": [{"text": "hi"}]}"#).unwrap();
    assert_eq!(
        detect_dataset_type(&path).unwrap(),
        CustomDatasetType::MultiTurn
    );
}

#[test]
fn each_malformed_line_names_its_line_and_field() {
    let ok = line("ok", &[&turn("")]);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            vec![ok.clone(), line("p", &[&turn(r#""spawns": ["ghost"]"#)])],
            "F:2: turns[0].spawns[0]: unknown session id 'ghost': no line has it",
        ),
        (
            vec![
                line("a", &[&turn(r#""spawns": ["b"]"#)]),
                line("b", &[&turn(r#""forks": ["a"]"#)]),
            ],
            "F:2: turns[0].forks[0]: cycle: a -> b -> a",
        ),
        (
            vec![line("a", &[&turn(r#""spawns": ["a"]"#)])],
            "F:1: turns[0].spawns[0]: cycle: a -> a",
        ),
        (
            vec![ok.clone(), ok.clone()],
            "F:2: session_id: duplicate session_id 'ok' (first on line 1)",
        ),
        (
            vec![
                line("p", &[&turn(r#""forks": ["ok"]"#), &turn("")]),
                ok.clone(),
            ],
            "F:1: turns[0].forks: a fork that ends the parent is only allowed on its last \
             turn; use {\"child\": ID, \"background\": true} to let the parent go on",
        ),
        (
            vec![
                line(
                    "p",
                    &[&turn(r#""spawns": [{"children": ["ok"], "join_at": 0}]"#)],
                ),
                ok.clone(),
            ],
            "F:1: turns[0].spawns[0].join_at: 0 must be after the spawning turn (0) and \
             before the conversation's end (1 turns)",
        ),
        (
            vec![line("p", &[&turn(r#""spawns": ["ok", "ok"]"#)]), ok.clone()],
            "F:1: turns[0].spawns[1]: 'ok' is started twice by this turn",
        ),
        (
            vec![
                line("p", &[&turn(r#""forks": ["ok"]"#)]),
                line("q", &[&turn(r#""forks": ["ok"]"#)]),
                ok.clone(),
            ],
            "F:2: turns[0].forks[0]: 'ok' is already forked by 'p' (line 1); a fork \
             continues one parent's history, so it has one parent",
        ),
        (
            vec![line(
                "p",
                &[
                    &turn(""),
                    r#"{"messages": [{"role": "system", "content": "s"}]}"#,
                ],
            )],
            "F:1: turns[1].messages[0]: a system message must open the request: only the \
             first message of a root session's first turn may be one",
        ),
        (
            vec![line("p", &[r#"{"messages": [], "forks": []}"#])],
            "F:1: turns[0].messages: must be a non-empty list",
        ),
        (
            vec![line("p", &[&turn(r#""temperature": 0.5"#)])],
            "F:1: turns[0].temperature: unknown key (expected one of: messages, model, \
             max_tokens, tools, extra, forks, spawns, delay)",
        ),
        (
            vec![line("p", &[&turn(r#""max_tokens": true"#)])],
            "F:1: turns[0].max_tokens: expected a positive integer, got a boolean",
        ),
        (
            vec![
                r#"{"session_id": "o", "orchestrator": true, "spawns": ["a"], "turns": []}"#
                    .to_owned(),
            ],
            "F:1: orchestrator: orchestrator conversations (request-less spines of rounds) \
             are not supported; start sessions from a turn's spawns or forks",
        ),
        (
            vec![ok.clone(), "{not json".to_owned()],
            "F:2: invalid JSON at column 2: key must be a string at line 1 column 2",
        ),
    ];
    for (lines, expected) in cases {
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        assert_eq!(load(&lines).unwrap_err(), expected, "{lines:?}");
    }
}

#[test]
fn a_child_two_parents_start_is_one_shared_session() {
    let lines = [
        line("p1", &[&turn(r#""spawns": ["shared"]"#)]),
        line("p2", &[&turn(r#""spawns": ["shared"]"#)]),
        line("shared", &[&turn(""), &turn("")]),
    ];
    let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
    let roots = load(&lines).unwrap();
    let child = |root: &Conversation| std::sync::Arc::clone(&root.turns[0].branches[0].children[0]);
    let (first, second) = (child(&roots[0]), child(&roots[1]));
    assert_eq!(first.session_id, "shared");
    assert_eq!(first.turns.len(), 2);
    assert!(std::sync::Arc::ptr_eq(&first, &second));
}
