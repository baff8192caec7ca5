//! AFL++ target: the Prometheus / OpenMetrics text parser must never panic, and whatever
//! the strict parser accepts must survive a render → parse round trip.
//!
//! `bash fuzz/run.sh [SECONDS]` builds it with cargo-afl and fuzzes from `fuzz/seeds/`.

fn main() {
    afl::fuzz!(|data: &[u8]| {
        let Ok(text) = std::str::from_utf8(data) else {
            return;
        };
        let _ = aiperf_telemetry::prometheus::parse_lenient(text);
        if let Ok(families) = aiperf_telemetry::prometheus::parse(text) {
            let rendered = aiperf_telemetry::prometheus::render(&families);
            let reparsed = aiperf_telemetry::prometheus::parse(&rendered);
            assert!(
                reparsed.is_ok(),
                "rendered text does not parse: {reparsed:?}\n{rendered}"
            );
        }
    });
}
