//! The request ids seen per scope, for ID_REUSED and for telling a stray response
//! from a late one. A day-long capture sends millions of requests, so the log is
//! bounded: each scope remembers its last `PER_SCOPE` ids, and all scopes together
//! at most `TOTAL` (past it, the scopes idle longest are forgotten whole). A reuse of
//! an id older than that is not reported; real clients count ids up, so a reuse is
//! almost always of a recent one.

use super::http::SeenRequest;
use super::Scope;
use crate::jsonrpc::Id;
use foldhash::{HashMap, HashSet};
use std::collections::VecDeque;

/// Ids remembered per scope.
pub const PER_SCOPE: usize = 4096;
/// Ids remembered over all scopes of an input.
pub const TOTAL: usize = 1 << 16;

#[derive(Debug, Default)]
pub struct ScopeIds {
    seen: HashMap<Id, SeenRequest>,
    order: VecDeque<Id>,
    /// When the scope last sent a request (`IdLog::tick`).
    last: u64,
    /// Some of its ids were pushed out by newer ones.
    forgot: bool,
}

impl ScopeIds {
    pub fn get(&self, id: &Id) -> Option<&SeenRequest> {
        self.seen.get(id)
    }

    pub fn get_mut(&mut self, id: &Id) -> Option<&mut SeenRequest> {
        self.seen.get_mut(id)
    }

    pub fn contains_key(&self, id: &Id) -> bool {
        self.seen.contains_key(id)
    }
}

/// Every scope's ids.
#[derive(Debug, Default)]
pub struct IdLog {
    scopes: HashMap<Scope, ScopeIds>,
    total: usize,
    tick: u64,
    /// Some scope was forgotten whole (`forget_idle`).
    forgot_scopes: bool,
    /// The scopes forgotten whole, so that one that comes back (a session that was
    /// idle while others were busy) still says it may have forgotten ids; past
    /// `MAX_FORGOTTEN`, every scope that comes back may have.
    forgotten: HashSet<Scope>,
    forgot_many: bool,
}

/// Scopes forgotten whole that are remembered by name.
const MAX_FORGOTTEN: usize = 16_384;

impl IdLog {
    pub fn get(&self, scope: &Scope) -> Option<&ScopeIds> {
        self.scopes.get(scope)
    }

    pub fn get_mut(&mut self, scope: &Scope) -> Option<&mut ScopeIds> {
        self.scopes.get_mut(scope)
    }

    /// Remembers `id` as the newest request of `scope`.
    pub fn insert(&mut self, scope: &Scope, id: Id, seen: SeenRequest) {
        self.tick += 1;
        let s = match self.scopes.get_mut(scope) {
            Some(s) => s,
            None => {
                let forgot = self.forgot_many || self.forgotten.remove(scope);
                let s = self.scopes.entry(scope.clone()).or_default();
                s.forgot = forgot;
                s
            }
        };
        s.last = self.tick;
        if s.seen.insert(id.clone(), seen).is_none() {
            s.order.push_back(id);
            self.total += 1;
        }
        while s.order.len() > PER_SCOPE {
            if let Some(old) = s.order.pop_front() {
                s.seen.remove(&old);
                s.forgot = true;
                self.total -= 1;
            }
        }
        if self.total > TOTAL {
            self.forget_idle();
        }
    }

    /// Forgets the scopes idle longest until half of `TOTAL` ids remain: one sort
    /// per `TOTAL / 2` requests, so the cost per request stays constant.
    fn forget_idle(&mut self) {
        let mut by_age: Vec<(u64, Scope, usize)> = self
            .scopes
            .iter()
            .map(|(k, s)| (s.last, k.clone(), s.order.len()))
            .collect();
        by_age.sort_unstable_by_key(|(last, _, _)| *last);
        for (_, scope, n) in by_age {
            if self.total <= TOTAL / 2 {
                break;
            }
            self.scopes.remove(&scope);
            self.forgot_scopes = true;
            self.total -= n;
            if self.forgotten.len() >= MAX_FORGOTTEN {
                self.forgotten.clear();
                self.forgot_many = true;
            }
            self.forgotten.insert(scope);
        }
    }

    /// Whether a request of `scope` may have been forgotten: then an id the log does
    /// not hold may still have been sent, and a response to it is no stray.
    pub fn may_have_forgotten(&self, scope: &Scope) -> bool {
        match self.scopes.get(scope) {
            Some(s) => s.forgot,
            None => self.forgot_scopes,
        }
    }

    /// Ids remembered.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.total
    }
}

/// The last `cap` ids of a stream of them (stdio responses already seen).
#[derive(Debug, Default)]
pub struct RecentIds {
    set: foldhash::HashSet<Id>,
    order: VecDeque<Id>,
}

/// stdio responses remembered, to tell a duplicate from a stray.
pub const RECENT_ANSWERS: usize = 1 << 16;

impl RecentIds {
    pub fn insert(&mut self, id: Id) {
        if self.set.insert(id.clone()) {
            self.order.push_back(id);
        }
        while self.order.len() > RECENT_ANSWERS {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }

    pub fn contains(&self, id: &Id) -> bool {
        self.set.contains(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen() -> SeenRequest {
        SeenRequest {
            method: "tools/call".into(),
            key: 0,
            answered: true,
        }
    }

    #[test]
    fn a_long_session_keeps_its_recent_ids_and_forgets_old_ones() {
        let mut log = IdLog::default();
        let s = Scope::session("a");
        for n in 0..PER_SCOPE as i64 {
            log.insert(&s, Id::number(n), seen());
        }
        assert!(!log.may_have_forgotten(&s), "every id is still held");
        assert!(!log.may_have_forgotten(&Scope::session("b")));
        for n in PER_SCOPE as i64..(PER_SCOPE as i64 + 10) {
            log.insert(&s, Id::number(n), seen());
        }
        assert_eq!(log.len(), PER_SCOPE);
        assert!(log.may_have_forgotten(&s));
        assert!(
            !log.may_have_forgotten(&Scope::session("b")),
            "no scope was forgotten whole"
        );
        let ids = log.get(&s).unwrap();
        assert!(!ids.contains_key(&Id::number(0)), "the oldest is forgotten");
        assert!(ids.contains_key(&Id::number(PER_SCOPE as i64 + 9)));
    }

    #[test]
    fn many_sessions_stay_within_the_total_and_the_busiest_recent_survive() {
        let mut log = IdLog::default();
        let n_scopes = TOTAL / 4 + 100;
        for i in 0..n_scopes {
            let s = Scope::session(&i.to_string());
            for n in 0..5 {
                log.insert(&s, Id::number(n), seen());
            }
        }
        assert!(log.len() <= TOTAL, "{}", log.len());
        let last = Scope::session(&(n_scopes - 1).to_string());
        assert!(log.get(&last).is_some(), "the latest scope is kept");
        assert!(
            log.get(&Scope::session("0")).is_none(),
            "the idlest is gone"
        );
        assert!(log.may_have_forgotten(&Scope::session("0")));
        assert!(!log.may_have_forgotten(&last), "the latest kept all five");
        // A scope forgotten whole that sends again (a session idle while others
        // were busy) may have forgotten ids; a new one has not.
        log.insert(&Scope::session("0"), Id::number(9), seen());
        assert!(log.may_have_forgotten(&Scope::session("0")));
        log.insert(&Scope::session("new"), Id::number(9), seen());
        assert!(!log.may_have_forgotten(&Scope::session("new")));
    }
}
