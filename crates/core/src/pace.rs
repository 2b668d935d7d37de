//! Pacing the calls to one destination: a token bucket, so that the recovery
//! after an outage (every held message returning at once) does not stampede
//! the CRM past its own rate limit.
//!
//! Pure: the caller passes `now` and does the waiting. Each worker instance
//! keeps its own bucket, so the destination sees at most `rate ×` the action
//! source's `MaximumConcurrency` calls per second (docs/capacity.md).

use std::time::Duration;

use crate::Timestamp;

/// `rate_per_sec` calls per second on average, up to `burst` at once.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenBucket {
    rate_per_sec: f64,
    burst: f64,
    tokens: f64,
    last: Option<Timestamp>,
}

impl TokenBucket {
    /// A full bucket. `rate_per_sec` must be positive and `burst` at least 1
    /// (the config refuses anything else).
    pub fn new(rate_per_sec: f64, burst: u32) -> Self {
        let burst = f64::from(burst.max(1));
        Self {
            rate_per_sec,
            burst,
            tokens: burst,
            last: None,
        }
    }

    /// Takes a token at `now` if there is one (`None`); otherwise leaves the
    /// bucket as it was and says how long until the next one.
    pub fn take(&mut self, now: Timestamp) -> Option<Duration> {
        self.refill(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            return None;
        }
        let missing = 1.0 - self.tokens;
        // A wait past what a Duration holds is a wait past any deadline: the
        // caller gives its turn back.
        Some(Duration::try_from_secs_f64(missing / self.rate_per_sec).unwrap_or(Duration::MAX))
    }

    fn refill(&mut self, now: Timestamp) {
        if let Some(last) = self.last {
            // A clock that steps back refills nothing.
            let elapsed = now.since(last).as_secs_f64();
            self.tokens = (self.tokens + elapsed * self.rate_per_sec).min(self.burst);
        }
        if self.last.is_none_or(|last| now > last) {
            self.last = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: i64) -> Timestamp {
        Timestamp::from_millis(1_700_000_000_000 + ms)
    }

    #[test]
    fn a_full_bucket_admits_its_burst_then_says_when_the_next_token_comes() {
        let mut bucket = TokenBucket::new(2.0, 3);
        assert_eq!(bucket.take(at(0)), None);
        assert_eq!(bucket.take(at(0)), None);
        assert_eq!(bucket.take(at(0)), None);
        assert_eq!(bucket.take(at(0)), Some(Duration::from_millis(500)));
        // Refused takes leave it unchanged.
        assert_eq!(bucket.take(at(100)), Some(Duration::from_millis(400)));
        assert_eq!(bucket.take(at(500)), None);
        assert_eq!(bucket.take(at(500)), Some(Duration::from_millis(500)));
    }

    #[test]
    fn the_rate_holds_over_time_and_idle_time_refills_no_more_than_the_burst() {
        let mut bucket = TokenBucket::new(10.0, 1);
        let admitted = (0..1000i64)
            .filter(|ms| bucket.take(at(*ms)).is_none())
            .count();
        // One second at 10/s: the first token, then one per 100 ms.
        assert_eq!(admitted, 10);
        assert_eq!(bucket.take(at(60_000)), None);
        assert_eq!(bucket.take(at(60_000)), Some(Duration::from_millis(100)));
    }

    #[test]
    fn a_tiny_rate_waits_for_ever_instead_of_panicking() {
        // The config takes any positive rate; 1e-300 per second once made
        // Duration::from_secs_f64 panic in the worker (red team R16).
        let mut bucket = TokenBucket::new(1e-300, 1);
        assert_eq!(bucket.take(at(0)), None);
        assert_eq!(bucket.take(at(1)), Some(Duration::MAX));
    }

    #[test]
    fn a_clock_that_steps_back_refills_nothing() {
        let mut bucket = TokenBucket::new(1.0, 1);
        assert_eq!(bucket.take(at(5_000)), None);
        assert_eq!(bucket.take(at(1_000)), Some(Duration::from_secs(1)));
        assert_eq!(bucket.take(at(5_500)), Some(Duration::from_millis(500)));
    }
}
