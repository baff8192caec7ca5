//! Fixtures, malformed lines and property tests of the parser and renderer.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;

use super::*;

fn l(k: &str, v: &str) -> (String, String) {
    (k.to_string(), v.to_string())
}

fn fam<'a>(fs: &'a [MetricFamily], name: &str) -> &'a MetricFamily {
    find_family(fs, name).unwrap_or_else(|| panic!("no family {name}"))
}

/// The error of the first bad line, as displayed.
fn strict_err(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

#[test]
fn counter_prometheus_and_openmetrics_names() {
    let text = "# HELP http_requests_total Requests.\n# TYPE http_requests_total counter\n\
                http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n\
                http_requests_total{method=\"post\",code=\"400\"}    3 1395066363000\n\
                # TYPE om counter\nom_total 5\nom_created 1.7e9\n";
    let fs = parse(text).unwrap();
    assert_eq!(fs.len(), 2);
    let c = &fs[0];
    assert_eq!(c.kind, MetricType::Counter);
    assert_eq!(c.help.as_deref(), Some("Requests."));
    assert_eq!(c.samples[0].labels, [l("method", "post"), l("code", "200")]);
    assert_eq!(c.samples[0].value, 1027.0);
    assert_eq!(c.samples[1].timestamp_ms, Some(1_395_066_363_000));
    let om = &fs[1];
    assert_eq!(om.kind, MetricType::Counter);
    assert_eq!(om.samples.len(), 2);
    assert_eq!(om.samples[0].name, "om_total");
    assert_eq!(om.samples[1].value, 1.7e9);
}

#[test]
fn gauge_with_special_values_and_exponents() {
    let text = "# TYPE g gauge\ng{k=\"a\"} NaN\ng{k=\"b\"} +Inf\ng{k=\"c\"} -Inf\n\
                g{k=\"d\"} Inf\ng{k=\"e\"} 1.5e-3\ng{k=\"f\"} -2E+10\ng{k=\"g\"} 42\n\
                g{k=\"h\"} .5\n";
    let fs = parse(text).unwrap();
    let v: Vec<f64> = fs[0].samples.iter().map(|s| s.value).collect();
    assert!(v[0].is_nan());
    assert_eq!(
        &v[1..],
        [
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::INFINITY,
            1.5e-3,
            -2e10,
            42.0,
            0.5
        ]
    );
}

#[test]
fn histogram_groups_buckets_sum_count_per_label_set() {
    let text = "# HELP lat Latency.\n# TYPE lat histogram\n\
                lat_bucket{path=\"/a\",le=\"0.5\"} 1\nlat_bucket{path=\"/a\",le=\"+Inf\"} 3\n\
                lat_bucket{path=\"/a\",le=\"0.1\"} 0\nlat_sum{path=\"/a\"} 2.5\n\
                lat_count{path=\"/a\"} 3\nlat_created{path=\"/a\"} 1700000000\n\
                lat_bucket{le=\"1e0\",path=\"/b\"} 2\nlat_bucket{le=\"+Inf\",path=\"/b\"} 2\n\
                lat_sum{path=\"/b\"} 1\nlat_count{path=\"/b\"} 2\n";
    let fs = parse(text).unwrap();
    assert_eq!(fs.len(), 1);
    let h = fs[0].histograms();
    assert_eq!(h.len(), 2);
    assert_eq!(h[0].labels, [l("path", "/a")]);
    assert_eq!(h[0].buckets, [(0.1, 0.0), (0.5, 1.0), (f64::INFINITY, 3.0)]);
    assert_eq!((h[0].sum, h[0].count), (Some(2.5), Some(3.0)));
    assert_eq!(h[1].buckets, [(1.0, 2.0), (f64::INFINITY, 2.0)]);
    assert!(fs[0].summaries().is_empty());
}

#[test]
fn summary_quantiles() {
    let text = "# TYPE rpc summary\nrpc{quantile=\"0.5\"} 4.7\nrpc{quantile=\"0.99\"} 76\n\
                rpc_sum 1.7e3\nrpc_count 2693\n";
    let fs = parse(text).unwrap();
    let s = fs[0].summaries();
    assert_eq!(s.len(), 1);
    assert!(s[0].labels.is_empty());
    assert_eq!(s[0].quantiles, [(0.5, 4.7), (0.99, 76.0)]);
    assert_eq!((s[0].sum, s[0].count), (Some(1700.0), Some(2693.0)));
    assert!(fs[0].histograms().is_empty());
}

#[test]
fn untyped_samples_become_families_of_their_own_name() {
    let text = "a 1\nb_sum 2\n# TYPE u untyped\nu 3\n# TYPE k unknown\nk 4\na{x=\"y\"} 5\n";
    let fs = parse(text).unwrap();
    let names: Vec<&str> = fs.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["a", "b_sum", "u", "k"]);
    assert!(fs.iter().all(|f| f.kind == MetricType::Untyped));
    assert_eq!(fs[0].samples.len(), 2);
}

#[test]
fn escapes_in_labels_and_help() {
    let text = "# HELP e A \\\\ backslash,\\na newline and \\q kept.\n\
                e{path=\"C:\\\\dir\",q=\"say \\\"hi\\\"\",nl=\"a\\nb\",u=\"ünï\"} 1\n";
    let fs = parse(text).unwrap();
    assert_eq!(
        fs[0].help.as_deref(),
        Some("A \\ backslash,\na newline and \\q kept.")
    );
    assert_eq!(
        fs[0].samples[0].labels,
        [
            l("path", "C:\\dir"),
            l("q", "say \"hi\""),
            l("nl", "a\nb"),
            l("u", "ünï")
        ]
    );
}

#[test]
fn whitespace_trailing_comma_crlf_and_comments() {
    let text = "  # a comment\r\n#\n\n\t m { a = \"1\" , b=\"2\", }\t 7 \t 123 \r\n\
                m{} 8\n# HELP   m   spaced  help\n";
    let fs = parse(text).unwrap();
    let m = &fs[0];
    assert_eq!(m.samples[0].labels, [l("a", "1"), l("b", "2")]);
    assert_eq!(m.samples[0].timestamp_ms, Some(123));
    assert!(m.samples[1].labels.is_empty());
    assert_eq!(m.help.as_deref(), Some("spaced  help"));
}

#[test]
fn openmetrics_eof_unit_exemplars_and_new_types() {
    let text = "# TYPE req counter\n# UNIT req requests\n\
                req_total{a=\"b\"} 3 # {trace_id=\"abc\"} 0.67 1520879607.789\n\
                # TYPE lat histogram\nlat_bucket{le=\"1\"} 1 # {id=\"x\"} 0.5\n\
                lat_bucket{le=\"+Inf\"} 2\nlat_sum 3\nlat_count 2\n\
                # TYPE build info\nbuild_info{version=\"1.2\"} 1\n\
                # TYPE st stateset\nst{st=\"a\"} 1\nst{st=\"b\"} 0\n\
                # TYPE gh gaugehistogram\ngh_bucket{le=\"+Inf\"} 4\ngh_gcount 4\ngh_gsum 9\n\
                ts_om 1 1520879607.789\n# EOF\n";
    let fs = parse(text).unwrap();
    let req = fam(&fs, "req");
    assert_eq!(req.unit.as_deref(), Some("requests"));
    assert_eq!(req.samples[0].value, 3.0);
    assert_eq!(req.samples[0].timestamp_ms, None);
    assert_eq!(fam(&fs, "lat").histograms()[0].count, Some(2.0));
    assert_eq!(fam(&fs, "build").kind, MetricType::Info);
    assert_eq!(fam(&fs, "st").samples.len(), 2);
    let gh = fam(&fs, "gh").histograms();
    assert_eq!((gh[0].sum, gh[0].count), (Some(9.0), Some(4.0)));
    assert_eq!(
        fam(&fs, "ts_om").samples[0].timestamp_ms,
        Some(1_520_879_607_789)
    );
    assert_eq!(strict_err("# EOF\nx 1\n"), "line 2: content after # EOF");
    // Blank lines after `# EOF` are fine.
    assert!(parse("x 1\n# EOF\n\n").is_ok());
}

#[test]
fn dcgm_exporter_snippet() {
    let text = r#"# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-5fd4c0a1-24b2-8d5e-7c1c-1c2f7a0e9b11",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="host"} 1980
DCGM_FI_DEV_SM_CLOCK{gpu="1",UUID="GPU-0c1e2a3b-4d5e-6f70-8192-a3b4c5d6e7f8",pci_bus_id="00000000:28:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="host"} 345
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-5fd4c0a1-24b2-8d5e-7c1c-1c2f7a0e9b11",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="host"} 71.5
DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-0c1e2a3b-4d5e-6f70-8192-a3b4c5d6e7f8",pci_bus_id="00000000:28:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="host"} 698.25
# HELP DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION Total energy consumption since boot (in mJ).
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-5fd4c0a1-24b2-8d5e-7c1c-1c2f7a0e9b11",pci_bus_id="00000000:18:00.0",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",Hostname="host"} 3471912934
"#;
    let fs = parse(text).unwrap();
    assert_eq!(fs.len(), 3);
    let p = fam(&fs, "DCGM_FI_DEV_POWER_USAGE");
    assert_eq!(p.kind, MetricType::Gauge);
    assert_eq!(p.samples[0].value, 71.5);
    assert_eq!(p.samples[1].label("gpu"), Some("1"));
    assert_eq!(
        p.samples[0].label("modelName"),
        Some("NVIDIA H100 80GB HBM3")
    );
    let e = fam(&fs, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION");
    assert_eq!(e.kind, MetricType::Counter);
    assert_eq!(e.samples[0].value, 3_471_912_934.0);
}

#[test]
fn vllm_snippet_with_colons() {
    let text = r#"# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 2.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{le="0.001",model_name="m"} 0.0
vllm:time_to_first_token_seconds_bucket{le="0.005",model_name="m"} 1.0
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="m"} 5.0
vllm:time_to_first_token_seconds_count{model_name="m"} 5.0
vllm:time_to_first_token_seconds_sum{model_name="m"} 0.123
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m"} 1024.0
"#;
    let fs = parse(text).unwrap();
    assert_eq!(fs.len(), 3);
    let h = fam(&fs, "vllm:time_to_first_token_seconds");
    assert_eq!(h.kind, MetricType::Histogram);
    let s = h.histograms();
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].labels, [l("model_name", "m")]);
    assert_eq!(s[0].buckets.last(), Some(&(f64::INFINITY, 5.0)));
    assert_eq!((s[0].sum, s[0].count), (Some(0.123), Some(5.0)));
    assert_eq!(
        fam(&fs, "vllm:prompt_tokens_total").samples[0].value,
        1024.0
    );
}

#[test]
fn malformed_lines_give_exact_errors() {
    let cases: [(&str, &str); 24] = [
        (
            "ok 1\nfoo abc\n",
            "line 2: invalid value \"abc\" for sample foo",
        ),
        (
            "x 1\ny 2\nfoo{a=\"b} 1\n",
            "line 3: unterminated label value",
        ),
        (
            "foo{a=\"b\" 1\n",
            "line 1: expected ',' or '}' after a label value, found \"1\"",
        ),
        (
            "foo{a=\"b\",\n",
            "line 1: unterminated label set: missing '}'",
        ),
        (
            "foo{a=\"\\x\"} 1\n",
            "line 1: invalid escape sequence \"\\x\" in label value",
        ),
        ("foo{1a=\"b\"} 1\n", "line 1: invalid label name \"1a\""),
        ("foo{a-b=\"c\"} 1\n", "line 1: invalid label name \"a-b\""),
        (
            "foo{a b=\"c\"} 1\n",
            "line 1: expected '=' after label name \"a\"",
        ),
        (
            "foo{a=b} 1\n",
            "line 1: expected '\"' to open the value of label \"a\"",
        ),
        ("foo{a=\"1\",a=\"2\"} 1\n", "line 1: duplicate label \"a\""),
        ("1foo 1\n", "line 1: invalid metric name \"1foo\""),
        ("fo-o 1\n", "line 1: invalid metric name \"fo-o\""),
        ("foo\n", "line 1: missing value for sample foo"),
        (
            "foo 1 abc\n",
            "line 1: invalid timestamp \"abc\" for sample foo",
        ),
        (
            "foo 1 2 3\n",
            "line 1: unexpected text \"3\" after sample foo",
        ),
        ("foo 1 # x\n", "line 1: malformed exemplar for sample foo"),
        ("# HELP\n", "line 1: # HELP line without a metric name"),
        ("# TYPE foo\n", "line 1: # TYPE line for foo without a type"),
        (
            "# TYPE foo bogus\n",
            "line 1: unknown metric type \"bogus\" for foo",
        ),
        (
            "# TYPE foo gauge\n# TYPE foo gauge\n",
            "line 2: second # TYPE line for foo",
        ),
        (
            "foo 1\n# TYPE foo gauge\n",
            "line 2: # TYPE line for foo after its samples",
        ),
        (
            "# TYPE h histogram\nh 1\n",
            "line 2: sample h does not fit histogram family h",
        ),
        (
            "# TYPE h histogram\nh_bucket{le=\"x\"} 1\n",
            "line 2: histogram bucket h_bucket needs an \"le\" label holding a float",
        ),
        (
            "# TYPE s summary\ns 1\n",
            "line 2: summary sample s needs a \"quantile\" label holding a float",
        ),
    ];
    for (text, want) in cases {
        assert_eq!(strict_err(text), want, "input {text:?}");
        let (_, errors) = parse_lenient(text);
        assert_eq!(errors.len(), 1, "input {text:?}");
        assert_eq!(errors[0].to_string(), want, "input {text:?}");
    }
}

#[test]
fn errors_carry_columns() {
    let e = parse("foo{a=\"b\"} xyz\n").unwrap_err();
    assert_eq!((e.line, e.column), (1, Some(12)));
    assert!(matches!(e.kind, ParseErrorKind::InvalidValue { .. }));
    let e = parse("ü{a=\"b\"} 1\n").unwrap_err();
    assert_eq!(e.column, Some(1));
    assert_eq!(parse("a 1\nb{x=\"ü\\q\"} 1\n").unwrap_err().column, Some(7));
}

#[test]
fn lenient_mode_keeps_good_lines() {
    let text = "# TYPE g gauge\ng{a=\"1\"} 1\ng{a=\"2\" 2\ng{a=\"3\"} three\ng{a=\"4\"} 4\n\
                bad-name 5\n# TYPE g counter\nother 6\n";
    let (fs, errors) = parse_lenient(text);
    let lines: Vec<usize> = errors.iter().map(|e| e.line).collect();
    assert_eq!(lines, [3, 4, 6, 7]);
    assert_eq!(fs.len(), 2);
    assert_eq!(fs[0].kind, MetricType::Gauge);
    let vals: Vec<f64> = fs[0].samples.iter().map(|s| s.value).collect();
    assert_eq!(vals, [1.0, 4.0]);
    assert_eq!(fs[1].name, "other");
}

#[test]
fn render_writes_canonical_text() {
    let text = "# TYPE a_total counter\na_total{x=\"q\\\"\\\\\\n\",y=\"\"} 1e-7 -5\n\
                h_bucket{le=\"+Inf\"} +Inf\nn NaN\nbig 1e300\nneg -3\n";
    let out = render(&parse(text).unwrap());
    assert_eq!(
        out,
        "# TYPE a_total counter\na_total{x=\"q\\\"\\\\\\n\",y=\"\"} 1e-7 -5\n\
         # TYPE h_bucket untyped\nh_bucket{le=\"+Inf\"} +Inf\n\
         # TYPE n untyped\nn NaN\n# TYPE big untyped\nbig 1e300\n# TYPE neg untyped\nneg -3\n"
    );
    assert_eq!(format_value(0.25), "0.25");
    assert_eq!(format_value(-0.0), "-0");
}

// ---- property tests ----

/// Equality with NaN equal to NaN.
fn same_value(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b
}

fn same_families(a: &[MetricFamily], b: &[MetricFamily]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            x.name == y.name
                && x.help == y.help
                && x.kind == y.kind
                && x.unit == y.unit
                && x.samples.len() == y.samples.len()
                && x.samples.iter().zip(&y.samples).all(|(s, t)| {
                    s.name == t.name
                        && s.labels == t.labels
                        && s.timestamp_ms == t.timestamp_ms
                        && same_value(s.value, t.value)
                })
        })
}

/// Fragments that reach the parser's corners when glued at random.
fn fragment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("# HELP ".to_string()),
        Just("# TYPE ".to_string()),
        Just("# UNIT ".to_string()),
        Just("# EOF".to_string()),
        Just(" histogram".to_string()),
        Just(" summary".to_string()),
        Just(" counter".to_string()),
        Just("_bucket".to_string()),
        Just("_sum".to_string()),
        Just("le=\"".to_string()),
        Just("quantile=".to_string()),
        Just("{".to_string()),
        Just("}".to_string()),
        Just("\"".to_string()),
        Just("\\".to_string()),
        Just("=".to_string()),
        Just(",".to_string()),
        Just(" # ".to_string()),
        Just(" ".to_string()),
        Just("\t".to_string()),
        Just("\n".to_string()),
        Just("\r\n".to_string()),
        Just("+Inf".to_string()),
        Just("NaN".to_string()),
        "[a-z_:]{1,4}",
        "-?[0-9]{1,3}(\\.[0-9]{1,3})?(e-?[0-9]{1,3})?",
        "\\PC{0,3}",
    ]
}

fn name_strategy() -> impl Strategy<Value = String> {
    "[a-zA-Z_:][a-zA-Z0-9_:]{0,8}"
}

fn labels_strategy() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec(("l_[a-zA-Z0-9_]{0,5}", any::<String>()), 0..4).prop_map(|v| {
        let mut seen = std::collections::HashSet::new();
        v.into_iter()
            .filter(|(k, _)| seen.insert(k.clone()))
            .collect()
    })
}

fn sample_strategy(kind: MetricType) -> impl Strategy<Value = (&'static str, Sample)> {
    let suffixes = kind.sample_suffixes();
    (
        prop::sample::select(suffixes),
        labels_strategy(),
        any::<f64>(),
        any::<Option<i64>>(),
        prop_oneof![Just(f64::INFINITY), any::<f64>()],
    )
        .prop_map(move |(suffix, mut labels, value, timestamp_ms, bound)| {
            if kind.is_histogram() && suffix == "_bucket" {
                labels.push(("le".to_string(), format_value(bound)));
            }
            if kind == MetricType::Summary && suffix.is_empty() {
                labels.insert(0, ("quantile".to_string(), format_value(bound)));
            }
            let sample = Sample {
                name: String::new(),
                labels,
                value,
                timestamp_ms,
            };
            (suffix, sample)
        })
}

fn family_strategy() -> impl Strategy<Value = MetricFamily> {
    (
        prop::sample::select(MetricType::ALL.to_vec()),
        name_strategy(),
    )
        .prop_flat_map(|(kind, name)| {
            (
                Just(kind),
                Just(name),
                prop::option::of(any::<String>()),
                prop::option::of("[a-z_]{1,8}"),
                prop::collection::vec(sample_strategy(kind), 0..5),
            )
                .prop_map(|(kind, name, help, unit, samples)| MetricFamily {
                    help: help.map(|h| {
                        h.trim_start_matches([' ', '\t'])
                            .trim_end_matches('\r')
                            .to_string()
                    }),
                    unit,
                    samples: samples
                        .into_iter()
                        .map(|(suffix, s)| Sample {
                            name: format!("{name}{suffix}"),
                            ..s
                        })
                        .collect(),
                    kind,
                    name,
                })
        })
}

/// Families with distinct names, none ending in a sample suffix (each gets `_f<i>`).
fn families_strategy() -> impl Strategy<Value = Vec<MetricFamily>> {
    prop::collection::vec(family_strategy(), 0..5).prop_map(|fs| {
        fs.into_iter()
            .enumerate()
            .map(|(i, mut f)| {
                let name = format!("{}_f{i}", f.name);
                for s in &mut f.samples {
                    s.name = format!("{name}{}", s.name.get(f.name.len()..).unwrap_or(""));
                }
                f.name = name;
                f
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn never_panics_on_any_string(s in any::<String>()) {
        let _ = parse(&s);
        let _ = parse_lenient(&s);
    }

    #[test]
    fn never_panics_on_any_bytes(b in prop::collection::vec(any::<u8>(), 0..512)) {
        let s = String::from_utf8_lossy(&b);
        let _ = parse(&s);
        let _ = parse_lenient(&s);
    }

    #[test]
    fn never_panics_on_glued_fragments(parts in prop::collection::vec(fragment(), 0..40)) {
        let s: String = parts.concat();
        let strict = parse(&s);
        let (families, errors) = parse_lenient(&s);
        // Both modes agree on good input, and lenient finds an error where strict does.
        match strict {
            Ok(fs) => {
                prop_assert!(errors.is_empty());
                prop_assert!(same_families(&fs, &families));
            }
            Err(e) => prop_assert_eq!(errors.first(), Some(&e)),
        }
    }

    #[test]
    fn render_then_parse_round_trips(families in families_strategy()) {
        let text = render(&families);
        let parsed = parse(&text);
        prop_assert!(parsed.is_ok(), "{:?}\n{}", parsed, text);
        let parsed = parsed.unwrap_or_default();
        prop_assert!(same_families(&families, &parsed), "{:#?}\n{}\n{:#?}", families, text, parsed);
    }
}

#[test]
fn linear_time_on_large_inputs() {
    // 200k labels on one line and 100k families: both finish quickly (no quadratic work).
    let mut line = String::from("big{");
    for i in 0..200_000 {
        line.push_str(&format!("l{i}=\"v\","));
    }
    line.push_str("} 1\n");
    let started = std::time::Instant::now();
    assert_eq!(parse(&line).unwrap()[0].samples[0].labels.len(), 200_000);
    let many: String = (0..100_000).map(|i| format!("m{i} {i}\n")).collect();
    assert_eq!(parse(&many).unwrap().len(), 100_000);
    let unterminated = format!("x{{a=\"{}", "\\\"".repeat(500_000));
    assert!(parse(&unterminated).is_err());
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}
