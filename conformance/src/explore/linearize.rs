//! Owns the linearizability check of a concurrent history: is there one sequential order of
//! its operations that keeps their real-time order (an operation that ended before another
//! began comes first) and that the model accepts answer by answer? The search is the one
//! Wing and Gong describe, with Lowe's memo of (operations done, state) pairs already seen:
//! depth first, at each point trying every pending operation that no other pending
//! operation precedes in real time.

use std::collections::HashSet;
use std::time::Duration;

use serde_json::Value;

use super::model::{self, Cmd, Model};

/// The most operations one history may hold (the set of those done is a `u64`).
pub const MAX_EVENTS: usize = 64;

/// One completed operation of a concurrent history.
#[derive(Clone, Debug)]
pub struct Event {
    pub cmd: Cmd,
    /// When it was started and when its process had exited, from one clock.
    pub start: Duration,
    pub end: Duration,
    /// Its result line.
    pub result: Value,
}

/// The check's answer.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// An order the model accepts (indices into the events).
    Linear(Vec<usize>),
    /// No order: the longest accepted prefix the search reached, and why each operation
    /// that may come next there was refused.
    Not {
        prefix: Vec<usize>,
        refusals: Vec<(usize, String)>,
    },
}

struct Search<'a> {
    events: &'a [Event],
    seen: HashSet<(u64, String)>,
    best: (Vec<usize>, Vec<(usize, String)>),
    path: Vec<usize>,
}

/// Searches an order of `events` the model accepts, starting from `start`.
pub fn check(events: &[Event], start: &Model) -> Outcome {
    assert!(
        events.len() <= MAX_EVENTS,
        "a concurrent history holds at most {MAX_EVENTS} operations"
    );
    let mut search = Search {
        events,
        seen: HashSet::new(),
        best: (Vec::new(), Vec::new()),
        path: Vec::new(),
    };
    if search.step(0, start) {
        Outcome::Linear(search.path)
    } else {
        let (prefix, refusals) = search.best;
        Outcome::Not { prefix, refusals }
    }
}

impl Search<'_> {
    /// True when the pending operations (not in `done`) can follow from `state`.
    fn step(&mut self, done: u64, state: &Model) -> bool {
        let all = if self.events.len() == 64 {
            u64::MAX
        } else {
            (1u64 << self.events.len()) - 1
        };
        if done == all {
            return true;
        }
        if !self.seen.insert((done, format!("{state:?}"))) {
            return false;
        }
        let pending: Vec<usize> = (0..self.events.len())
            .filter(|i| done & (1 << i) == 0)
            .collect();
        let mut refusals = Vec::new();
        for &i in &pending {
            let event = &self.events[i];
            // An operation another pending one precedes in real time cannot come next.
            if pending.iter().any(|&j| self.events[j].end < event.start) {
                continue;
            }
            match model::judge(&state.predict(&event.cmd), &event.result) {
                Ok((next, ..)) => {
                    self.path.push(i);
                    if self.step(done | (1 << i), &next) {
                        return true;
                    }
                    self.path.pop();
                }
                Err(problem) => refusals.push((i, problem)),
            }
        }
        if self.path.len() >= self.best.0.len() && !refusals.is_empty() {
            self.best = (self.path.clone(), refusals);
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn create(name: &str) -> Cmd {
        Cmd::Create {
            name: name.into(),
            cpus: None,
            ram: None,
            access: None,
            disk: false,
        }
    }

    fn vm(name: &str, cpus: u64, ram: u64) -> Value {
        json!({"ok": true, "data": {"vm": {"name": name, "state": "stopped", "cpus": cpus,
            "ram_mb": ram, "agent_access": "manage", "allow_exec": true, "forwards": [],
            "ssh_port": 2200}}})
    }

    fn taken() -> Value {
        json!({"ok": false, "error": {"code": "name_taken", "message": "taken"}})
    }

    fn event(cmd: Cmd, start: u64, end: u64, result: Value) -> Event {
        Event {
            cmd,
            start: ms(start),
            end: ms(end),
            result,
        }
    }

    #[test]
    fn two_overlapping_creates_linearize_only_when_one_lost() {
        // The loser answered first: only the order winner-then-loser explains it.
        let one_won = [
            event(create("a"), 0, 10, taken()),
            event(create("a"), 1, 12, vm("a", 4, 4096)),
        ];
        assert_eq!(
            check(&one_won, &Model::default()),
            Outcome::Linear(vec![1, 0])
        );
        let both_won = [
            event(create("a"), 0, 10, vm("a", 4, 4096)),
            event(create("a"), 1, 12, vm("a", 4, 4096)),
        ];
        let Outcome::Not { prefix, refusals } = check(&both_won, &Model::default()) else {
            panic!("two winners linearize");
        };
        assert_eq!(prefix.len(), 1);
        assert!(refusals[0].1.contains("name_taken"), "{refusals:?}");
    }

    #[test]
    fn real_time_order_is_respected_and_a_lost_update_is_caught() {
        // The same two answers, but the taken one ended before the winner began: no order.
        let ordered = [
            event(create("a"), 0, 5, taken()),
            event(create("a"), 6, 12, vm("a", 4, 4096)),
        ];
        assert!(matches!(
            check(&ordered, &Model::default()),
            Outcome::Not { .. }
        ));
        let update = |cpus: Option<u64>, ram: Option<u64>| Cmd::Update {
            name: "a".into(),
            cpus,
            ram,
            access: None,
        };
        let updated = |cpus: u64, ram: u64, changed: &str| {
            let mut answer = vm("a", cpus, ram);
            answer["data"]["changed"] = json!([changed]);
            answer["data"]["applies_at"] = json!("now");
            answer
        };
        let get = Cmd::Get { name: "a".into() };
        // Each update saw the other's field unchanged, and the final get lost the cpus one.
        let lost = [
            event(create("a"), 0, 5, vm("a", 4, 4096)),
            event(update(Some(2), None), 6, 20, updated(2, 4096, "cpus")),
            event(update(None, Some(512)), 7, 21, updated(4, 512, "ram")),
            event(get.clone(), 30, 31, vm("a", 4, 512)),
        ];
        assert!(matches!(
            check(&lost, &Model::default()),
            Outcome::Not { .. }
        ));
        let kept = [
            event(create("a"), 0, 5, vm("a", 4, 4096)),
            event(update(Some(2), None), 6, 20, updated(2, 4096, "cpus")),
            event(update(None, Some(512)), 7, 21, updated(2, 512, "ram")),
            event(get, 30, 31, vm("a", 2, 512)),
        ];
        assert_eq!(
            check(&kept, &Model::default()),
            Outcome::Linear(vec![0, 1, 2, 3])
        );
    }
}
