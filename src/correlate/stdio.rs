//! stdio: messages without an HTTP layer. Client requests are paired with the
//! server's responses by id within one process (`initialize` starts a new one);
//! what is still open when the transcript ends (or, past 8,192 waiting, the oldest)
//! never got a response. A line that is not JSON, or a response with another id,
//! that arrives while exactly one call is outstanding is that call's answer unless
//! its real response follows.

use super::observe::{Observation, Stray};
use super::{
    Correlator, Params, PendingStdio, Scope, Transport, RELEASE_STEP, STDIO_WAITING_AT_MOST,
    STDIO_WAITING_BYTES,
};
use crate::classify::{classify, Leg, Options, WaitedOut};
use crate::ingest::Problem;
use crate::jsonrpc::{Decoded, Id, Item, Kind, Message};
use crate::model::{Direction, End, Locator, StdioMessage};

impl Correlator {
    /// Reads one stdio line's messages; hands `items` back, for the caller to free
    /// where they were made (see `exchange_spent`).
    pub(super) fn stdio(
        &mut self,
        locator: &Locator,
        m: &StdioMessage,
        items: Vec<Item>,
    ) -> Vec<Item> {
        let scope = Scope::stdio(self.stdio_process);
        for item in &items {
            let msg = match &item.decoded {
                Decoded::Message(msg) => (**msg).clone(),
                Decoded::NotJson(e) => {
                    let problem =
                        Problem::new(locator.clone(), format!("message is not JSON: {e}"));
                    let from_server = m.dir != Some(Direction::ClientToServer);
                    match self.lone_call().filter(|_| from_server) {
                        Some(p) if p.attributed.is_none() => {
                            p.attributed = Some((item.clone(), Some(problem)));
                        }
                        _ => self.out.problems.push(problem),
                    }
                    continue;
                }
                _ => continue,
            };
            let dir = m.dir.unwrap_or_else(|| self.infer_direction(&msg));
            match (msg.kind(), dir) {
                (Kind::Request, Direction::ClientToServer) => {
                    let method = msg.method().unwrap_or_default();
                    if method == "initialize" {
                        self.stdio_process += 1;
                        self.flush_stdio_pending(End::Closed);
                    }
                    let scope = Scope::stdio(self.stdio_process);
                    let params = Params::of(&msg);
                    self.note_request_meta(&scope, &method, &params, None);
                    let id = msg.id_or_null();
                    self.check_id_reuse(&scope, &msg, &method, &params, locator);
                    // The earlier one will never be told apart: close it as unanswered.
                    if let Some(prev) = self.take_stdio(&id) {
                        self.finish_stdio(prev, None, End::Closed, Options::default());
                    }
                    self.make_room_for_a_request();
                    self.stdio_arrivals += 1;
                    self.stdio_pending_bytes += msg.text().len() as u64;
                    self.stdio_pending.insert(
                        id,
                        PendingStdio {
                            client_log: m.logged_by_client,
                            call: method == "tools/call",
                            method,
                            msg,
                            locator: locator.clone(),
                            ts: m.ts,
                            arrival: self.stdio_arrivals,
                            attributed: None,
                        },
                    );
                }
                (Kind::Request, Direction::ServerToClient) => {
                    if let Some(id) = &msg.id {
                        // Kept only to tell the direction of an unmarked reply: past
                        // the bound all are forgotten (such a reply then reads as
                        // the server's).
                        if self.stdio_server_pending.len() >= STDIO_WAITING_AT_MOST {
                            self.stdio_server_pending.clear();
                        }
                        self.stdio_server_pending.insert(id.clone(), ());
                    }
                }
                (Kind::Notification, Direction::ClientToServer) => {
                    if msg.method_is("notifications/cancelled") {
                        if let Some(rid) = msg.params_value().get("requestId") {
                            let rid = Id::from_raw(&rid.to_string());
                            if let Some(p) = self.stdio_pending.get(&rid) {
                                if p.call {
                                    if let Some(prev) = self.take_stdio(&rid) {
                                        self.finish_stdio(
                                            prev,
                                            None,
                                            End::ClientClosed,
                                            Options::default(),
                                        );
                                        if let Some(c) = self.pending.last_mut() {
                                            c.cancelled = true;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                (Kind::Notification, _) => {}
                (Kind::Response | Kind::Invalid, Direction::ServerToClient) => {
                    let id = msg.id_or_null();
                    let key = if self.stdio_pending.contains_key(&id) {
                        Some(id.clone())
                    } else {
                        self.stdio_pending
                            .keys()
                            // Bounded, so many unanswered requests keep this linear.
                            .take(10_000)
                            .find(|k| k.differs_only_in_type(&id))
                            .cloned()
                    };
                    match key.and_then(|k| self.take_stdio(&k)) {
                        Some(mut p) => {
                            if let (true, Some(r)) = (p.method == "tools/list", msg.result()) {
                                self.note_tools(r);
                            }
                            if let Some(seen) = self.requests.get_mut(&scope) {
                                if let Some(s) = p.msg.id.as_ref().and_then(|i| seen.get_mut(i)) {
                                    s.answered = true;
                                }
                            }
                            // Its real response came: what was held for it was not.
                            self.release_attributed(&scope, &mut p);
                            self.stdio_answered.insert(id);
                            self.finish_stdio(p, Some(item), End::Complete, Options::default());
                        }
                        None => {
                            let answered = self.stdio_answered.contains(&id);
                            let held = if answered {
                                None
                            } else {
                                self.lone_call().filter(|p| p.attributed.is_none())
                            };
                            match held {
                                Some(p) => p.attributed = Some((item.clone(), None)),
                                None => self.observe(Observation::StrayResponse {
                                    scope: scope.clone(),
                                    id,
                                    request: None,
                                    call: None,
                                    locator: locator.clone(),
                                    context: if answered {
                                        Stray::AlreadyAnswered
                                    } else {
                                        Stray::NoOutstanding
                                    },
                                }),
                            }
                        }
                    }
                }
                (Kind::Response | Kind::Invalid, Direction::ClientToServer) => {
                    if let Some(id) = &msg.id {
                        self.stdio_server_pending.remove(id);
                    }
                }
            }
        }
        items
    }

    /// Who sent a message whose recorder did not say (a bare `tee` of stdio).
    fn infer_direction(&self, m: &Message) -> Direction {
        const SERVER_METHODS: &[&str] = &[
            "sampling/createMessage",
            "roots/list",
            "elicitation/create",
            "notifications/message",
            "notifications/resources/updated",
            "notifications/resources/list_changed",
            "notifications/tools/list_changed",
            "notifications/prompts/list_changed",
            "notifications/elicitation/complete",
            "notifications/progress",
        ];
        match m.kind() {
            Kind::Request | Kind::Notification => {
                let method = m.method().unwrap_or_default();
                if SERVER_METHODS.contains(&method.as_str()) {
                    Direction::ServerToClient
                } else {
                    Direction::ClientToServer
                }
            }
            _ => match &m.id {
                Some(id)
                    if self.stdio_server_pending.contains_key(id)
                        && !self.stdio_pending.contains_key(id) =>
                {
                    Direction::ClientToServer
                }
                _ => Direction::ServerToClient,
            },
        }
    }

    /// Judges the oldest `RELEASE_STEP` requests still waiting for a response once
    /// `STDIO_WAITING_AT_MOST` wait, as unanswered: a transcript of one side only
    /// (or of a server that stopped answering) kept every request until its end,
    /// 15 times its size in memory.
    fn make_room_for_a_request(&mut self) {
        let too_many = self.stdio_pending.len() >= STDIO_WAITING_AT_MOST;
        if !too_many && self.stdio_pending_bytes < STDIO_WAITING_BYTES {
            return;
        }
        let mut oldest: Vec<(u64, Id)> = self
            .stdio_pending
            .iter()
            .map(|(id, p)| (p.arrival, id.clone()))
            .collect();
        let waited_out = if too_many {
            oldest.select_nth_unstable_by_key(RELEASE_STEP, |a| a.0);
            oldest.truncate(RELEASE_STEP);
            WaitedOut::Requests(STDIO_WAITING_AT_MOST)
        } else {
            // Large requests: the oldest go until half the bytes are left.
            WaitedOut::MiB(STDIO_WAITING_BYTES >> 20)
        };
        oldest.sort_unstable_by_key(|a| a.0);
        for (_, id) in oldest {
            if !too_many && self.stdio_pending_bytes <= STDIO_WAITING_BYTES / 2 {
                break;
            }
            let Some(p) = self.take_stdio(&id) else {
                continue;
            };
            let opts = Options {
                waited_out: Some(waited_out),
                ..Options::default()
            };
            self.finish_stdio(p, None, End::CaptureEnded, opts);
        }
    }

    /// Removes a waiting request, keeping `stdio_pending_bytes` in step.
    fn take_stdio(&mut self, id: &Id) -> Option<PendingStdio> {
        let p = self.stdio_pending.remove(id)?;
        self.stdio_pending_bytes -= p.msg.text().len() as u64;
        Some(p)
    }

    /// The one outstanding request, when it is a `tools/call`.
    fn lone_call(&mut self) -> Option<&mut PendingStdio> {
        if self.stdio_pending.len() != 1 {
            return None;
        }
        self.stdio_pending.values_mut().next().filter(|p| p.call)
    }

    /// A reply held for `p` that its real response showed was not its answer: a
    /// line that is not JSON is a problem again, a response with another id a stray.
    fn release_attributed(&mut self, scope: &Scope, p: &mut PendingStdio) {
        let Some((item, problem)) = p.attributed.take() else {
            return;
        };
        if let Some(problem) = problem {
            self.out.problems.push(problem);
        } else if let Some(m) = item.message() {
            self.observe(Observation::StrayResponse {
                scope: scope.clone(),
                id: m.id_or_null(),
                request: None,
                call: None,
                locator: p.locator.clone(),
                context: Stray::NoOutstanding,
            });
        }
    }

    fn finish_stdio(&mut self, mut p: PendingStdio, reply: Option<&Item>, end: End, opts: Options) {
        if !p.call {
            return;
        }
        let scope = Scope::stdio(self.stdio_process);
        // With no response of its own, the one reply that came while it was alone
        // outstanding answers it.
        let held = p.attributed.take();
        let (reply, attributed) = match (reply, &held) {
            (None, Some((item, _))) if end != End::ClientClosed => (Some(item), true),
            (reply, _) => (reply, false),
        };
        let end = if attributed { End::Complete } else { end };
        let ended_at = reply.as_ref().and_then(|r| r.ts);
        let leg = Leg {
            exchange: None,
            items: reply.into_iter().collect(),
            end,
        };
        let mut verdict = classify(&p.msg, &[leg], opts);
        if attributed {
            verdict.evidence.notes.push(
                "attributed: this reply has no matching id, but it was the only one while this call was the one request outstanding".to_owned(),
            );
        }
        if end == End::ClientClosed {
            verdict
                .evidence
                .notes
                .push("the client sent notifications/cancelled for this request".to_owned());
        }
        // Parsed again rather than kept for every pending request.
        self.push_call(
            &p.msg,
            &Params::of(&p.msg),
            &scope,
            p.locator,
            Transport::Stdio,
            verdict,
            p.ts,
            ended_at,
            None,
            None,
        );
        if p.client_log {
            if let Some(c) = self.pending.last_mut() {
                c.evidence = "client-log";
            }
        }
    }

    pub(super) fn flush_stdio_pending(&mut self, end: End) {
        self.stdio_pending_bytes = 0;
        let mut pending: Vec<_> = self.stdio_pending.drain().map(|(_, p)| p).collect();
        pending.sort_unstable_by_key(|p| p.arrival);
        for p in pending {
            self.finish_stdio(p, None, end, Options::default());
        }
        self.stdio_server_pending.clear();
    }
}
