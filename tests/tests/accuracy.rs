//! Accuracy mode end to end: the built binary asks a benchmark's questions from a JSONL
//! fixture (or a Hugging Face cache) of the mock server, grades the replies, and writes the
//! accuracy artifacts. The mock's accuracy mode answers right as its seeded rule says, so
//! the exact accuracy every artifact must report is known.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::path::Path;

use aiperf_mock_server::{answers_correctly, AccuracyConfig, MockConfig, MockServer};
use common::{args, assert_exit, profile, profile_offline, read_json, read_jsonl, recorded_body};
use serde_json::{json, Value};

const VALIDATION: &str = r#"{"activity_label": "Baking", "ctx": "She mixes the flour", "endings": ["and eggs.", "and sand.", "into tea.", "with glue."], "label": "0"}
{"activity_label": "Baking", "ctx": "He opens the oven", "endings": ["and sings.", "and checks the cake.", "and leaves.", "to sleep."], "label": "1"}
{"activity_label": "Rowing", "ctx": "The crew pulls", "endings": ["the oars.", "a car.", "the rug.", "a tooth."], "label": "0"}
"#;

fn run_args(url: &str, dir: &Path, rest: &str) -> Vec<String> {
    args(&format!(
        "-m mock-model --url {url} --endpoint-type chat --artifact-dir {} --random-seed 5 {rest}",
        dir.join("artifacts").display()
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hellaswag_asks_every_question_once_and_grades_each_reply() {
    let dir = tempfile::tempdir().unwrap();
    let rows = dir.path().join("hellaswag");
    std::fs::create_dir_all(&rows).unwrap();
    std::fs::write(rows.join("validation.jsonl"), VALIDATION).unwrap();
    let record = dir.path().join("requests.jsonl");
    let server = MockServer::start(MockConfig {
        record_requests: Some(record.clone()),
        ..MockConfig::with_timing(0.0, 0.0)
    })
    .await
    .unwrap();
    let argv = run_args(
        &server.url(),
        dir.path(),
        &format!(
            "--accuracy-benchmark hellaswag --accuracy-n-shots 0 --input-file {}",
            rows.display()
        ),
    );
    let output = profile(argv).await;
    assert_exit(&output, 0);
    server.shutdown().await;

    // one request per question, with 0.13's prompt, budget and no stop sequence
    let requests = read_jsonl(&record);
    assert_eq!(requests.len(), 3);
    let mut bodies: Vec<Value> = requests.iter().map(recorded_body).collect();
    bodies.sort_by_key(|b| b["messages"][0]["content"].as_str().unwrap().to_owned());
    assert_eq!(
        bodies[0]["messages"],
        json!([{"role": "user", "content":
            "The following are multiple choice questions (with answers) are sentence \
             completion problems about Baking.\n\nHe opens the oven\nA. and sings.\nB. and \
             checks the cake.\nC. and leaves.\nD. to sleep.\nAnswer:\n\nOutput 'A', 'B', \
             'C', or 'D'. Full answer not needed."}])
    );
    assert_eq!(bodies[0]["max_completion_tokens"], json!(5));

    // the mock's filler text is never exactly a letter: every reply is wrong
    let artifacts = dir.path().join("artifacts");
    let summary = read_json(&artifacts.join("profile_export_aiperf.json"));
    let accuracy = &summary["accuracy"];
    assert_eq!(accuracy["grader"], "exact_match");
    assert_eq!(accuracy["confidence_interval"], "wilson_95");
    assert_eq!(accuracy["overall"]["total"], 3);
    assert_eq!(accuracy["overall"]["correct"], 0);
    assert_eq!(accuracy["overall"]["accuracy"], 0.0);
    assert_eq!(accuracy["tasks"]["Baking"]["total"], 2);
    assert_eq!(accuracy["tasks"]["Rowing"]["total"], 1);
    assert_eq!(
        std::fs::read_to_string(artifacts.join("accuracy_results.csv")).unwrap(),
        "task,correct,total,unparsed,accuracy,ci95_low,ci95_high\n\
         OVERALL,0,3,0,0.0000,0.0000,0.5615\n\
         Baking,0,2,0,0.0000,0.0000,0.6576\n\
         Rowing,0,1,0,0.0000,0.0000,0.7935\n"
    );
    let csv = std::fs::read_to_string(artifacts.join("profile_export_aiperf.csv")).unwrap();
    assert!(
        csv.contains("\r\nOVERALL,0,3,0,0.0000,0.0000,0.5615\r\n"),
        "{csv}"
    );

    let lines = read_jsonl(&artifacts.join("profile_export.jsonl"));
    assert_eq!(lines.len(), 3);
    for line in &lines {
        assert_eq!(line["accuracy"]["correct"], false, "{line}");
        assert!(["A", "B"].contains(&line["accuracy"]["expected"].as_str().unwrap()));
    }
    let graded = read_jsonl(&artifacts.join("accuracy_export.jsonl"));
    assert_eq!(graded.len(), 3);
    assert_eq!(graded[0]["grader_name"], "exact_match");
    assert_eq!(graded[0]["passed"], false);

    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("Accuracy Benchmark Results (exact_match)"),
        "{stdout}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn code_generation_is_refused_before_anything_is_sent() {
    let dir = tempfile::tempdir().unwrap();
    let argv = run_args(
        "http://127.0.0.1:9",
        dir.path(),
        "--accuracy-benchmark lcb_codegeneration --input-file /nonexistent",
    );
    let output = profile(argv).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("aiperf-rs refuses to: time and memory limits on a child process"),
        "{stderr}"
    );
    assert_ne!(output.status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_accuracy_flag_without_a_benchmark_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let argv = run_args("http://127.0.0.1:9", dir.path(), "--accuracy-n-shots 3");
    let output = profile(argv).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "--accuracy-n-shots set without --accuracy-benchmark, which accuracy mode needs"
        ),
        "{stderr}"
    );
    assert_ne!(output.status.code(), Some(0));
}

/// The seed of the mock's right-or-wrong decisions (aiperf's own seed is 5).
const MOCK_SEED: u64 = 3;

/// A mock in accuracy mode with the answers of `answers` (question text, answer).
async fn answering_mock(
    dir: &Path,
    answers: &[(String, Value)],
    probability: f64,
    template: &str,
) -> MockServer {
    let file = dir.join("answers.jsonl");
    let lines: String = answers
        .iter()
        .map(|(q, a)| format!("{}\n", json!({"question": q, "answer": a})))
        .collect();
    std::fs::write(&file, lines).unwrap();
    MockServer::start(MockConfig {
        accuracy: Some(AccuracyConfig {
            correct_probability: probability,
            answers_file: Some(file),
            reply_template: template.to_owned(),
        }),
        random_seed: Some(MOCK_SEED),
        record_requests: Some(dir.join("requests.jsonl")),
        ..MockConfig::fast()
    })
    .await
    .unwrap()
}

fn write_jsonl(path: &Path, rows: &[Value]) {
    let text: String = rows.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(path, text).unwrap();
}

/// How many of `questions` the mock answers right at `probability`.
fn expected_right(questions: &[String], probability: f64) -> usize {
    questions
        .iter()
        .filter(|q| answers_correctly(MOCK_SEED, q, probability))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mmlu_reports_exactly_the_share_the_mock_answers_right() {
    let dir = tempfile::tempdir().unwrap();
    let rows_dir = dir.path().join("mmlu");
    std::fs::create_dir_all(&rows_dir).unwrap();
    let letters = ["A", "B", "C", "D"];
    let mut test_rows = Vec::new();
    let mut dev_rows = Vec::new();
    let mut answers = Vec::new();
    let mut questions_by_subject: Vec<(&str, Vec<String>)> = Vec::new();
    for (subject, count) in [("anatomy", 24), ("astronomy", 16)] {
        let mut questions = Vec::new();
        for i in 0..count {
            let question = format!("Which is fact {i} of {subject}?");
            test_rows.push(json!({"subject": subject, "question": question,
                "choices": ["one", "two", "three", "four"], "answer": i % 4}));
            answers.push((question.clone(), json!(letters[i % 4])));
            questions.push(question);
        }
        for i in 0..2 {
            // the examples are in the answer file too: the question asked is the one
            // that ends last in the prompt, never an example before it
            let example = format!("Which is example {i} of {subject}?");
            dev_rows.push(json!({"subject": subject, "question": example,
                "choices": ["one", "two", "three", "four"], "answer": 3 - i}));
            answers.push((example, json!(letters[3 - i])));
        }
        questions_by_subject.push((subject, questions));
    }
    write_jsonl(&rows_dir.join("test.jsonl"), &test_rows);
    write_jsonl(&rows_dir.join("dev.jsonl"), &dev_rows);
    let p = 0.6;
    let server = answering_mock(dir.path(), &answers, p, "{answer}").await;
    let output = profile(run_args(
        &server.url(),
        dir.path(),
        &format!(
            "--accuracy-benchmark mmlu --accuracy-n-shots 1 --concurrency 4 --input-file {}",
            rows_dir.display()
        ),
    ))
    .await;
    assert_exit(&output, 0);
    server.shutdown().await;

    let anatomy = expected_right(&questions_by_subject[0].1, p);
    let astronomy = expected_right(&questions_by_subject[1].1, p);
    // the seeded rule, computed here, gives the counts the artifacts below spell out
    assert_eq!((anatomy, astronomy), (15, 13));
    let requests = read_jsonl(&dir.path().join("requests.jsonl"));
    assert_eq!(requests.len(), 40);
    assert_eq!(
        recorded_body(&requests[0])["messages"]
            .as_array()
            .unwrap()
            .len(),
        3
    );

    let artifacts = dir.path().join("artifacts");
    assert_eq!(
        std::fs::read_to_string(artifacts.join("accuracy_results.csv")).unwrap(),
        "task,correct,total,unparsed,accuracy,ci95_low,ci95_high\n\
         OVERALL,28,40,0,0.7000,0.5457,0.8193\n\
         anatomy,15,24,0,0.6250,0.4271,0.7884\n\
         astronomy,13,16,0,0.8125,0.5699,0.9341\n"
    );
    let summary = read_json(&artifacts.join("profile_export_aiperf.json"));
    let accuracy = &summary["accuracy"];
    assert_eq!(accuracy["grader"], "multiple_choice");
    assert_eq!(accuracy["overall"]["correct"], 28);
    assert_eq!(accuracy["overall"]["total"], 40);
    assert_eq!(accuracy["overall"]["unparsed"], 0);
    assert_eq!(accuracy["overall"]["accuracy"], 0.7);
    assert_eq!(accuracy["tasks"]["anatomy"]["correct"], 15);
    assert_eq!(accuracy["tasks"]["astronomy"]["correct"], 13);
    let graded = read_jsonl(&artifacts.join("accuracy_export.jsonl"));
    assert_eq!(graded.iter().filter(|g| g["passed"] == true).count(), 28);

    let stdout = String::from_utf8_lossy(&output.stdout);
    let overall = stdout
        .lines()
        .find(|l| l.contains("OVERALL"))
        .unwrap_or_default();
    let cells: Vec<&str> = overall
        .split(['│', '┃', '|'])
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .collect();
    assert_eq!(
        cells,
        ["OVERALL", "28", "40", "0", "70.00%", "54.57-81.93%"],
        "{stdout}"
    );
}

/// GSM8K rows (`question`, a worked `answer` ending `#### n`) and the mock's answers.
fn gsm8k_fixture(n: usize) -> (Vec<Value>, Vec<(String, Value)>, Vec<String>) {
    let mut rows = Vec::new();
    let mut answers = Vec::new();
    let mut questions = Vec::new();
    for i in 0..n {
        let question = format!("Tom has {i} apples and buys 7 more. How many now?");
        rows.push(json!({"question": question, "answer": format!("{i} + 7\n#### {}", i + 7)}));
        answers.push((question.clone(), json!(i + 7)));
        questions.push(question);
    }
    (rows, answers, questions)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gsm8k_streamed_completions_report_the_exact_accuracy_at_0_half_and_1() {
    let (rows, answers, questions) = gsm8k_fixture(20);
    for (p, right, csv_overall) in [
        (0.0, 0, "OVERALL,0,20,0,0.0000,0.0000,0.1611\n"),
        (0.5, 11, "OVERALL,11,20,0,0.5500,0.3421,0.7418\n"),
        (1.0, 20, "OVERALL,20,20,0,1.0000,0.8389,1.0000\n"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("test.jsonl");
        write_jsonl(&file, &rows);
        assert_eq!(expected_right(&questions, p), right, "p = {p}");
        let server = answering_mock(dir.path(), &answers, p, "#### {answer}").await;
        let output = profile(args(&format!(
            "-m mock-model --url {} --endpoint-type completions --streaming \
             --artifact-dir {} --accuracy-benchmark gsm8k --input-file {}",
            server.url(),
            dir.path().join("artifacts").display(),
            file.display()
        )))
        .await;
        assert_exit(&output, 0);
        server.shutdown().await;
        let artifacts = dir.path().join("artifacts");
        let csv = std::fs::read_to_string(artifacts.join("accuracy_results.csv")).unwrap();
        assert_eq!(
            csv,
            format!(
                "task,correct,total,unparsed,accuracy,ci95_low,ci95_high\n{csv_overall}{}",
                csv_overall.replacen("OVERALL", "gsm8k", 1)
            )
        );
        let summary = read_json(&artifacts.join("profile_export_aiperf.json"));
        assert_eq!(summary["accuracy"]["grader"], "lighteval_gsm8k");
        assert_eq!(summary["accuracy"]["overall"]["correct"], right);
        assert_eq!(summary["accuracy"]["overall"]["unparsed"], 0);
        let records = read_jsonl(&artifacts.join("profile_export.jsonl"));
        assert_eq!(records.len(), 20);
        assert_eq!(
            records
                .iter()
                .filter(|r| r["accuracy"]["correct"] == true)
                .count(),
            right
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_header_names_the_answer_of_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("test.jsonl");
    let rows: Vec<Value> = (0..4)
        .map(|i| json!({"question": format!("Puzzle {i}: what is 40 + 2?"), "answer": "#### 42"}))
        .collect();
    write_jsonl(&file, &rows);
    let server = MockServer::start(MockConfig {
        accuracy: Some(AccuracyConfig {
            reply_template: "#### {answer}".into(),
            ..AccuracyConfig::default()
        }),
        ..MockConfig::fast()
    })
    .await
    .unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {} --endpoint-type chat --artifact-dir {} \
         --accuracy-benchmark gsm8k --input-file {}",
        server.url(),
        dir.path().join("artifacts").display(),
        file.display()
    ));
    argv.extend(["-H".to_owned(), "x-mock-answer:42".to_owned()]);
    let output = profile(argv).await;
    assert_exit(&output, 0);
    server.shutdown().await;
    assert_eq!(
        std::fs::read_to_string(dir.path().join("artifacts/accuracy_results.csv")).unwrap(),
        "task,correct,total,unparsed,accuracy,ci95_low,ci95_high\n\
         OVERALL,4,4,0,1.0000,0.5101,1.0000\n\
         gsm8k,4,4,0,1.0000,0.5101,1.0000\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_an_input_file_the_questions_come_from_the_hugging_face_cache_offline() {
    let dir = tempfile::tempdir().unwrap();
    let hf_home = dir.path().join("hf");
    let (rows, answers, questions) = gsm8k_fixture(3);
    gsm8k_cache(&hf_home, &rows);
    let server = answering_mock(dir.path(), &answers, 1.0, "#### {answer}").await;
    let line = format!(
        "-m mock-model --url {} --endpoint-type chat --artifact-dir {} \
         --accuracy-benchmark gsm8k --concurrency 1",
        server.url(),
        dir.path().join("artifacts").display()
    );
    let output = profile_offline(&hf_home, &line).await;
    assert_exit(&output, 0);
    server.shutdown().await;

    let prompts: Vec<Value> = read_jsonl(&dir.path().join("requests.jsonl"))
        .iter()
        .map(|request| recorded_body(request)["messages"].clone())
        .collect();
    let expected: Vec<Value> = questions
        .iter()
        .map(|q| json!([{"role": "user", "content": format!("Question: {q}\nAnswer:")}]))
        .collect();
    assert_eq!(prompts, expected);
    assert_eq!(
        std::fs::read_to_string(dir.path().join("artifacts/accuracy_results.csv")).unwrap(),
        "task,correct,total,unparsed,accuracy,ci95_low,ci95_high\n\
         OVERALL,3,3,0,1.0000,0.4385,1.0000\n\
         gsm8k,3,3,0,1.0000,0.4385,1.0000\n"
    );
}

/// `datasets--openai--gsm8k` at `refs/main` with `rows` as the `main` config's test split
/// (`question` and `answer` columns), as `huggingface_hub` lays a download out.
fn gsm8k_cache(hf_home: &Path, rows: &[Value]) {
    use std::sync::Arc;

    use arrow_array::{ArrayRef, RecordBatch, StringArray};

    let repo = hf_home.join("hub/datasets--openai--gsm8k");
    let commit = "0123456789abcdef0123456789abcdef01234567";
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs/main"), commit).unwrap();
    let folder = repo.join("snapshots").join(commit).join("main");
    std::fs::create_dir_all(&folder).unwrap();
    let column = |name: &str| -> ArrayRef {
        let values: Vec<&str> = rows.iter().map(|r| r[name].as_str().unwrap()).collect();
        Arc::new(StringArray::from(values))
    };
    let batch = RecordBatch::try_from_iter([
        ("question", column("question")),
        ("answer", column("answer")),
    ])
    .unwrap();
    let file = std::fs::File::create(folder.join("test-00000-of-00001.parquet")).unwrap();
    let mut writer = parquet::arrow::ArrowWriter::try_new(file, batch.schema(), None).unwrap();
    writer.write(&batch).unwrap();
    writer.close().unwrap();
}

/// Two shards of a GSM8K run, merged: the merged run reports the accuracy of all twenty
/// questions (the one-process figures of the test above at p = 0.5), not a shard's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shards_of_an_accuracy_run_merge_into_the_whole_run_s_accuracy() {
    let (rows, answers, questions) = gsm8k_fixture(20);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("test.jsonl");
    write_jsonl(&file, &rows);
    assert_eq!(expected_right(&questions, 0.5), 11);
    let server = answering_mock(dir.path(), &answers, 0.5, "#### {answer}").await;
    let shard_dir = |k: u32| dir.path().join(format!("shard-{k}"));
    let shards: Vec<_> = (0..2)
        .map(|k| {
            tokio::spawn(profile(args(&format!(
                "-m mock-model --url {} --endpoint-type completions --streaming \
                 --concurrency 2 --artifact-dir {} --accuracy-benchmark gsm8k --input-file {} \
                 --random-seed 5 --shard {k}/2",
                server.url(),
                shard_dir(k).display(),
                file.display()
            ))))
        })
        .collect();
    for shard in shards {
        assert_exit(&shard.await.unwrap(), 0);
    }
    server.shutdown().await;
    let merged = dir.path().join("merged");
    let output = std::process::Command::new(common::aiperf_binary())
        .args(["merge", "-o", merged.to_str().unwrap()])
        .arg(shard_dir(0))
        .arg(shard_dir(1))
        .output()
        .unwrap();
    assert_exit(&output, 0);
    let overall = "OVERALL,11,20,0,0.5500,0.3421,0.7418\n";
    assert_eq!(
        std::fs::read_to_string(merged.join("accuracy_results.csv")).unwrap(),
        format!(
            "task,correct,total,unparsed,accuracy,ci95_low,ci95_high\n{overall}{}",
            overall.replacen("OVERALL", "gsm8k", 1)
        )
    );
    let summary = read_json(&merged.join("profile_export_aiperf.json"));
    assert_eq!(summary["accuracy"]["overall"]["correct"], 11);
    // Every grade, in end-time order, numbered as the merged records are.
    let graded = read_jsonl(&merged.join("accuracy_export.jsonl"));
    assert_eq!(graded.len(), 20);
    assert_eq!(graded.iter().filter(|r| r["passed"] == true).count(), 11);
    let ends: Vec<u64> = graded
        .iter()
        .map(|r| r["timestamp_ns"].as_u64().unwrap())
        .collect();
    assert!(ends.windows(2).all(|w| w[0] <= w[1]), "{ends:?}");
    let records = read_jsonl(&merged.join("profile_export.jsonl"));
    for grade in &graded {
        let record = records
            .iter()
            .find(|r| r["metadata"]["session_num"] == grade["session_num"])
            .unwrap();
        assert_eq!(record["metadata"]["x_request_id"], grade["x_request_id"]);
    }
}
