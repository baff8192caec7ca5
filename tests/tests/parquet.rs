//! The Parquet files of the built binary against the in-process mock server:
//! `profile_export.parquet` has one row per profiling request with the same values as
//! `profile_export.jsonl`; `--server-metrics-formats parquet` writes
//! `server_metrics_export.parquet`.
#![allow(clippy::unwrap_used)] // tests fail loudly by design

mod common;

use std::collections::HashMap;
use std::fs::File;

use aiperf_mock_server::{MockConfig, MockServer};
use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_array::{Array, RecordBatch};
use common::{args, assert_exit, profile, read_jsonl};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parquet_rows_match_the_jsonl_records() {
    let server = MockServer::start(MockConfig::with_timing(20.0, 5.0))
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {url} --streaming --concurrency 4 --request-count 20 --isl 16 --osl 8 --random-seed 3 --warmup-request-count 2 --no-server-metrics --no-gpu-telemetry",
        url = server.url()
    ));
    argv.extend(["--artifact-dir".into(), dir.path().to_str().unwrap().into()]);
    let output = profile(argv).await;
    assert_exit(&output, 0);

    let jsonl = read_jsonl(&dir.path().join("profile_export.jsonl"));
    let expected: HashMap<String, f64> = jsonl
        .iter()
        .map(|r| {
            (
                r["metadata"]["x_request_id"].as_str().unwrap().to_owned(),
                r["metrics"]["time_to_first_token"]["value"]
                    .as_f64()
                    .unwrap(),
            )
        })
        .collect();

    let file = File::open(dir.path().join("profile_export.parquet")).unwrap();
    let batches: Vec<RecordBatch> = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    // warmup requests are not profiled: exactly the request count
    assert_eq!(rows, 20);
    assert_eq!(expected.len(), 20);

    let mut seen = 0;
    for batch in &batches {
        let ids = batch
            .column_by_name("x_request_id")
            .unwrap()
            .as_string::<i32>();
        let ttft = batch.column_by_name("time_to_first_token").unwrap();
        let ttft = ttft.as_primitive::<Float64Type>();
        let phase = batch
            .column_by_name("benchmark_phase")
            .unwrap()
            .as_string::<i32>();
        for i in 0..batch.num_rows() {
            assert!(!ttft.is_null(i));
            assert_eq!(ttft.value(i), expected[ids.value(i)], "{}", ids.value(i));
            assert_eq!(phase.value(i), "profiling");
            seen += 1;
        }
    }
    assert_eq!(seen, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_metrics_formats_parquet_writes_only_the_parquet_file() {
    let server = MockServer::start(MockConfig::fast()).await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut argv = args(&format!(
        "-m mock-model --url {url} --concurrency 2 --request-count 10 --isl 16 --osl 4 --no-gpu-telemetry --server-metrics-formats parquet",
        url = server.url()
    ));
    argv.extend(["--artifact-dir".into(), dir.path().to_str().unwrap().into()]);
    let output = profile(argv).await;
    assert_exit(&output, 0);
    let metrics_url = format!("{}/metrics", server.url());
    server.shutdown().await;

    assert!(!dir.path().join("server_metrics_export.json").exists());
    let file = File::open(dir.path().join("server_metrics_export.parquet")).unwrap();
    let batches: Vec<RecordBatch> = ParquetRecordBatchReaderBuilder::try_new(file)
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect();
    let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
    assert!(rows > 0);
    for batch in &batches {
        let urls = batch
            .column_by_name("endpoint_url")
            .unwrap()
            .as_string::<i32>();
        assert!((0..batch.num_rows()).all(|i| urls.value(i) == metrics_url));
    }
}
