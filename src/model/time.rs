//! Timestamps as every stage sees them: nanoseconds since the Unix epoch, parsed from
//! RFC 3339 text (JSONL, HAR) or built from capture clocks (pcap). Written by hand
//! because the only need is RFC 3339 in and out, which does not justify a date crate.

use std::fmt;

/// A point in time, nanoseconds since 1970-01-01T00:00:00Z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

impl Timestamp {
    /// From seconds and nanoseconds since the epoch (pcap clocks).
    pub fn from_parts(secs: i64, nanos: u32) -> Timestamp {
        Timestamp(
            secs.saturating_mul(1_000_000_000)
                .saturating_add(nanos as i64),
        )
    }

    /// Milliseconds from `self` to `later` (negative when `later` is earlier).
    pub fn millis_until(self, later: Timestamp) -> i64 {
        later.0.saturating_sub(self.0) / 1_000_000
    }

    /// Adds a duration in milliseconds.
    pub fn plus_millis(self, ms: f64) -> Timestamp {
        Timestamp(self.0.saturating_add((ms * 1_000_000.0) as i64))
    }

    /// Parses RFC 3339 / ISO 8601 date-times such as `2026-12-02T17:00:00.123Z` or
    /// `2026-12-02 17:00:00+01:00`, and plain numbers taken as epoch seconds
    /// (or milliseconds when larger than 10^11, as JavaScript loggers write them).
    pub fn parse(text: &str) -> Option<Timestamp> {
        let t = text.trim();
        let b = t.as_bytes();
        // A date has a dash after four digits, which no number has there: the number
        // parse, which a date fails only after trying, is left out for it.
        let dated = b.get(4) == Some(&b'-') && b[..4].iter().all(u8::is_ascii_digit);
        if let Some(n) = (!dated).then(|| t.parse::<f64>().ok()).flatten() {
            if !n.is_finite() {
                return None;
            }
            let secs = if n.abs() > 1e11 { n / 1000.0 } else { n };
            return Some(Timestamp((secs * 1e9) as i64));
        }
        if b.len() < 19 {
            return None;
        }
        let num = |r: std::ops::Range<usize>| -> Option<i64> {
            b.get(r)?.iter().try_fold(0i64, |n, &c| {
                c.is_ascii_digit().then(|| n * 10 + i64::from(c - b'0'))
            })
        };
        let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
        if b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
            return None;
        }
        let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
        if b[13] != b':' || b[16] != b':' {
            return None;
        }
        if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
            return None;
        }
        if second > 60 {
            return None;
        }
        let mut i = 19;
        let mut nanos: i64 = 0;
        if b.get(i) == Some(&b'.') || b.get(i) == Some(&b',') {
            i += 1;
            let start = i;
            while i < b.len() && b[i].is_ascii_digit() {
                if i - start < 9 {
                    nanos = nanos * 10 + (b[i] - b'0') as i64;
                }
                i += 1;
            }
            let digits = (i - start).min(9);
            if digits == 0 {
                return None;
            }
            nanos *= 10i64.pow(9 - digits as u32);
        }
        let offset_secs = match b.get(i) {
            None => 0, // no zone: read as UTC, the common case for loggers that omit it
            Some(b'Z') | Some(b'z') if i + 1 == b.len() => 0,
            Some(&sign @ (b'+' | b'-')) => {
                let rest = t.get(i + 1..)?;
                let (h, m) = match rest.len() {
                    5 if rest.as_bytes()[2] == b':' => (rest.get(0..2)?, rest.get(3..5)?),
                    4 => (rest.get(0..2)?, rest.get(2..4)?),
                    2 => (rest, "00"),
                    _ => return None,
                };
                let off = h.parse::<i64>().ok()? * 3600 + m.parse::<i64>().ok()? * 60;
                if sign == b'+' {
                    off
                } else {
                    -off
                }
            }
            _ => return None,
        };
        let days = days_from_civil(year, month, day);
        let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_secs;
        // Nanoseconds in an i64 reach the year 2262; later dates are not timestamps
        // any recorder writes, so they read as none rather than wrapping.
        secs.checked_mul(1_000_000_000)
            .and_then(|n| n.checked_add(nanos))
            .map(Timestamp)
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

impl serde::Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for Timestamp {
    /// RFC 3339 text, as `Serialize` writes it (stage 2 reads stage 1's records).
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Timestamp::parse(&s)
            .ok_or_else(|| serde::de::Error::custom(format!("not an RFC 3339 time: {s:?}")))
    }
}

impl Timestamp {
    /// RFC 3339 in UTC with millisecond precision (microseconds when present), as
    /// bytes on the stack, for years 0 to 9999 (`None` for others, which `Display`
    /// writes the general way). Records write these straight in, without the
    /// formatting machinery.
    pub fn rfc3339(self) -> Option<([u8; 27], usize)> {
        let secs = self.0.div_euclid(1_000_000_000);
        let nanos = self.0.rem_euclid(1_000_000_000);
        let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
        let sod = secs.rem_euclid(86_400);
        let (value, width) = fraction(nanos);
        let year = u32::try_from(y).ok().filter(|y| *y <= 9999)?;
        let mut buf = *b"0000-00-00T00:00:00.000000Z";
        let mut put = |at: usize, width: usize, mut v: u64| {
            for i in (at..at + width).rev() {
                buf[i] = b'0' + (v % 10) as u8;
                v /= 10;
            }
        };
        put(0, 4, u64::from(year));
        put(5, 2, mo as u64);
        put(8, 2, d as u64);
        put(11, 2, (sod / 3600) as u64);
        put(14, 2, ((sod / 60) % 60) as u64);
        put(17, 2, (sod % 60) as u64);
        put(20, width, value as u64);
        buf[20 + width] = b'Z';
        Some((buf, 21 + width))
    }
}

/// Milliseconds, or microseconds when there are any, with their width.
fn fraction(nanos: i64) -> (i64, usize) {
    if nanos % 1_000_000 == 0 {
        (nanos / 1_000_000, 3)
    } else {
        (nanos / 1_000, 6)
    }
}

impl fmt::Display for Timestamp {
    /// RFC 3339 in UTC with millisecond precision (microseconds when present).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some((buf, len)) = self.rfc3339() {
            // Digits into a stack buffer: every call record prints two or more of
            // these, and the formatting machinery cost 3% of writing records.
            let text = std::str::from_utf8(&buf[..len]).map_err(|_| fmt::Error)?;
            return f.write_str(text);
        }
        let secs = self.0.div_euclid(1_000_000_000);
        let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
        let sod = secs.rem_euclid(86_400);
        write_general(f, y, mo, d, sod, fraction(self.0.rem_euclid(1_000_000_000)))
    }
}

fn write_general(
    f: &mut fmt::Formatter<'_>,
    y: i64,
    mo: i64,
    d: i64,
    sod: i64,
    (value, width): (i64, usize),
) -> fmt::Result {
    write!(
        f,
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{value:0width$}Z",
        sod / 3600,
        (sod / 60) % 60,
        sod % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: the general path, for every timestamp.
    struct General(Timestamp);
    impl fmt::Display for General {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            let t = self.0 .0;
            let (secs, nanos) = (t.div_euclid(1_000_000_000), t.rem_euclid(1_000_000_000));
            let (y, mo, d) = civil_from_days(secs.div_euclid(86_400));
            let fraction = if nanos % 1_000_000 == 0 {
                (nanos / 1_000_000, 3)
            } else {
                (nanos / 1_000, 6)
            };
            write_general(f, y, mo, d, secs.rem_euclid(86_400), fraction)
        }
    }

    #[test]
    fn the_fast_digits_equal_the_general_formatting() {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..200_000 {
            // Spread over years 1970..2300 with every kind of fraction, plus the edges.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let nanos = match i % 3 {
                0 => (x % 10_000_000_000_000_000_000) as i64,
                1 => (x % 10_000_000_000) as i64 * 1_000_000,
                _ => (x % 10_000_000_000_000) as i64 * 1_000,
            };
            let t = Timestamp(nanos);
            assert_eq!(t.to_string(), General(t).to_string(), "{nanos}");
        }
        // Nanoseconds in an i64 span the years 1677 to 2262.
        for nanos in [0, -1, i64::MIN, i64::MAX] {
            let t = Timestamp(nanos);
            assert_eq!(t.to_string(), General(t).to_string(), "{nanos}");
        }
    }

    #[test]
    fn round_trips_rfc3339() {
        let t = Timestamp::parse("2026-12-02T17:00:00.123Z").unwrap();
        assert_eq!(t.to_string(), "2026-12-02T17:00:00.123Z");
        let t2 = Timestamp::parse("2026-12-02T18:00:00.123+01:00").unwrap();
        assert_eq!(t, t2);
        let t3 = Timestamp::parse("2026-12-02 17:00:00.123456789Z").unwrap();
        assert_eq!(t3.to_string(), "2026-12-02T17:00:00.123456Z");
    }

    #[test]
    fn epoch_numbers_and_garbage() {
        assert_eq!(
            Timestamp::parse("0").unwrap().to_string(),
            "1970-01-01T00:00:00.000Z"
        );
        assert_eq!(
            Timestamp::parse("1700000000000").unwrap(),
            Timestamp::parse("1700000000").unwrap()
        );
        assert_eq!(Timestamp::parse("yesterday"), None);
        assert_eq!(Timestamp::parse("2026-13-02T17:00:00Z"), None);
        assert_eq!(Timestamp::parse("2026-12-02T17:00:00Q"), None);
        // Past what nanoseconds in an i64 can hold: none, not an overflow.
        assert_eq!(Timestamp::parse("9999-12-31T23:59:59Z"), None);
        assert_eq!(Timestamp::parse("1e300"), Some(Timestamp(i64::MAX)));
        assert_eq!(
            Timestamp(i64::MIN).millis_until(Timestamp(i64::MAX)),
            i64::MAX / 1_000_000
        );
    }

    proptest::proptest! {
        /// What is printed parses back to itself, and epoch numbers (seconds, or
        /// milliseconds past 10^11, read as floats) parse to their instant: dates
        /// and numbers are told apart by their shape.
        #[test]
        fn printed_times_and_epoch_numbers_parse_back(
            micros in 0i64..9_000_000_000_000_000,
            secs in 0i64..2_000_000_000,
        ) {
            let t = Timestamp(micros * 1_000);
            proptest::prop_assert_eq!(Timestamp::parse(&t.to_string()), Some(t));
            proptest::prop_assert_eq!(
                Timestamp::parse(&secs.to_string()),
                Some(Timestamp(secs * 1_000_000_000))
            );
            let millis = secs * 1_000 + 123;
            if millis > 100_000_000_000 {
                let got = Timestamp::parse(&millis.to_string()).unwrap();
                proptest::prop_assert!((got.0 - millis * 1_000_000).abs() < 1_000, "{millis}");
            }
        }
    }

    #[test]
    fn millis_between() {
        let a = Timestamp::parse("2026-12-02T17:00:00Z").unwrap();
        let b = Timestamp::parse("2026-12-02T17:00:01.500Z").unwrap();
        assert_eq!(a.millis_until(b), 1500);
    }
}
