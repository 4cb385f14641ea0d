//! Calls from client logs. Each becomes a `Call` with `transport: ClientLog`, so the
//! repeat rules apply to them as to wire traffic, with the weaker evidence stated;
//! the endpoint is the log kind and MCP server name.

use super::{Correlator, Scope, Transport};
use crate::classify::classify_client;
use crate::jsonrpc::Message;
use crate::model::{ClientCall, Locator};
use serde_json::{json, Value};

impl Correlator {
    pub(super) fn client_log(&mut self, locator: &Locator, c: ClientCall) {
        let scope = Scope::client(c.session.as_deref(), c.source);
        let verdict = classify_client(&c);
        // A log without arguments cannot show a repeat: make each call's key unique.
        let args: Value = match &c.arguments {
            Some(a) => serde_json::from_str(a).unwrap_or(Value::Null),
            None => json!({ "\u{0}arguments not logged": c.call_id }),
        };
        let request = json!({
            "jsonrpc": "2.0",
            "id": c.call_id,
            "method": "tools/call",
            "params": {"name": c.tool, "arguments": args},
        });
        let Ok(m) = Message::parse(&request.to_string()) else {
            return;
        };
        self.push_call(
            &m,
            &super::Params::of(&m),
            &scope,
            locator.clone(),
            Transport::ClientLog,
            verdict,
            c.started,
            c.ended,
            None,
            None,
        );
        let Some(call) = self.pending.last_mut() else {
            return;
        };
        call.endpoint = format!("{}:{}", c.source, c.server.clone().unwrap_or_default()).into();
        call.server = c.server.as_deref().map(Into::into).or(call.server.take());
        call.client = Some(c.source.into());
    }
}
