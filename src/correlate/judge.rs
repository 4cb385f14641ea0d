//! Stage 2, the judge: the cross-call rules over call facts in request order. Each
//! call is paired with the previous attempt of the same tool and canonical arguments
//! at the same endpoint (`attempts.rs`), its judgement (post count, retry origin,
//! previous attempt) is returned at once, and the rules' hooks (`rules/`) see the pair,
//! the call and, at the end, the pairers' observations.
//!
//! Memory is bounded by the retry windows, not by the input: a group's last call is
//! kept whole only while a later call could still be its retry (in flight, within the
//! retry window after a failure, a double dispatch, an unanswered `input_required`);
//! after that it shrinks to a count and the previous attempt's name (for `post_count`
//! and `previous_attempt` of a later re-invocation), and at most `COLD_GROUPS` of those
//! are kept, the least recently called dropped first.

use super::attempts::{gap_ms, origin, relation};
use super::facts::{CallFacts, Judgement, Previous};
use super::findings::{report_order, Spill, SpilledFindings, FINDINGS_IN_MEMORY};
use super::observe::Observation;
use super::rules::{non_terminal, Judged, Pair, RULES};
use super::{Finding, Scope};
use crate::config::RetryWindows;
use crate::model::{Outcome, Timestamp};
use foldhash::{HashMap, HashMapExt};
use std::collections::VecDeque;
use std::sync::Arc;

/// Groups past every window kept as counts; beyond it the oldest are forgotten (a
/// re-invocation after that many other distinct calls counts as a first attempt).
pub const COLD_GROUPS: usize = 1 << 15;
/// Groups kept whole: a capture of thousands of calls a second holds more than this
/// inside one retry window, and then the oldest move to the counts early (a retry
/// of a call this many distinct calls back is then not seen as one).
pub const HOT_GROUPS: usize = 1 << 15;
/// Scopes whose call counts are kept; past it the idlest half is forgotten.
pub const SCOPES: usize = 1 << 14;
/// Calls judged between sweeps of the hot groups.
const SWEEP_EVERY: u64 = 4096;

/// A group: one tool with one canonical argument digest at one endpoint.
type GroupKey = (Arc<str>, Option<Arc<str>>, u128);

#[derive(Debug)]
struct Hot {
    last: CallFacts,
    /// Its scope's ordinal when it was judged (calls of the scope before it).
    ordinal: u32,
    count: u32,
}

#[derive(Debug)]
struct Cold {
    count: u32,
    previous: Box<Previous>,
    /// Which entry of `cold_order` is this one's (older entries there are stale).
    stamp: u64,
}

/// The stage-2 judge of one partition (an input, or a group of inputs).
#[derive(Debug)]
pub struct Judge {
    windows: RetryWindows,
    /// The longest a cancelled call was waited for, so far: the client's real timeout.
    observed_timeout_ms: Option<u64>,
    hot: HashMap<GroupKey, Hot>,
    cold: HashMap<GroupKey, Cold>,
    cold_order: VecDeque<(u64, GroupKey)>,
    stamp: u64,
    /// Calls judged so far per scope, and when the scope was last seen (`calls`).
    ordinals: HashMap<Scope, (u32, u64)>,
    /// INPUT_REQUIRED calls waiting for a follow-up of their scope and tool.
    awaiting_followup: Vec<CallFacts>,
    judged: Judged,
    /// Findings so far, each with the input of the call (or observation) that raised it.
    findings: Vec<(Arc<str>, Finding)>,
    /// What the hooks of the call being judged raise.
    scratch: Vec<Finding>,
    /// The input of findings an observation raised (none: the caller's one input).
    no_input: Arc<str>,
    calls: u64,
    /// Where findings past `FINDINGS_IN_MEMORY` go, when the judge may move them.
    spill: Option<Spill>,
}

impl Default for Judge {
    fn default() -> Judge {
        Judge::new(RetryWindows::default())
    }
}

impl Judge {
    pub fn new(windows: RetryWindows) -> Judge {
        Judge {
            windows,
            observed_timeout_ms: None,
            hot: HashMap::new(),
            cold: HashMap::new(),
            cold_order: VecDeque::new(),
            stamp: 0,
            ordinals: HashMap::new(),
            awaiting_followup: Vec::new(),
            judged: Judged::default(),
            findings: Vec::new(),
            scratch: Vec::new(),
            no_input: Arc::from(""),
            calls: 0,
            spill: None,
        }
    }

    /// Lets the judge move its findings to a temporary file, a sorted run of
    /// `FINDINGS_IN_MEMORY` at a time (see `finish_spilled`).
    pub fn spill_findings(&mut self) {
        self.spill.get_or_insert_with(Spill::default);
    }

    fn client_timeout_ms(&self) -> u64 {
        self.observed_timeout_ms
            .unwrap_or(self.windows.client_timeout_ms)
    }

    /// Judges the next call in request order.
    pub fn call(&mut self, later: CallFacts) -> Judgement {
        self.calls += 1;
        if self.calls % SWEEP_EVERY == 0 {
            if let Some(now) = later.started_at {
                self.sweep(now);
            }
        }
        if later.cancelled {
            if let Some(g) = gap_ms(later.started_at, later.ended_at).filter(|&g| g > 0) {
                let g = g as u64;
                self.observed_timeout_ms = Some(self.observed_timeout_ms.map_or(g, |t| t.max(g)));
            }
        }
        if self.hot.len() > HOT_GROUPS {
            self.shrink_hot();
        }
        if self.ordinals.len() > SCOPES {
            self.forget_idle_scopes();
        }
        let now = self.calls;
        let ordinal = {
            let n = self.ordinals.entry(later.scope.clone()).or_insert((0, now));
            n.0 += 1;
            n.1 = now;
            n.0 - 1
        };
        let key: GroupKey = (later.endpoint.clone(), later.tool.clone(), later.arguments);
        let mut judgement = Judgement::default();
        if let Some(prev) = self.hot.get(&key) {
            let between =
                (prev.last.scope == later.scope).then(|| ordinal.saturating_sub(prev.ordinal + 1));
            let rel = relation(
                &prev.last,
                &later,
                between,
                &self.windows,
                self.client_timeout_ms(),
            );
            let pair = Pair {
                relation: rel,
                prev: &prev.last,
                later: &later,
            };
            judgement = Judgement {
                post_count: prev.count + 1,
                retry_origin: origin(&pair),
                previous: Some(previous_of(&prev.last)),
            };
            if pair.is_retry_candidate()
                && prev.last.id == later.id
                && prev.last.scope == later.scope
            {
                self.judged
                    .same_id_retries
                    .insert((later.scope.clone(), later.locator.clone()));
            }
            for r in RULES {
                if let Some(hook) = r.hooks.pair {
                    hook(&pair, &mut self.scratch);
                }
            }
        } else if let Some(c) = self.cold.remove(&key) {
            // Past every window: a re-invocation, counted.
            judgement = Judgement {
                post_count: c.count + 1,
                retry_origin: super::RetryOrigin::Reinvocation,
                previous: Some(c.previous),
            };
        }
        for r in RULES {
            if let Some(hook) = r.hooks.call {
                hook(&later, &mut self.scratch);
            }
        }
        let input = &later.input;
        self.findings
            .extend(self.scratch.drain(..).map(|f| (input.clone(), f)));
        self.spill_if_full();
        if later.mrtr_followup {
            self.awaiting_followup
                .retain(|c| !(c.scope == later.scope && c.tool == later.tool));
        }
        if later.outcome == Outcome::InputRequired {
            self.awaiting_followup.push(later.clone());
        }
        self.hot.insert(
            key,
            Hot {
                last: later,
                ordinal,
                count: judgement.post_count,
            },
        );
        judgement
    }

    /// Moves groups no later call can be a retry of to the cold counts. `now` is the
    /// request time of the call being judged; requests come in time order.
    fn sweep(&mut self, now: Timestamp) {
        let horizon = self
            .windows
            .retry_ms
            .max(self.windows.client_log_ms)
            .max(self.windows.double_dispatch_ms);
        let timeout = self.client_timeout_ms();
        let ordinals = &self.ordinals;
        let mut gone: Vec<GroupKey> = Vec::new();
        for (key, h) in &self.hot {
            let c = &h.last;
            // An MRTR follow-up may come any time after input_required.
            if c.outcome == Outcome::InputRequired {
                continue;
            }
            let end = c
                .ended_at
                .or_else(|| c.started_at.map(|s| s.plus_millis(timeout as f64)));
            let asked = c.retry_after_ms.or(c.sse_retry_ms).unwrap_or(0);
            let past = match (end, c.started_at) {
                (Some(end), Some(_)) => end.millis_until(now) > (horizon + asked) as i64,
                // Without times only the next call of its scope can be its retry.
                _ => ordinals.get(&c.scope).map_or(0, |o| o.0) > h.ordinal + 1,
            };
            if past {
                gone.push(key.clone());
            }
        }
        self.make_cold(gone);
    }

    /// Moves the oldest half of the whole groups to the counts.
    fn shrink_hot(&mut self) {
        let mut by_age: Vec<(Option<Timestamp>, usize, GroupKey)> = self
            .hot
            .iter()
            .map(|(k, h)| (h.last.started_at, h.last.seq, k.clone()))
            .collect();
        let half = by_age.len() / 2;
        by_age.select_nth_unstable_by(half, |a, b| (a.0, a.1).cmp(&(b.0, b.1)));
        by_age.truncate(half);
        self.make_cold(by_age.into_iter().map(|(_, _, k)| k).collect());
    }

    /// Forgets the call counts of the idlest half of the scopes.
    fn forget_idle_scopes(&mut self) {
        let mut last: Vec<u64> = self.ordinals.values().map(|o| o.1).collect();
        let half = last.len() / 2;
        let (_, cut, _) = last.select_nth_unstable(half);
        let cut = *cut;
        self.ordinals.retain(|_, o| o.1 >= cut);
    }

    fn make_cold(&mut self, gone: Vec<GroupKey>) {
        for key in gone {
            if let Some(h) = self.hot.remove(&key) {
                self.stamp += 1;
                self.cold_order.push_back((self.stamp, key.clone()));
                self.cold.insert(
                    key,
                    Cold {
                        count: h.count,
                        previous: previous_of(&h.last),
                        stamp: self.stamp,
                    },
                );
            }
        }
        while self.cold.len() > COLD_GROUPS {
            let Some((stamp, key)) = self.cold_order.pop_front() else {
                break;
            };
            if self.cold.get(&key).is_some_and(|c| c.stamp == stamp) {
                self.cold.remove(&key);
            }
        }
        // Stale entries (groups called again since) are dropped as they surface, and
        // all at once when they outnumber the live ones (a group that stays counted
        // at the front would otherwise hold every later stale entry behind it).
        while self
            .cold_order
            .front()
            .is_some_and(|(s, k)| self.cold.get(k).is_none_or(|c| c.stamp != *s))
        {
            self.cold_order.pop_front();
        }
        if self.cold_order.len() > 2 * self.cold.len() + 1024 {
            let cold = &self.cold;
            self.cold_order
                .retain(|(s, k)| cold.get(k).is_some_and(|c| c.stamp == *s));
        }
    }

    /// Entries of the counted groups' age order (for the memory test).
    pub fn cold_order_len(&self) -> usize {
        self.cold_order.len()
    }

    /// Groups whose last call's facts are kept whole.
    pub fn hot_groups(&self) -> usize {
        self.hot.len()
    }

    /// Groups kept as a count and the previous attempt's name.
    pub fn cold_groups(&self) -> usize {
        self.cold.len()
    }

    /// Judges `o` now rather than at the end (`finish`), for an observation whose
    /// rule reads nothing of the calls judged; in the order they were made.
    pub fn observe(&mut self, o: &Observation) {
        for r in RULES {
            if let Some(hook) = r.hooks.observation {
                hook(o, &self.judged, &mut self.scratch);
            }
        }
        let none = &self.no_input;
        self.findings
            .extend(self.scratch.drain(..).map(|f| (none.clone(), f)));
        self.spill_if_full();
    }

    /// Moves the findings in memory to disk once there are `FINDINGS_IN_MEMORY`,
    /// where the judge may (`spill_findings`).
    fn spill_if_full(&mut self) {
        if self.findings.len() >= FINDINGS_IN_MEMORY {
            if let Some(spill) = &mut self.spill {
                spill.run(&mut self.findings);
            }
        }
    }

    /// Ends the partition: judges the observations and the unanswered
    /// `input_required` calls, and returns the findings in report order.
    pub fn finish(self, observations: &[Observation]) -> Vec<Finding> {
        self.finish_with_inputs(observations, &[])
            .into_iter()
            .map(|(_, f)| f)
            .collect()
    }

    /// `finish`, each finding with its input; `inputs[i]` is the input of
    /// `observations[i]` (missing: none).
    pub fn finish_with_inputs(
        mut self,
        observations: &[Observation],
        inputs: &[Arc<str>],
    ) -> Vec<(Arc<str>, Finding)> {
        self.judge_the_rest(observations, inputs);
        self.findings
    }

    /// Judges the observations and the unanswered `input_required` calls, moving
    /// findings to disk as they pile up where the judge may, and sorts those left in
    /// memory.
    fn judge_the_rest(&mut self, observations: &[Observation], inputs: &[Arc<str>]) {
        for c in std::mem::take(&mut self.awaiting_followup) {
            non_terminal::unfollowed(&c, &mut self.scratch);
            self.findings
                .extend(self.scratch.drain(..).map(|f| (c.input.clone(), f)));
        }
        let none = self.no_input.clone();
        for r in RULES {
            if let Some(hook) = r.hooks.observation {
                for (i, o) in observations.iter().enumerate() {
                    hook(o, &self.judged, &mut self.scratch);
                    let input = inputs.get(i).unwrap_or(&none);
                    self.findings
                        .extend(self.scratch.drain(..).map(|f| (input.clone(), f)));
                    self.spill_if_full();
                }
            }
        }
        // In the order of the input, so a report reads like the capture; among
        // findings about one place, in the rules' order, then as raised.
        self.findings.sort_by(report_order);
    }

    /// `finish` for a judge that may have moved findings to disk: those findings,
    /// read back in the same order, or (`Err`) all of them in memory when none moved.
    pub fn finish_spilled(
        mut self,
        observations: &[Observation],
    ) -> Result<SpilledFindings, Vec<Finding>> {
        self.judge_the_rest(observations, &[]);
        let sorted = std::mem::take(&mut self.findings);
        match self.spill.take() {
            Some(s) => s.finish(sorted),
            None => Err(sorted),
        }
        .map_err(|kept| kept.into_iter().map(|(_, f)| f).collect())
    }
}

fn previous_of(c: &CallFacts) -> Box<Previous> {
    Box::new(Previous {
        input: c.input.clone(),
        seq: c.seq,
        id: c.id.clone(),
        locator: c.locator.clone(),
        outcome: c.outcome,
    })
}
