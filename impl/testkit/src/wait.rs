//! Waiting on a condition, never on a guessed pause: [`eventually`] asks again (a little
//! slower each time) until the condition holds, and fails the test, at the caller's line and
//! with the last thing it saw, once the limit is up.

use std::fmt::Display;
use std::time::{Duration, Instant};

/// What a condition [`eventually`] asks answers: `true`, `Some(value)` or `Ok(value)` when it
/// holds; `Err(why)` says what it saw instead, for the failure message.
pub trait Outcome {
    type Value;
    fn settled(self) -> Result<Self::Value, Option<String>>;
}

impl Outcome for bool {
    type Value = ();
    fn settled(self) -> Result<(), Option<String>> {
        if self {
            Ok(())
        } else {
            Err(None)
        }
    }
}

impl<T> Outcome for Option<T> {
    type Value = T;
    fn settled(self) -> Result<T, Option<String>> {
        self.ok_or(None)
    }
}

impl<T, E: Display> Outcome for Result<T, E> {
    type Value = T;
    fn settled(self) -> Result<T, Option<String>> {
        self.map_err(|why| Some(why.to_string()))
    }
}

/// Asks `condition` until it holds and returns what it answered; panics once `limit` has
/// passed without it (a condition may itself panic to fail at once, e.g. when the process
/// it waits on has ended). The pauses between asks start at 5 ms and grow to 200 ms.
#[track_caller]
pub fn eventually<O: Outcome>(limit: Duration, mut condition: impl FnMut() -> O) -> O::Value {
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_millis(5);
    loop {
        let last = match condition().settled() {
            Ok(value) => return value,
            Err(last) => last,
        };
        let now = Instant::now();
        if now >= deadline {
            match last {
                Some(why) => panic!("the condition did not hold within {limit:?}: {why}"),
                None => panic!("the condition did not hold within {limit:?}"),
            }
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn returns_what_the_condition_answered_once_it_holds() {
        let mut asked = 0;
        let value = eventually(Duration::from_secs(5), || {
            asked += 1;
            (asked == 3).then_some(asked * 10)
        });
        assert_eq!(value, 30);
    }

    #[test]
    #[should_panic(expected = "did not hold within 50ms: still 7")]
    fn fails_past_the_limit_with_the_last_thing_seen() {
        eventually(Duration::from_millis(50), || Err::<(), _>("still 7"));
    }
}
