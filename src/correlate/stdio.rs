//! stdio: messages without an HTTP layer. Client requests are paired with the
//! server's responses by id within one process (`initialize` starts a new one);
//! what is still open when the transcript ends never got a response.

use super::{Correlator, Finding, PendingStdio, Transport};
use crate::classify::{classify, Leg, Options};
use crate::ingest::Problem;
use crate::jsonrpc::{self, Decoded, Id, Item, Kind, Message, Place};
use crate::model::{Direction, End, FindingKind, Locator, Severity, StdioMessage};

impl Correlator {
    pub(super) fn stdio(&mut self, locator: &Locator, m: StdioMessage) {
        let scope = format!("stdio:{}", self.stdio_process.max(1));
        let items = jsonrpc::decode_text(&m.json, Place::Body, None, m.ts);
        for item in items {
            let msg = match &item.decoded {
                Decoded::Message(msg) => (**msg).clone(),
                Decoded::NotJson(e) => {
                    self.out.problems.push(Problem::new(
                        locator.clone(),
                        format!("message is not JSON: {e}"),
                    ));
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
                    let scope = format!("stdio:{}", self.stdio_process.max(1));
                    let params = msg.params_value();
                    self.note_request_meta(&scope, &method, &params, None);
                    let id = msg.id.clone().unwrap_or_else(|| Id::from_raw("null"));
                    if self.stdio_pending.contains_key(&id) {
                        self.out.findings.push(Finding {
                            kind: FindingKind::IdReused,
                            severity: Severity::Medium,
                            scope: scope.clone(),
                            ids: vec![id.clone()],
                            calls: vec![],
                            locators: vec![locator.clone()],
                            detail: format!("request id {id} was sent again while the earlier request with that id was still in flight"),
                        });
                        // The earlier one will never be told apart: close it as unanswered.
                        if let Some(prev) = self.stdio_pending.remove(&id) {
                            self.finish_stdio(prev, None, End::Closed);
                        }
                    }
                    self.stdio_pending.insert(
                        id,
                        PendingStdio {
                            client_log: m.logged_by_client,
                            call: method == "tools/call",
                            method,
                            msg,
                            locator: locator.clone(),
                            ts: m.ts,
                        },
                    );
                }
                (Kind::Request, Direction::ServerToClient) => {
                    if let Some(id) = &msg.id {
                        self.stdio_server_pending.insert(id.clone(), ());
                    }
                }
                (Kind::Notification, Direction::ClientToServer) => {
                    if msg.method().as_deref() == Some("notifications/cancelled") {
                        if let Some(rid) = msg.params_value().get("requestId") {
                            let rid = Id::from_raw(&rid.to_string());
                            if let Some(p) = self.stdio_pending.get(&rid) {
                                if p.call {
                                    if let Some(prev) = self.stdio_pending.remove(&rid) {
                                        self.finish_stdio(prev, None, End::ClientClosed);
                                        if let Some(c) = self.out.calls.last_mut() {
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
                    let id = msg.id.clone().unwrap_or_else(|| Id::from_raw("null"));
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
                    match key.and_then(|k| self.stdio_pending.remove(&k)) {
                        Some(p) => {
                            if p.method == "tools/list" {
                                self.note_tools(&msg.result_value());
                            }
                            let resp_item = Item {
                                decoded: Decoded::Message(Box::new(msg)),
                                ..item.clone()
                            };
                            self.stdio_answered.insert(id, locator.clone());
                            self.finish_stdio(p, Some(resp_item), End::Complete);
                        }
                        None => {
                            let detail = if self.stdio_answered.contains_key(&id) {
                                format!("a second response for id {id}, which was already answered")
                            } else {
                                format!("a response with id {id} answers no outstanding request")
                            };
                            self.out.findings.push(Finding {
                                kind: FindingKind::IdMismatch,
                                severity: Severity::Medium,
                                scope: scope.clone(),
                                ids: vec![id],
                                calls: vec![],
                                locators: vec![locator.clone()],
                                detail,
                            });
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

    fn finish_stdio(&mut self, p: PendingStdio, reply: Option<Item>, end: End) {
        if !p.call {
            return;
        }
        let scope = format!("stdio:{}", self.stdio_process.max(1));
        let ended_at = reply.as_ref().and_then(|r| r.ts);
        let leg = Leg {
            exchange: None,
            items: reply.iter().collect(),
            end,
        };
        let mut verdict = classify(&p.msg, &[leg], Options::default());
        if end == End::ClientClosed {
            verdict
                .evidence
                .notes
                .push("the client sent notifications/cancelled for this request".to_owned());
        }
        self.push_call(
            &p.msg,
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
            if let Some(c) = self.out.calls.last_mut() {
                c.evidence = "client-log";
            }
        }
    }

    pub(super) fn flush_stdio_pending(&mut self, end: End) {
        let mut pending: Vec<_> = self.stdio_pending.drain().map(|(_, p)| p).collect();
        pending.sort_by(|a, b| a.locator.cmp(&b.locator));
        for p in pending {
            self.finish_stdio(p, None, end);
        }
        self.stdio_server_pending.clear();
    }
}
