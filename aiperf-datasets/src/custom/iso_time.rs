//! ISO 8601 date-times of trace records (SageMaker `inferenceTime`, TraceLab event
//! timestamps) as Unix milliseconds.

/// Milliseconds since the Unix epoch of an ISO 8601 date-time
/// (`YYYY-MM-DDTHH:MM:SS[.fraction][Z|±HH:MM]`). A time without an offset is taken as
/// UTC: traces are replayed relative to their earliest record, so only the differences
/// count, and UTC keeps them free of the replaying machine's time zone.
pub fn unix_ms(text: &str) -> Option<f64> {
    let (date, time) = text.split_once(['T', ' '])?;
    let mut date_parts = date.splitn(3, '-');
    let year: i64 = date_parts.next()?.parse().ok()?;
    let month: i64 = date_parts.next()?.parse().ok()?;
    let day: i64 = date_parts.next()?.parse().ok()?;
    let (clock, offset_minutes) = split_offset(time)?;
    let mut clock_parts = clock.splitn(3, ':');
    let hour: i64 = clock_parts.next()?.parse().ok()?;
    let minute: i64 = clock_parts.next()?.parse().ok()?;
    let seconds: f64 = clock_parts.next().unwrap_or("0").parse().ok()?;
    let valid = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && (0..24).contains(&hour)
        && (0..60).contains(&minute)
        && (0.0..61.0).contains(&seconds);
    if !valid {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let whole_minutes = days * 1440 + hour * 60 + minute - offset_minutes;
    Some(whole_minutes as f64 * 60_000.0 + seconds * 1000.0)
}

/// The clock part of a time and its UTC offset in minutes.
fn split_offset(time: &str) -> Option<(&str, i64)> {
    if let Some(clock) = time.strip_suffix(['Z', 'z']) {
        return Some((clock, 0));
    }
    match time.rfind(['+', '-']) {
        None => Some((time, 0)),
        Some(at) => {
            let (clock, offset) = time.split_at(at);
            let sign = if offset.starts_with('-') { -1 } else { 1 };
            let (hours, minutes) = offset[1..].split_once(':').unwrap_or((&offset[1..], "0"));
            let minutes = hours.parse::<i64>().ok()? * 60 + minutes.parse::<i64>().ok()?;
            Some((clock, sign * minutes))
        }
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// days-from-civil algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let shifted_month = (month + 9) % 12;
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times_become_unix_milliseconds() {
        assert_eq!(unix_ms("1970-01-01T00:00:00Z"), Some(0.0));
        assert_eq!(unix_ms("2024-03-01T00:00:01.5Z"), Some(1_709_251_201_500.0));
        assert_eq!(
            unix_ms("2024-03-01T02:00:01.5+02:00"),
            unix_ms("2024-03-01T00:00:01.5Z")
        );
        assert_eq!(
            unix_ms("2024-02-29T23:30:00-00:30"),
            unix_ms("2024-03-01T00:00:00")
        );
        for bad in [
            "2024-13-01T00:00:00Z",
            "yesterday",
            "2024-01-01",
            "2024-01-01T25:00Z",
        ] {
            assert_eq!(unix_ms(bad), None, "{bad}");
        }
    }
}
