//! Rate limits of MCP tool calls: a token bucket per tool (capacity 30, refill 0.5/s, as
//! upstream) and one shared by every tool (capacity 60, refill 1/s). A call takes a token from
//! both or from neither. `STOAT_MCP_RATE` and `STOAT_MCP_RATE_SHARED` (`capacity/refill_per_sec`)
//! change them, e.g. for tests. A refusal is `rate_limited` with a retry hint.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use stoat_core::{Env, Error, Result};

/// A bucket's shape.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    pub capacity: f64,
    pub refill_per_sec: f64,
}

pub const PER_TOOL: Rate = Rate {
    capacity: 30.0,
    refill_per_sec: 0.5,
};
pub const SHARED: Rate = Rate {
    capacity: 60.0,
    refill_per_sec: 1.0,
};

impl Rate {
    /// Parses `capacity/refill_per_sec`, e.g. `30/0.5`.
    pub fn parse(text: &str) -> Option<Rate> {
        let (capacity, refill) = text.split_once('/')?;
        let capacity: f64 = capacity.trim().parse().ok()?;
        let refill_per_sec: f64 = refill.trim().parse().ok()?;
        let sane = |v: f64| v.is_finite() && v > 0.0;
        (sane(capacity) && capacity >= 1.0 && sane(refill_per_sec)).then_some(Rate {
            capacity,
            refill_per_sec,
        })
    }

    /// Reads `var` from the environment, or `default` when unset; a bad value is `usage`.
    pub fn from_env(env: &Env, var: &str, default: Rate) -> Result<Rate> {
        match env.get(var) {
            None => Ok(default),
            Some(text) => Rate::parse(text).ok_or_else(|| {
                Error::Usage(format!(
                    "{var}={text:?}: expected capacity/refill_per_sec, e.g. 30/0.5"
                ))
            }),
        }
    }
}

#[derive(Debug, Clone)]
struct Bucket {
    rate: Rate,
    tokens: f64,
    last: Instant,
}

impl Bucket {
    fn full(rate: Rate, now: Instant) -> Bucket {
        Bucket {
            rate,
            tokens: rate.capacity,
            last: now,
        }
    }

    fn refill(&mut self, now: Instant) {
        let elapsed = now.saturating_duration_since(self.last).as_secs_f64();
        self.tokens = (self.tokens + elapsed * self.rate.refill_per_sec).min(self.rate.capacity);
        self.last = now;
    }

    /// How long until one token is there (zero when it already is).
    fn wait(&self) -> Duration {
        if self.tokens >= 1.0 {
            return Duration::ZERO;
        }
        Duration::from_secs_f64((1.0 - self.tokens) / self.rate.refill_per_sec)
    }
}

/// Every bucket of one server.
#[derive(Debug)]
pub struct RateLimiter {
    per_tool_rate: Rate,
    per_tool: HashMap<String, Bucket>,
    shared: Bucket,
}

impl RateLimiter {
    pub fn new(per_tool: Rate, shared: Rate, now: Instant) -> RateLimiter {
        RateLimiter {
            per_tool_rate: per_tool,
            per_tool: HashMap::new(),
            shared: Bucket::full(shared, now),
        }
    }

    /// Reads both rates from the environment.
    pub fn from_env(env: &Env) -> Result<RateLimiter> {
        Ok(RateLimiter::new(
            Rate::from_env(env, "STOAT_MCP_RATE", PER_TOOL)?,
            Rate::from_env(env, "STOAT_MCP_RATE_SHARED", SHARED)?,
            Instant::now(),
        ))
    }

    /// Takes a token for `tool` from its bucket and the shared one, or refuses with
    /// `rate_limited` and the seconds to wait (at least 1).
    pub fn take(&mut self, tool: &str, now: Instant) -> std::result::Result<(), Refusal> {
        let rate = self.per_tool_rate;
        let bucket = self
            .per_tool
            .entry(tool.to_owned())
            .or_insert_with(|| Bucket::full(rate, now));
        bucket.refill(now);
        self.shared.refill(now);
        let (wait, which) = if bucket.wait() > Duration::ZERO {
            (bucket.wait(), tool.to_owned())
        } else if self.shared.wait() > Duration::ZERO {
            (self.shared.wait(), "all tools together".to_owned())
        } else {
            bucket.tokens -= 1.0;
            self.shared.tokens -= 1.0;
            return Ok(());
        };
        Err(Refusal {
            retry_after_seconds: wait.as_secs_f64().ceil().max(1.0) as u64,
            bucket: which,
        })
    }
}

/// A refused call: which bucket ran dry and when to try again.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub bucket: String,
    pub retry_after_seconds: u64,
}

impl Refusal {
    pub fn to_error(&self) -> Error {
        Error::RateLimited(format!(
            "rate limit reached for {}; retry in about {}s",
            self.bucket, self.retry_after_seconds
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_rates() {
        assert_eq!(
            Rate::parse("30/0.5"),
            Some(Rate {
                capacity: 30.0,
                refill_per_sec: 0.5
            })
        );
        for bad in ["", "30", "0/1", "3/0", "x/1", "1/-1", "1/inf", "0.5/1"] {
            assert_eq!(Rate::parse(bad), None, "{bad}");
        }
        let env = Env::from_pairs([("STOAT_MCP_RATE", "nope")]);
        assert!(RateLimiter::from_env(&env).is_err());
    }

    #[test]
    fn per_tool_bucket_empties_and_refills() {
        let start = Instant::now();
        let mut limiter = RateLimiter::new(
            PER_TOOL,
            Rate {
                capacity: 1000.0,
                refill_per_sec: 1.0,
            },
            start,
        );
        for _ in 0..30 {
            limiter.take("ls", start).unwrap();
        }
        let refusal = limiter.take("ls", start).unwrap_err();
        assert_eq!(refusal.bucket, "ls");
        assert_eq!(refusal.retry_after_seconds, 2);
        assert!(refusal.to_error().to_string().contains("retry in about 2s"));
        // another tool has its own bucket
        limiter.take("get", start).unwrap();
        // 0.5/s: one token after 2 s
        limiter.take("ls", start + Duration::from_secs(2)).unwrap();
        assert!(limiter.take("ls", start + Duration::from_secs(2)).is_err());
    }

    #[test]
    fn shared_bucket_limits_all_tools_and_takes_from_both_or_neither() {
        let start = Instant::now();
        let tiny = Rate {
            capacity: 2.0,
            refill_per_sec: 0.1,
        };
        let mut limiter = RateLimiter::new(PER_TOOL, tiny, start);
        limiter.take("a", start).unwrap();
        limiter.take("b", start).unwrap();
        let refusal = limiter.take("c", start).unwrap_err();
        assert_eq!(refusal.bucket, "all tools together");
        assert_eq!(refusal.retry_after_seconds, 10);
        // "c" lost no token to the refusal
        assert_eq!(limiter.per_tool["c"].tokens, 30.0);
    }
}
