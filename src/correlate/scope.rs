//! Scopes: where JSON-RPC ids live, so where a call is paired and compared. A
//! `Scope` is built only through its constructors, one per kind, so every part of the
//! tool spells a scope the same way; it prints as `kind:key` (the output contract)
//! and is cheap to clone (one shared string).

use serde::Serialize;
use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// The kind of id space a scope is (MCP 2025-11-25 Basic and Transports; 2026-07-28).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ScopeKind {
    /// A Streamable HTTP session (`Mcp-Session-Id`, hashed).
    Session,
    /// A legacy HTTP+SSE session (its `sessionId` query parameter, hashed).
    Legacy,
    /// HTTP without a session: one client endpoint, renumbered at each `initialize`.
    Http,
    /// A stdio process, from its `initialize`.
    Stdio,
    /// A client log's session (or the log kind when it names none).
    Client,
}

impl ScopeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ScopeKind::Session => "session",
            ScopeKind::Legacy => "legacy",
            ScopeKind::Http => "http",
            ScopeKind::Stdio => "stdio",
            ScopeKind::Client => "client",
        }
    }
}

/// One id scope, printed as `kind:key`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Scope(Arc<str>);

impl Scope {
    fn new(kind: ScopeKind, key: &str) -> Scope {
        Scope([kind.as_str(), ":", key].concat().into())
    }

    /// A Streamable HTTP session; the id is hashed so no report shows it.
    pub fn session(session_id: &str) -> Scope {
        Scope::new(ScopeKind::Session, &super::short_hash(session_id))
    }

    /// A legacy HTTP+SSE session; the id is hashed.
    pub fn legacy(session_id: &str) -> Scope {
        Scope::new(ScopeKind::Legacy, &super::short_hash(session_id))
    }

    /// Session-less HTTP to `host`; `restart` counts `initialize`s after the first,
    /// since a restarted client counts its ids from 0 again.
    pub fn http(host: &str, restart: u32) -> Scope {
        // A hostile Host is held by every call and map of the scope: cut it.
        let host = crate::text::kept(host, crate::text::KEPT_NAME);
        if restart > 1 {
            Scope::new(ScopeKind::Http, &format!("{host}#{restart}"))
        } else {
            Scope::new(ScopeKind::Http, &host)
        }
    }

    /// The `process`-th stdio process of the input (1-based).
    pub fn stdio(process: u32) -> Scope {
        Scope::new(ScopeKind::Stdio, &process.max(1).to_string())
    }

    /// A client log's session (hashed), or its log kind when it names no session.
    pub fn client(session: Option<&str>, source: &str) -> Scope {
        match session {
            Some(s) => Scope::new(ScopeKind::Client, &super::short_hash(s)),
            None => Scope::new(ScopeKind::Client, source),
        }
    }

    /// A scope as one of the constructors above printed it, read back (findings a
    /// streaming judge moved to disk).
    pub(super) fn reread(printed: &str) -> Scope {
        Scope(printed.into())
    }

    pub fn kind(&self) -> ScopeKind {
        match self.0.split(':').next() {
            Some("session") => ScopeKind::Session,
            Some("legacy") => ScopeKind::Legacy,
            Some("http") => ScopeKind::Http,
            Some("stdio") => ScopeKind::Stdio,
            _ => ScopeKind::Client,
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The same scope sharing `interned`'s allocation (equal text).
    pub(crate) fn shared(&self, interned: Arc<str>) -> Scope {
        debug_assert_eq!(&*interned, &*self.0);
        Scope(interned)
    }

    /// The printed text, for redaction (a host's credentials, a session id), which
    /// replaces it whole and leaves the kind's prefix.
    pub fn arc_mut(&mut self) -> &mut Arc<str> {
        &mut self.0
    }
}

impl Deref for Scope {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for Scope {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Scope {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Scope {
    /// Any `kind:key` text: stage 2 reads scopes back from stage 1's records.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Scope(<Arc<str>>::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_kind_prints_as_the_output_contract_says() {
        assert_eq!(Scope::stdio(0).as_str(), "stdio:1");
        assert_eq!(Scope::stdio(3).as_str(), "stdio:3");
        assert_eq!(Scope::http("h:80", 1).as_str(), "http:h:80");
        assert_eq!(Scope::http("h:80", 2).as_str(), "http:h:80#2");
        assert!(Scope::session("abc").starts_with("session:"));
        assert!(!Scope::session("secret-id").contains("secret"));
        assert_eq!(Scope::client(None, "codex").as_str(), "client:codex");
        for (s, k) in [
            (Scope::session("a"), ScopeKind::Session),
            (Scope::legacy("a"), ScopeKind::Legacy),
            (Scope::http("h", 1), ScopeKind::Http),
            (Scope::stdio(1), ScopeKind::Stdio),
            (Scope::client(Some("x"), "claude-code"), ScopeKind::Client),
        ] {
            assert_eq!(s.kind(), k, "{s}");
        }
    }
}
