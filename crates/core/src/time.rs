//! Time as the domain sees it: a point in epoch milliseconds, always passed in.
//!
//! Nothing in the core reads the clock; callers (handlers, tests, benches)
//! decide what "now" is.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A point in time, in milliseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(i64);

impl Timestamp {
    pub const fn from_millis(ms: i64) -> Self {
        Self(ms)
    }

    pub const fn from_secs(s: i64) -> Self {
        Self(s.saturating_mul(1000))
    }

    /// The wall clock. Only edges (handlers, CLI) call this.
    pub fn now() -> Self {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Self(i64::try_from(since.as_millis()).unwrap_or(i64::MAX))
    }

    pub const fn as_millis(self) -> i64 {
        self.0
    }

    /// Whole seconds, rounded down.
    pub const fn as_secs(self) -> i64 {
        self.0.div_euclid(1000)
    }

    pub fn plus(self, d: Duration) -> Self {
        let ms = i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        Self(self.0.saturating_add(ms))
    }

    /// `d` before this instant.
    pub fn minus(self, d: Duration) -> Self {
        Self(
            self.0
                .saturating_sub(i64::try_from(d.as_millis()).unwrap_or(i64::MAX)),
        )
    }

    /// How long after `earlier` this is (zero if it is not later).
    pub fn since(self, earlier: Timestamp) -> Duration {
        Duration::from_millis(u64::try_from(self.0 - earlier.0).unwrap_or(0))
    }

    /// UTC text to the second: `2026-11-29T12:00:00Z`.
    pub fn utc(self) -> String {
        let secs = self.as_millis().div_euclid(1000);
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        // Civil-from-days (Howard Hinnant's algorithm).
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z - era * 146_097;
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
            rem / 3600,
            rem % 3600 / 60,
            rem % 60
        )
    }

    /// UTC text to the millisecond, as log lines carry it:
    /// `2026-11-29T12:00:00.250Z`.
    pub fn utc_millis(self) -> String {
        let whole = self.utc();
        let millis = self.as_millis().rem_euclid(1000);
        format!("{}.{millis:03}Z", &whole[..whole.len() - 1])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_millis_keeps_the_milliseconds() {
        assert_eq!(
            Timestamp::from_millis(1_764_417_600_250).utc_millis(),
            "2025-11-29T12:00:00.250Z"
        );
        assert_eq!(
            Timestamp::from_millis(1_764_417_600_000).utc_millis(),
            "2025-11-29T12:00:00.000Z"
        );
    }

    #[test]
    fn secs_round_down_and_plus_adds() {
        let t = Timestamp::from_millis(1_999);
        assert_eq!(t.as_secs(), 1);
        assert_eq!(t.plus(Duration::from_secs(2)).as_millis(), 3_999);
        assert_eq!(t.since(Timestamp::from_millis(2_500)), Duration::ZERO);
        assert_eq!(t.since(Timestamp::from_millis(999)), Duration::from_secs(1));
    }

    #[test]
    fn utc_text_of_known_instants() {
        // `date -u -d @…` agrees with each of these.
        assert_eq!(Timestamp::from_secs(0).utc(), "1970-01-01T00:00:00Z");
        assert_eq!(
            Timestamp::from_secs(951_782_400).utc(),
            "2000-02-29T00:00:00Z"
        );
        assert_eq!(
            Timestamp::from_millis(1_795_953_600_999).utc(),
            "2026-11-29T12:00:00Z"
        );
        assert_eq!(Timestamp::from_secs(-1).utc(), "1969-12-31T23:59:59Z");
    }
}
