//! `aiperf speed-bench-report`: the flags turned into the metrics crate's report, which is
//! printed and written.

use std::process::ExitCode;

use aiperf_metrics::speed_bench::{build_report, SpeedBenchMetric, SpeedBenchReportError};

use crate::args::{ReportFormatArg, ReportMetricArg, SpeedBenchReportArgs};

/// Builds the report, prints its warnings (stderr) and table, writes its CSV. Exit 1 when
/// there is nothing to report or the CSV cannot be written.
pub(crate) fn run(args: &SpeedBenchReportArgs) -> ExitCode {
    let metric = match args.metric {
        ReportMetricArg::AcceptLength => SpeedBenchMetric::AcceptLength,
        ReportMetricArg::AcceptRate => SpeedBenchMetric::AcceptRate,
        ReportMetricArg::Throughput => SpeedBenchMetric::Throughput,
    };
    let report = match build_report(&args.paths, metric) {
        Ok(report) => report,
        Err(error) => {
            if let SpeedBenchReportError::NoResults { warnings } = &error {
                print_warnings(warnings);
            }
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    print_warnings(&report.warnings);
    println!("Found {} run directories.", report.run_dirs);
    if matches!(args.format, ReportFormatArg::Table | ReportFormatArg::Both) {
        print!("{}", report.table());
    }
    if matches!(args.format, ReportFormatArg::Csv | ReportFormatArg::Both) {
        if let Err(error) = report.write_csv(&args.output) {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
        println!("CSV written to {}", args.output.display());
    }
    ExitCode::SUCCESS
}

fn print_warnings(warnings: &[String]) {
    for warning in warnings {
        eprintln!("warning: {warning}");
    }
}
