//! Logs: every event at the chosen level goes to `<artifact dir>/logs/aiperf.log`; the
//! console gets the same level when `--log-level`, `-v` or `-vv` chose it, warnings and
//! errors only otherwise, and none while the dashboard owns the screen (it shows the
//! recent ones itself).
//!
//! The artifact directory is known only once the run is configured, so the file layer
//! is installed at start and buffers what it receives until [`open_log_file`] names the
//! file.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use indicatif::MultiProgress;
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::filter::{filter_fn, EnvFilter, LevelFilter};
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

use crate::args::LogLevel;

/// Lines logged before the file opens are kept up to this size; beyond it they are
/// dropped (a run that never reaches its artifact directory writes no log file).
const EARLY_BUFFER_LIMIT: usize = 1 << 20;

/// How many recent warnings the dashboard can show.
const RECENT_WARNINGS: usize = 8;

/// The log file, or the lines waiting for it.
static LOG_FILE: Mutex<LogFile> = Mutex::new(LogFile::Waiting(Vec::new()));

/// While true, console log lines go to [`recent_warnings`] instead of stderr.
static CONSOLE_MUTED: AtomicBool = AtomicBool::new(false);

static RECENT: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());

/// The progress bars of `--ui-type simple` while they are drawn: console lines are
/// printed above them instead of through them.
static BARS: Mutex<Option<MultiProgress>> = Mutex::new(None);

enum LogFile {
    Waiting(Vec<u8>),
    Open(BufWriter<File>),
}

/// Installs the global logger: the file at `level` (or `AIPERF_LOG`, an env-filter
/// directive, when set), the console at `level` too when `console_follows_level`, else at
/// warnings and errors.
pub(crate) fn init(level: LogLevel, console_follows_level: bool) {
    let file_level = LevelFilter::from_level(level.tracing_level());
    // Our own crates at the chosen level; dependencies (hyper's h2, rustls) only report
    // their warnings, so the file never carries their frame dumps.
    let file_filter = EnvFilter::try_from_env("AIPERF_LOG")
        .unwrap_or_else(|_| EnvFilter::new(format!("warn,aiperf={file_level}")));
    let console_level = if console_follows_level {
        file_level
    } else {
        file_level.min(LevelFilter::WARN)
    };
    let file = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .event_format(LineFormat { file: true })
        .with_writer(|| FileWriter)
        .with_filter(file_filter);
    let console = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .event_format(LineFormat { file: false })
        .with_writer(|| ConsoleWriter(Vec::new()))
        .with_filter(filter_fn(move |meta| {
            // Dependencies only with their warnings, as in the file.
            let ours = meta.target().starts_with("aiperf");
            *meta.level() <= console_level && (ours || *meta.level() <= Level::WARN)
        }));
    // A second init (tests calling main twice) keeps the first logger.
    let _ = tracing_subscriber::registry()
        .with(file)
        .with(console)
        .try_init();
}

/// Opens `<artifact_dir>/logs/aiperf.log` (truncating it), writes what was logged so
/// far, and returns its absolute path.
pub(crate) fn open_log_file(artifact_dir: &Path) -> std::io::Result<PathBuf> {
    let dir = artifact_dir.join("logs");
    std::fs::create_dir_all(&dir)?;
    let path = std::path::absolute(dir.join("aiperf.log"))?;
    let mut file = BufWriter::new(File::create(&path)?);
    let mut state = lock(&LOG_FILE);
    if let LogFile::Waiting(early) = &*state {
        file.write_all(early)?;
    }
    *state = LogFile::Open(file);
    Ok(path)
}

/// Writes buffered log lines to the file.
pub(crate) fn flush() {
    if let LogFile::Open(file) = &mut *lock(&LOG_FILE) {
        let _ = file.flush();
    }
}

/// Stops (true) or resumes (false) console log output.
pub(crate) fn mute_console(muted: bool) {
    CONSOLE_MUTED.store(muted, Ordering::Relaxed);
}

/// Prints console log lines above `bars` (`Some`) until called again with `None`.
pub(crate) fn print_above(bars: Option<MultiProgress>) {
    *lock(&BARS) = bars;
}

/// The latest console log lines that were muted, oldest first.
pub(crate) fn recent_warnings() -> Vec<String> {
    lock(&RECENT).iter().cloned().collect()
}

/// A poisoned lock only means a panic mid-write elsewhere: the log carries on.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

struct FileWriter;

impl Write for FileWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        match &mut *lock(&LOG_FILE) {
            LogFile::Open(file) => file.write_all(bytes)?,
            LogFile::Waiting(early) if early.len() + bytes.len() <= EARLY_BUFFER_LIMIT => {
                early.extend_from_slice(bytes);
            }
            LogFile::Waiting(_) => {}
        }
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Collects one event's line, then prints it or keeps it for the dashboard.
struct ConsoleWriter(Vec<u8>);

impl Write for ConsoleWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for ConsoleWriter {
    fn drop(&mut self) {
        if CONSOLE_MUTED.load(Ordering::Relaxed) {
            let line = String::from_utf8_lossy(&self.0).trim_end().to_owned();
            let mut recent = lock(&RECENT);
            if recent.len() == RECENT_WARNINGS {
                recent.pop_front();
            }
            recent.push_back(line);
            return;
        }
        // Cloned out first: the lock is not held while the bars are suspended.
        let bars = lock(&BARS).clone();
        match bars {
            Some(bars) => bars.suspend(|| std::io::stderr().write_all(&self.0).ok()),
            None => std::io::stderr().write_all(&self.0).ok(),
        };
    }
}

/// `2026-11-22 02:03:08.656 - aiperf.profile - INFO - message` in the file (the Python
/// AIPerf's layout, times in UTC), `warning: message` on the console.
struct LineFormat {
    file: bool,
}

impl<S, N> FormatEvent<S, N> for LineFormat
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        let meta = event.metadata();
        if self.file {
            let source = meta.target().replace("::", ".");
            write!(
                writer,
                "{} - {source} - {} - ",
                utc_timestamp(SystemTime::now()),
                level_name(meta.level())
            )?;
        } else {
            write!(writer, "{}: ", level_name(meta.level()).to_lowercase())?;
        }
        ctx.format_fields(writer.by_ref(), event)?;
        writeln!(writer)
    }
}

/// The Python logging names, which the Python AIPerf's logs use.
fn level_name(level: &Level) -> &'static str {
    match *level {
        Level::TRACE => "TRACE",
        Level::DEBUG => "DEBUG",
        Level::INFO => "INFO",
        Level::WARN => "WARNING",
        Level::ERROR => "ERROR",
    }
}

/// `YYYY-MM-DD HH:MM:SS.mmm` in UTC.
pub(crate) fn utc_timestamp(now: SystemTime) -> String {
    let since_epoch = now.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = since_epoch.as_secs();
    let (year, month, day) = civil_from_days((secs / 86_400) as i64);
    let of_day = secs % 86_400;
    let mut out = String::with_capacity(23);
    let _ = write!(
        out,
        "{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}.{:03}",
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
        since_epoch.subsec_millis()
    );
    out
}

/// The proleptic Gregorian date of a day count since 1970-01-01 (Howard Hinnant's
/// days-to-civil algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_utc_calendar_times_with_milliseconds() {
        let at = |secs: u64, ms: u64| {
            utc_timestamp(UNIX_EPOCH + Duration::from_secs(secs) + Duration::from_millis(ms))
        };
        assert_eq!(at(0, 0), "1970-01-01 00:00:00.000");
        // 2026-11-22 02:03:08.656 UTC, as in the example log
        assert_eq!(at(1_795_312_988, 656), "2026-11-22 02:03:08.656");
        // a leap day
        assert_eq!(at(951_782_400, 5), "2000-02-29 00:00:00.005");
    }
}
