//! Redaction: the one pass that every string leaving mcpsift goes through, on by
//! default in every output format (`--no-redact` turns it off).
//!
//! Rules, all applied to any text (JSON, escaped JSON inside a JSON string, header
//! dumps, URLs, prose), in this order:
//!
//! - **PEM private keys**: the body of a `-----BEGIN … PRIVATE KEY-----` block;
//! - **URL userinfo**: the password of `scheme://user:password@host` (web URLs and
//!   DSNs alike: `postgres://`, `redis://:pw@`, `mongodb+srv://`, `amqp://`);
//! - **by name**: the value after a sensitive name (`Authorization: …`,
//!   `"access_token": "…"`, `?code=…`, `AccountKey=…;`, `["Cookie", "…"]`);
//!   `Mcp-Session-Id` values become `session:<hash>`, the same short hash the
//!   correlator uses for scopes, so a session can still be followed;
//! - **by shape**: `Bearer …`/`Basic …` credentials, JWT-looking `eyJ…` tokens, the
//!   key formats of [`PREFIXED`] (cloud, VCS, chat, payment and model-API keys) and
//!   long high-entropy runs, wherever they occur;
//! - **cut excerpts**: before a `…` where an excerpt was cut, a key or a URL's
//!   userinfo cut below what its rule needs to recognise it.
//!
//! [`RULES`] lists every rule with an example; `docs/redaction.md` is its prose.
//! A prefilter (one Aho-Corasick scan for every trigger word, and a byte loop for
//! long token runs) lets the strings that hold none of them through untouched, so
//! most of a report costs one linear scan. Hand-written rather than regex-based:
//! the rules need JSON-aware quoting (`"` and `\"`), which is awkward in a regex.

use crate::batch::{InputReport, Report};
use crate::correlate::{short_hash, Call, Finding};
use aho_corasick::AhoCorasick;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

/// What a removed secret is replaced with.
pub const MARK: &str = "[REDACTED]";

/// Names whose value is a secret, whatever the separator (`:`, `=`, a JSON pair).
/// Written with `-`; `_` and case do not matter when matching.
const SECRET_NAMES: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
    "x-api-key",
    "api-key",
    "apikey",
    "x-auth-token",
    "x-access-token",
    "x-amz-security-token",
    "auth-token",
    "access-token",
    "accesstoken",
    "refresh-token",
    "refreshtoken",
    "id-token",
    "client-secret",
    "clientsecret",
    "code",
    "code-verifier",
    "password",
    "passwd",
    "secret",
    "token",
    "session-token",
    "private-key",
    "x-goog-api-key",
    "x-amz-signature",
    "x-amz-credential",
    "x-goog-signature",
    "x-goog-credential",
    "aws-secret-access-key",
    "aws-session-token",
    "secret-access-key",
    "secretaccesskey",
    "private-key-id",
    "accountkey",
    "account-key",
    "sharedaccesskey",
    "pwd",
    "passphrase",
];

/// Names that are secrets only as query or form parameters (`?key=…`): as JSON keys
/// they are too common to blank.
const QUERY_NAMES: &[&str] = &["key", "sig", "signature", "auth", "jwt", "session", "state"];

/// Names that are HTTP headers: an unquoted value runs to the end of the line.
const HEADER_NAMES: &[&str] = &[
    "authorization",
    "proxy-authorization",
    "cookie",
    "set-cookie",
];

/// Names whose value is replaced by a stable hash rather than blanked.
const HASHED_NAMES: &[&str] = &["mcp-session-id"];

/// A credential format known by its fixed prefix: replaced wherever a token (or a
/// `-`/`_`-separated segment of one) starts with `prefix` and has at least
/// `min_rest` more token characters.
#[derive(Debug, Clone, Copy)]
pub struct Prefixed {
    pub what: &'static str,
    pub prefix: &'static str,
    pub min_rest: usize,
}

const fn px(what: &'static str, prefix: &'static str, min_rest: usize) -> Prefixed {
    Prefixed {
        what,
        prefix,
        min_rest,
    }
}

/// Key formats secret scanners know, by prefix. Minimum lengths sit below the real
/// ones (AWS ids have 16 characters after the prefix, GitHub tokens 36) so a cut
/// excerpt is still caught, and above ordinary words that share a prefix.
pub const PREFIXED: &[Prefixed] = &[
    px("AWS access key id", "AKIA", 12),
    px("AWS temporary access key id", "ASIA", 12),
    px("AWS bearer key id", "ABIA", 12),
    px("Google API key", "AIza", 20),
    px("GitHub personal access token", "ghp_", 12),
    px("GitHub OAuth token", "gho_", 12),
    px("GitHub user-to-server token", "ghu_", 12),
    px("GitHub server-to-server token", "ghs_", 12),
    px("GitHub refresh token", "ghr_", 12),
    px("GitHub fine-grained token", "github_pat_", 12),
    px("GitLab personal access token", "glpat-", 12),
    px("GitLab deploy token", "gldt-", 12),
    px("Slack bot token", "xoxb-", 12),
    px("Slack user token", "xoxp-", 12),
    px("Slack app token", "xoxa-", 12),
    px("Slack legacy token", "xoxo-", 12),
    px("Slack session token", "xoxs-", 12),
    px("Slack refresh token", "xoxr-", 12),
    px("Slack app-level token", "xapp-", 12),
    px("Stripe secret key", "sk_live_", 12),
    px("Stripe test secret key", "sk_test_", 12),
    px("Stripe restricted key", "rk_live_", 12),
    px("Stripe restricted test key", "rk_test_", 12),
    px("Stripe live publishable key", "pk_live_", 12),
    px("Stripe webhook secret", "whsec_", 12),
    px("Anthropic API key", "sk-ant-", 12),
    px("OpenAI-style API key", "sk-", 12),
    px("npm token", "npm_", 12),
    px("Hugging Face token", "hf_", 12),
    px("PyPI token", "pypi-", 12),
];

/// One redaction rule, in words, with an example: the source of the table in
/// `docs/redaction.md`, and each one tested (`every_rule_redacts_its_example`).
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    pub what: &'static str,
    /// Text that holds the secret.
    pub example: &'static str,
    /// The part of `example` that must not survive.
    pub secret: &'static str,
}

const fn rule(what: &'static str, example: &'static str, secret: &'static str) -> Rule {
    Rule {
        what,
        example,
        secret,
    }
}

/// Every rule that is not a [`PREFIXED`] key format.
pub const RULES: &[Rule] = &[
    rule(
        "password in URL userinfo",
        "POST https://alice:Pa55-w0rd!@mcp.example/mcp",
        "Pa55-w0rd!",
    ),
    rule(
        "PostgreSQL DSN password",
        "postgres://app:pg-S3cret@db.internal:5432/app",
        "pg-S3cret",
    ),
    rule(
        "MySQL DSN password",
        "mysql://root:my-S3cret@10.0.0.5/shop",
        "my-S3cret",
    ),
    rule(
        "MongoDB SRV DSN password",
        "mongodb+srv://svc:mongo-S3cret@cluster0.example.net/db",
        "mongo-S3cret",
    ),
    rule(
        "Redis DSN password (no user)",
        "redis://:redis-S3cret@cache:6379/0",
        "redis-S3cret",
    ),
    rule(
        "AMQP DSN password",
        "amqp://guest:amqp-S3cret@mq.example:5672/vhost",
        "amqp-S3cret",
    ),
    rule(
        "AWS secret access key by name",
        "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    rule(
        "AWS session token by name",
        "AWS_SESSION_TOKEN: IQoJb3JpZ2luX2VjEXAMPLEsessiontoken",
        "IQoJb3JpZ2luX2VjEXAMPLEsessiontoken",
    ),
    rule(
        "GCP service-account private key (by name and PEM)",
        r#"{"type": "service_account", "private_key_id": "0123abcd4567", "private_key": "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----\n"}"#,
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    ),
    rule(
        "PEM private key block",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX\n6Ppy1tPf9Cnzj4p4WGeKLs1Pt8Qu\n-----END RSA PRIVATE KEY-----",
        "MIIBOgIBAAJBAKj34GkxFhD90vcNLYLInFEX",
    ),
    rule(
        "PEM private key cut short (an excerpt)",
        "key: -----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAA",
        "b3BlbnNzaC1rZXktdjEAAAAA",
    ),
    rule(
        "Azure storage AccountKey",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Zm9vYmFyYmF6cXV4+/==;EndpointSuffix=core.windows.net",
        "Zm9vYmFyYmF6cXV4+/==",
    ),
    rule(
        "Azure Service Bus SharedAccessKey",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;SharedAccessKey=c2FzLWtleS1leGFtcGxl=",
        "c2FzLWtleS1leGFtcGxl=",
    ),
    rule(
        "Azure SAS signature",
        "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&se=2026-12-01&sig=Yz8xZXhhbXBsZSUyRnNpZw%3D",
        "Yz8xZXhhbXBsZSUyRnNpZw%3D",
    ),
    rule(
        "Bearer token",
        "upstream said Bearer abc123def456ghi789",
        "abc123def456ghi789",
    ),
    rule(
        "Basic credentials",
        "Authorization was Basic YWxpY2U6aHVudGVyMg==",
        "YWxpY2U6aHVudGVyMg==",
    ),
    rule(
        "Proxy-Authorization header",
        "Proxy-Authorization: Digest username=bob, response=6629fae49393a05397450978507c4ef1",
        "6629fae49393a05397450978507c4ef1",
    ),
    rule(
        "JWT",
        "token eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl",
    ),
    rule(
        "a key cut short by an excerpt",
        "upstream answered 401 for ghp_A1b2C3d4…",
        "ghp_A1b2C3d4",
    ),
    rule(
        "a DSN cut short by an excerpt, inside its password",
        "could not connect to postgres://app:pg-S3c…",
        "pg-S3c",
    ),
    rule(
        "ODBC connection string password",
        "Server=db;Database=app;Uid=sa;Pwd=odbc-S3cret;",
        "odbc-S3cret",
    ),
];

/// Redaction settings: on, or off (`--no-redact`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Redactor {
    pub enabled: bool,
}

impl Default for Redactor {
    fn default() -> Self {
        Redactor { enabled: true }
    }
}

const fn is_token_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b'~' | b'+' | b'/' | b'=')
}

/// A name character: a byte that cannot sit right next to a sensitive name.
fn is_name_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn name_kind(name: &str) -> Option<NameKind> {
    // `api-key`, `API_KEY` and `Api-Key` are one name. Folded on the stack: this runs
    // for every word of every printed string.
    let mut buf = [0u8; 24];
    let bytes = name.as_bytes();
    let folded = buf.get_mut(..bytes.len())?;
    for (dst, &c) in folded.iter_mut().zip(bytes) {
        *dst = if c == b'_' {
            b'-'
        } else {
            c.to_ascii_lowercase()
        };
    }
    let lower = std::str::from_utf8(folded).ok()?;
    NAME_KINDS.get(lower).copied()
}

/// Every name of the lists above with its kind, looked up in one hash probe rather
/// than ~50 comparisons: `name_kind` runs for every word of every printed string.
static NAME_KINDS: LazyLock<foldhash::HashMap<&'static str, NameKind>> = LazyLock::new(|| {
    let mut kinds = foldhash::HashMap::default();
    for &n in QUERY_NAMES {
        kinds.insert(n, NameKind::QueryOnly);
    }
    for &n in SECRET_NAMES {
        let kind = if HEADER_NAMES.contains(&n) {
            NameKind::Header
        } else {
            NameKind::Secret
        };
        kinds.insert(n, kind);
    }
    for &n in HASHED_NAMES {
        kinds.insert(n, NameKind::Hashed);
    }
    kinds
});

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NameKind {
    Secret,
    Header,
    QueryOnly,
    Hashed,
}

impl Redactor {
    /// Redacts one piece of text.
    pub fn text<'a>(&self, s: &'a str) -> Cow<'a, str> {
        if !self.enabled || s.is_empty() || !may_hold_secret(s) {
            return Cow::Borrowed(s);
        }
        every_rule(s)
    }

    /// Redacts a string in place.
    pub fn string(&self, s: &mut String) {
        if let Cow::Owned(r) = self.text(s) {
            *s = r;
        }
    }

    pub fn option(&self, s: &mut Option<String>) {
        if let Some(s) = s {
            self.string(s);
        }
    }

    /// Redacts a JSON value: sensitive keys lose their value, every string is
    /// redacted as text.
    pub fn value(&self, v: &mut Value) {
        if !self.enabled {
            return;
        }
        match v {
            Value::String(s) => self.string(s),
            Value::Array(a) => a.iter_mut().for_each(|x| self.value(x)),
            Value::Object(o) => {
                for (k, x) in o.iter_mut() {
                    match (name_kind(k), &*x) {
                        (Some(NameKind::Hashed), Value::String(s)) => {
                            *x = Value::String(format!("session:{}", short_hash(s)));
                        }
                        // A JSON-RPC `code` is a number and not a secret.
                        (Some(NameKind::Secret | NameKind::Header), Value::String(_)) => {
                            *x = Value::String(MARK.to_owned());
                        }
                        (Some(NameKind::Secret | NameKind::Header), Value::Array(_))
                            if k != "code" =>
                        {
                            *x = Value::String(MARK.to_owned());
                        }
                        _ => self.value(x),
                    }
                }
            }
            _ => {}
        }
    }

    /// Redacts every string of a report that an emitter may print. Session ids seen
    /// in `Mcp-Session-Id` headers are also replaced wherever else they appear.
    /// Redacts one call on its own (streamed output), knowing only its own session
    /// id: the one it most often repeats in its notes and timeline.
    pub fn call(&self, c: &mut Call, memo: &mut Memo) {
        if !self.enabled {
            return;
        }
        let session = c
            .timeline
            .as_ref()
            .and_then(|t| t.session_id.clone())
            .filter(|s| s.len() >= 8);
        let (one, complex) = match &session {
            Some(s) if s.bytes().all(is_id_char) => (
                Some((s.as_str(), format!("session:{}", short_hash(s)))),
                Vec::new(),
            ),
            Some(s) => (
                None,
                vec![(s.as_str(), format!("session:{}", short_hash(s)))],
            ),
            None => (None, Vec::new()),
        };
        let known = Known {
            inner: *self,
            one,
            simple: Default::default(),
            complex,
        };
        // The shared strings (scope, endpoint, tool, peers, version) are the same
        // `Arc`s call after call: each is redacted once per session id.
        memo.session(session.as_deref().unwrap_or(""));
        for a in shared_strings(c) {
            memo.arc(a, |s| known.arc(s));
        }
        known.call_rest(c);
    }

    /// Redacts one input's report whose calls were streamed (a spool redacted them):
    /// what `report` does to each input of a streaming run, input by input.
    /// Its own strings (a problem quoting a line) are redacted with the session ids
    /// of its exchanges (`Analysis::session_ids`).
    pub fn input(&self, ir: &mut InputReport) {
        if self.enabled {
            let sessions = std::mem::take(&mut ir.analysis.session_ids);
            Known::with_sessions(*self, &sessions).input(ir);
            ir.analysis.session_ids = sessions;
        }
    }

    /// Redacts what `report` redacts beyond its inputs (the filters, the skipped
    /// files), for a run whose inputs went through `input` one by one.
    pub fn run_fields(&self, report: &mut Report) {
        if self.enabled {
            Known::without_sessions(*self).run_fields(report);
        }
    }

    pub fn report(&self, report: &mut Report) {
        if !self.enabled {
            return;
        }
        let sessions: Vec<String> = report
            .inputs
            .iter()
            .flat_map(|i| {
                let calls = i.analysis.calls.iter();
                let called = calls.filter_map(|c| c.timeline.as_ref()?.session_id.clone());
                called.chain(i.analysis.session_ids.iter().cloned())
            })
            .collect();
        Known::with_sessions(*self, &sessions).report(report);
    }
}

/// Shared strings already redacted, with the session id they were redacted for:
/// a few entries, compared by pointer, each holding its `Arc` so no other string
/// can take its address. Session ids are compared by pointer too: the entries of a
/// log of many sessions hold the same strings (the endpoint, the tools) for each,
/// and comparing their session ids by content read a cold allocation per entry,
/// 2% of a JSONL run's time for a few hundred instructions.
#[derive(Debug, Default)]
pub struct Memo {
    entries: Vec<(Arc<str>, Arc<str>, Arc<str>)>,
    next: usize,
    /// The session id of the call being redacted: the entries' own `Arc` when one
    /// has it, so that an entry of that session is found by pointer.
    session: Arc<str>,
}
/// The strings a call shares with others of its input (interned `Arc`s): its scope,
/// endpoint, tool, version and peers.
fn shared_strings(c: &mut Call) -> impl Iterator<Item = &mut Arc<str>> {
    [c.scope.arc_mut(), &mut c.endpoint].into_iter().chain(
        [
            &mut c.tool,
            &mut c.protocol_version,
            &mut c.client,
            &mut c.server,
        ]
        .into_iter()
        .flatten(),
    )
}

/// Entries a `Memo` keeps: more than the shared strings of one call.
const MEMO_ENTRIES: usize = 32;

impl Memo {
    /// The session id the next strings are redacted for.
    fn session(&mut self, session: &str) {
        if *self.session != *session {
            self.session = match self.entries.iter().find(|(_, sid, _)| **sid == *session) {
                Some((_, sid, _)) => Arc::clone(sid),
                None => session.into(),
            };
        }
    }

    fn arc(&mut self, s: &mut Arc<str>, redact: impl FnOnce(&mut Arc<str>)) {
        let session = &self.session;
        let hit = self
            .entries
            .iter()
            .find(|(from, sid, _)| Arc::ptr_eq(from, s) && Arc::ptr_eq(sid, session));
        if let Some((_, _, to)) = hit {
            // Most strings come out of redaction unchanged: then the call keeps its
            // own `Arc` and its count is not touched. On two threads the correlator's
            // thread counts these same `Arc`s, and every write here moved the
            // count's cache line from one core to the other.
            if !Arc::ptr_eq(to, s) {
                *s = Arc::clone(to);
            }
            return;
        }
        let from = Arc::clone(s);
        redact(s);
        let entry = (from, Arc::clone(session), Arc::clone(s));
        if self.entries.len() < MEMO_ENTRIES {
            self.entries.push(entry);
        } else {
            self.entries[self.next] = entry;
            self.next = (self.next + 1) % MEMO_ENTRIES;
        }
    }
}

/// A redactor that also knows the session ids of the report being redacted.
struct Known<'a> {
    inner: Redactor,
    /// Session ids made only of id characters (UUIDs, hex: what SDKs mint), found
    /// by looking each token of a string up: one pass whatever the number of sessions.
    simple: std::collections::HashMap<&'a str, String>,
    /// A single id-shaped session id (a call redacted on its own), found by a
    /// substring search rather than a lookup per word.
    one: Option<(&'a str, String)>,
    /// Other session ids, searched for one by one.
    complex: Vec<(&'a str, String)>,
}

impl<'a> Known<'a> {
    /// A redactor that replaces each of `sessions` (in any order, repeats allowed;
    /// ids shorter than 8 bytes are left alone) by its hash.
    fn with_sessions(inner: Redactor, sessions: &'a [String]) -> Self {
        let mut ids: Vec<&String> = sessions.iter().filter(|s| s.len() >= 8).collect();
        ids.sort();
        ids.dedup();
        let (simple, complex): (Vec<&String>, Vec<&String>) =
            ids.into_iter().partition(|id| id.bytes().all(is_id_char));
        Known {
            inner,
            one: None,
            simple: simple
                .into_iter()
                .map(|s| (s.as_str(), format!("session:{}", short_hash(s))))
                .collect(),
            complex: complex
                .into_iter()
                .map(|s| (s.as_str(), format!("session:{}", short_hash(s))))
                .collect(),
        }
    }
}

impl Known<'_> {
    /// Session ids replaced by their hashes, then the rules of `Redactor::text`.
    fn text<'s>(&self, s: &'s str) -> Cow<'s, str> {
        let mut out = Cow::Borrowed(s);
        if let Some((id, hashed)) = &self.one {
            out = whole_words(s, id, hashed);
        }
        if !self.simple.is_empty() {
            // One pass over the id-shaped words; a copy is made only on a hit.
            let b = s.as_bytes();
            let mut replaced: Option<String> = None;
            let (mut i, mut copied) = (0, 0);
            while i < b.len() {
                if !is_id_char(b[i]) {
                    i += 1;
                    continue;
                }
                let len = id_len(b, i);
                if let Some(h) = self.simple.get(&s[i..i + len]) {
                    let o = replaced.get_or_insert_with(|| String::with_capacity(s.len()));
                    o.push_str(&s[copied..i]);
                    o.push_str(h);
                    copied = i + len;
                }
                i += len;
            }
            if let Cow::Owned(o) = finish(s, replaced, copied) {
                out = Cow::Owned(o);
            }
        }
        for (id, hashed) in &self.complex {
            if out.contains(id) {
                out = Cow::Owned(out.replace(id, hashed));
            }
        }
        match out {
            Cow::Borrowed(b) => self.inner.text(b),
            Cow::Owned(o) => Cow::Owned(self.inner.text(&o).into_owned()),
        }
    }

    fn string(&self, s: &mut String) {
        if let Cow::Owned(r) = self.text(s) {
            *s = r;
        }
    }

    fn option(&self, s: &mut Option<String>) {
        if let Some(s) = s {
            self.string(s);
        }
    }

    /// Strings calls share (interned by the correlator): replaced only when redaction
    /// changes them, so the shared copy stays shared.
    fn arc(&self, s: &mut std::sync::Arc<str>) {
        if let Cow::Owned(r) = self.text(s) {
            *s = r.into();
        }
    }

    fn value(&self, v: &mut Value) {
        match v {
            Value::String(s) => self.string(s),
            Value::Array(a) => a.iter_mut().for_each(|x| self.value(x)),
            Value::Object(o) => o.values_mut().for_each(|x| self.value(x)),
            _ => {}
        }
        self.inner.value(v);
    }

    fn call(&self, c: &mut Call) {
        for a in shared_strings(c) {
            self.arc(a);
        }
        self.call_rest(c);
    }

    /// Every string of a call but its `shared_strings`.
    fn call_rest(&self, c: &mut Call) {
        self.option(&mut c.request_state);
        self.option(&mut c.returned_state);
        if let Some(t) = &mut c.timeline {
            self.string(&mut t.request_line);
            self.option(&mut t.content_type);
            self.option(&mut t.recorder_note);
            if let Some(id) = &mut t.session_id {
                *id = format!("session:{}", short_hash(id));
            }
            for e in &mut t.events {
                self.string(&mut e.event);
                self.option(&mut e.id);
                self.string(&mut e.what);
            }
        }
        let ev = &mut c.verdict.evidence;
        self.option(&mut ev.content_type);
        self.option(&mut ev.error_message);
        if let Some(d) = &mut ev.error_data {
            self.value(d);
        }
        self.option(&mut ev.result_type);
        self.option(&mut ev.excerpt);
        self.option(&mut ev.request_state);
        self.option(&mut ev.result_text);
        ev.notes.iter_mut().for_each(|n| self.string(n));
        ev.notifications.iter_mut().for_each(|n| self.string(n));
    }

    fn finding(&self, f: &mut Finding) {
        self.arc(f.scope.arc_mut());
        self.string(&mut f.detail);
    }

    fn without_sessions(inner: Redactor) -> Self {
        Known {
            inner,
            one: None,
            simple: Default::default(),
            complex: Vec::new(),
        }
    }

    fn report(&self, report: &mut Report) {
        self.run_fields(report);
        for ir in &mut report.inputs {
            self.input(ir);
        }
    }

    fn run_fields(&self, report: &mut Report) {
        // The filters echo what was typed, which can be anything.
        self.string(&mut report.filters);
        for (path, why) in &mut report.skipped {
            self.string(path);
            self.string(why);
        }
    }

    fn input(&self, ir: &mut InputReport) {
        self.string(&mut ir.path);
        self.string(&mut ir.stable_path);
        self.option(&mut ir.error);
        let a = &mut ir.analysis;
        for p in a.problems.iter_mut().chain(a.notices.iter_mut()) {
            self.string(&mut p.message);
        }
        for f in &mut a.findings {
            self.finding(f);
        }
        if let Some(spilled) = a.streamed.as_mut().and_then(|s| s.findings.as_mut()) {
            // Read back from disk when written, so redacted then. Only a streaming
            // run moves findings to disk, and its redaction knows no session ids.
            let inner = self.inner;
            spilled.on_read(Box::new(move |f| Known::without_sessions(inner).finding(f)));
        }
        for c in &mut a.calls {
            self.call(c);
        }
        for s in super::kept::scope_names_mut(a) {
            self.arc(s);
        }
    }
}

/// Finds `name` (a sensitive one) at `i` as a whole word; returns its kind and length.
fn name_at(b: &[u8], i: usize) -> Option<(NameKind, usize)> {
    if i > 0 && is_name_char(b[i - 1]) {
        return None;
    }
    let mut j = i;
    while j < b.len() && is_name_char(b[j]) {
        j += 1;
    }
    if j == i || j - i > 24 {
        return None;
    }
    // `b[i..j]` is ASCII by construction.
    let name = std::str::from_utf8(&b[i..j]).ok()?;
    name_kind(name).map(|k| (k, j - i))
}

/// Quote styles a value can be wrapped in.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Quote {
    None,
    Plain,
    Escaped,
}

fn quote_at(b: &[u8], i: usize) -> (Quote, usize) {
    if b.get(i) == Some(&b'"') {
        (Quote::Plain, 1)
    } else if b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'"') {
        (Quote::Escaped, 2)
    } else if b.get(i) == Some(&b'\'') {
        (Quote::Plain, 1)
    } else {
        (Quote::None, 0)
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && (b[i] == b' ' || b[i] == b'\t') {
        i += 1;
    }
    i
}

/// Where the value after `name` starts and ends, and the separator used, if `name`
/// is followed by one. `(value_start, value_end)`.
fn value_after(
    b: &[u8],
    name_start: usize,
    name_end: usize,
    kind: NameKind,
) -> Option<(usize, usize)> {
    let before_quote = name_start
        .checked_sub(1)
        .map(|p| b[p] == b'"' || b[p] == b'\'')
        .unwrap_or(false);
    let query = name_start
        .checked_sub(1)
        .map(|p| matches!(b[p], b'?' | b'&' | b';'))
        .unwrap_or(false);
    let mut i = name_end;
    let (close, n) = quote_at(b, i);
    i += n;
    i = skip_ws(b, i);
    let sep = *b.get(i)?;
    let pair = sep == b',' && close != Quote::None && before_quote_or_escaped(b, name_start);
    if !(sep == b':' || sep == b'=' || pair) {
        return None;
    }
    if kind == NameKind::QueryOnly && !(sep == b'=' && (query || name_start == 0)) {
        return None;
    }
    let _ = before_quote;
    i += 1;
    i = skip_ws(b, i);
    let (open, n) = quote_at(b, i);
    let start = i + n;
    let mut end = start;
    match open {
        Quote::Plain => {
            let q = b[i];
            while end < b.len() && b[end] != q && b[end] != b'\n' {
                if b[end] == b'\\' {
                    // `\"` inside a plain string is an escaped quote, unless it is the
                    // closing `\"` of an escaped-JSON string (handled below).
                    end += 1;
                }
                end += 1;
            }
        }
        Quote::Escaped => {
            while end < b.len() && !(b[end] == b'\\' && b.get(end + 1) == Some(&b'"')) {
                if b[end] == b'\\' && b.get(end + 1) == Some(&b'\\') {
                    end += 1;
                }
                end += 1;
            }
        }
        Quote::None => {
            // A number after `:` is data (a JSON-RPC `code`), not a secret.
            if sep == b':' && matches!(kind, NameKind::Secret | NameKind::QueryOnly) {
                let c = *b.get(start)?;
                if c.is_ascii_digit()
                    || c == b'-'
                    || c == b'{'
                    || c == b'['
                    || c == b'n'
                    || c == b't'
                    || c == b'f'
                {
                    return None;
                }
            }
            let header_line = kind == NameKind::Header && sep == b':';
            while end < b.len() {
                let c = b[end];
                let stop = if header_line {
                    c == b'\n'
                        || c == b'\r'
                        || c == b'"'
                        || (c == b'\\' && matches!(b.get(end + 1), Some(b'n' | b'r' | b'"')))
                } else {
                    matches!(
                        c,
                        b'&' | b'#'
                            | b' '
                            | b'\t'
                            | b'\n'
                            | b'\r'
                            | b'"'
                            | b'\''
                            | b','
                            | b';'
                            | b'}'
                            | b']'
                            | b')'
                            | b'<'
                            | b'>'
                            | b'\\'
                    )
                };
                if stop {
                    break;
                }
                end += 1;
            }
        }
    }
    let end = end.min(b.len());
    (end > start).then_some((start, end))
}

/// True when the name is preceded by `"` or `\"`: a JSON string, so `"name", "value"`
/// (a header pair list) counts as name and value.
fn before_quote_or_escaped(b: &[u8], name_start: usize) -> bool {
    name_start > 0 && (b[name_start - 1] == b'"' || b[name_start - 1] == b'\'')
}

fn by_name(s: &str) -> Cow<'_, str> {
    let b = s.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0; // bytes of `s` already accounted for in `out`
    let mut i = 0;
    while i < b.len() {
        if !b[i].is_ascii_alphabetic() {
            i += 1;
            continue;
        }
        let Some((kind, len)) = name_at(b, i) else {
            // Skip the rest of this word.
            while i < b.len() && is_name_char(b[i]) {
                i += 1;
            }
            continue;
        };
        let Some((start, end)) = value_after(b, i, i + len, kind) else {
            i += len;
            continue;
        };
        let value = &s[start..end];
        let replacement = match kind {
            NameKind::Hashed => {
                if value.starts_with("session:") {
                    value.to_owned()
                } else {
                    format!("session:{}", short_hash(value))
                }
            }
            _ if value == MARK => MARK.to_owned(),
            _ => MARK.to_owned(),
        };
        let o = out.get_or_insert_with(|| String::with_capacity(s.len()));
        o.push_str(&s[copied..start]);
        o.push_str(&replacement);
        copied = end;
        i = end;
    }
    match out {
        None => Cow::Borrowed(s),
        Some(mut o) => {
            o.push_str(&s[copied..]);
            Cow::Owned(o)
        }
    }
}

/// Length of the token-character run starting at `i`.
/// Characters of the session ids SDKs mint (UUIDs, hex, base64url).
/// `s` with each occurrence of `id` that is a whole id-shaped word (no id character
/// on either side) replaced by `by`: what the lookup per word of `Known::text` does
/// for one id, since `id` is itself made of id characters.
fn whole_words<'s>(s: &'s str, id: &str, by: &str) -> Cow<'s, str> {
    let (b, word) = (s.as_bytes(), id.as_bytes());
    let (mut out, mut copied, mut from) = (None::<String>, 0, 0);
    while let Some(k) = b
        .get(from..)
        .and_then(|rest| memchr::memmem::find(rest, word))
    {
        let (at, end) = (from + k, from + k + word.len());
        let alone =
            (at == 0 || !is_id_char(b[at - 1])) && b.get(end).is_none_or(|&c| !is_id_char(c));
        if alone && !word.is_empty() {
            let o = out.get_or_insert_with(|| String::with_capacity(s.len()));
            o.push_str(&s[copied..at]);
            o.push_str(by);
            copied = end;
            from = end;
        } else {
            from = at + 1;
        }
    }
    finish(s, out, copied)
}

fn is_id_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_')
}

fn id_len(b: &[u8], i: usize) -> usize {
    b[i..].iter().take_while(|&&c| is_id_char(c)).count()
}

fn run_len(b: &[u8], i: usize) -> usize {
    b[i..].iter().take_while(|&&c| is_token_char(c)).count()
}

fn looks_like_secret(tok: &str) -> bool {
    let t = tok.trim_end_matches(['.', '=', '/', '-']);
    if t.starts_with("eyJ") && t.len() >= 20 {
        return true; // a JWT (or a base64 JSON blob, which is as sensitive)
    }
    // A prefix at the start of the token or of one of its segments
    // (`key-sk_live_…`), followed by at least 12 more characters. Tokens are ASCII
    // (`is_token_char`), so a byte scan over segment starts is enough; this runs on
    // every word of every printed string, so it avoids building substring searchers.
    if prefixed_at(t.as_bytes()).is_some() {
        return true;
    }
    if t.len() >= 32 {
        let digits = t.bytes().filter(u8::is_ascii_digit).count();
        let upper = t.bytes().filter(u8::is_ascii_uppercase).count();
        let lower = t.bytes().filter(u8::is_ascii_lowercase).count();
        let hex = t.bytes().all(|c| c.is_ascii_hexdigit());
        // Mixed-case base64, or a long hex string: key material, not words or paths.
        let base64ish = digits > 0 && upper > 0 && lower > 0 && !t.contains('/');
        if base64ish || (hex && t.len() >= 40) {
            return true;
        }
    }
    false
}

/// Every rule, in order, without the prefilter.
fn every_rule(s: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(s);
    for pass in [pem, userinfo, by_name, by_shape, cut_tail] {
        if let Cow::Owned(changed) = pass(&out) {
            out = Cow::Owned(changed);
        }
    }
    out
}

/// An excerpt cut short (it ends in `…`, perhaps quoted inside other text) may have
/// cut a secret below what its rule needs to recognise it: a key prefix with a few
/// characters left, a URL cut inside its userinfo. The cut piece goes.
fn cut_tail(s: &str) -> Cow<'_, str> {
    const ELLIPSIS: &str = "…";
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut from = 0;
    while let Some(cut) = find(s, ELLIPSIS, from) {
        from = cut + ELLIPSIS.len();
        if let Some(start) = cut_secret(&s.as_bytes()[copied..cut]) {
            let o = out.get_or_insert_with(|| String::with_capacity(s.len()));
            o.push_str(&s[copied..copied + start]);
            o.push_str(MARK);
            copied = cut;
        }
    }
    finish(s, out, copied)
}

/// Where the secret cut off at the end of `b` starts, if one is.
fn cut_secret(b: &[u8]) -> Option<usize> {
    let start = b
        .iter()
        .rposition(|&c| !is_token_char(c))
        .map_or(0, |i| i + 1);
    // A URL cut in its authority (`postgres://app:pa…`): from the first `:` on.
    if let Some(sep) = memchr::memmem::rfind(b, b"://") {
        let authority = &b[sep + 3..];
        if !authority.iter().any(|&c| ends_authority(c) || c == b'@') {
            if let Some(colon) = authority.iter().position(|&c| c == b':') {
                let pw = sep + 3 + colon + 1;
                return (pw < b.len()).then_some(pw);
            }
        }
    }
    // A token cut short that starts like a key (`ghp_A1b2…`, `eyJhbG…`).
    let tail = &b[start..];
    let keyish = (0..tail.len()).any(|at| {
        (at == 0 || !tail[at - 1].is_ascii_alphanumeric())
            && (PREFIXED.iter().map(|p| p.prefix).chain(["eyJ"]))
                .any(|p| tail[at..].starts_with(p.as_bytes()) && tail.len() - at >= p.len() + 4)
    });
    keyish.then_some(start)
}

/// The key format of [`PREFIXED`] that `token`, or one of its segments, starts with.
fn prefixed_at(tb: &[u8]) -> Option<&'static Prefixed> {
    const SHORTEST: usize = 3 + 12; // `sk-` and twelve more
    if tb.len() < SHORTEST {
        return None;
    }
    for at in 0..=tb.len() - SHORTEST {
        if at > 0 && tb[at - 1].is_ascii_alphanumeric() {
            continue;
        }
        let rest = &tb[at..];
        let found = PREFIXED.iter().find(|p| {
            rest.starts_with(p.prefix.as_bytes()) && rest.len() >= p.prefix.len() + p.min_rest
        });
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Every word whose presence lets a rule fire; a string with none of them (and no
/// long token run) cannot hold anything the rules replace.
static TRIGGERS: LazyLock<AhoCorasick> = LazyLock::new(|| {
    let mut words: Vec<String> = Vec::new();
    for name in SECRET_NAMES.iter().chain(HASHED_NAMES) {
        words.extend(spellings(name));
    }
    // Query-only names count after `?`, `&` or `;` (or first in the string, below).
    for name in QUERY_NAMES {
        for lead in ["?", "&", ";"] {
            words.push(format!("{lead}{name}"));
        }
    }
    for p in PREFIXED {
        words.push(p.prefix.to_owned());
    }
    for w in ["://", "-----begin ", "bearer", "basic", "eyj", "…"] {
        words.push(w.to_owned());
    }
    // A DFA: built once (a few hundred short words), then one table lookup per
    // byte on every printed string.
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .kind(Some(aho_corasick::AhoCorasickKind::DFA))
        .build(&words)
        .expect("the trigger words are plain literals")
});

/// `x-api-key` as every mix of `-` and `_` it may be written with (case is left to
/// the matcher).
fn spellings(name: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    for c in name.chars() {
        if c == '-' {
            out = out
                .into_iter()
                .flat_map(|s| [format!("{s}-"), format!("{s}_")])
                .collect();
        } else {
            out.iter_mut().for_each(|s| s.push(c));
        }
    }
    out
}

/// The prefilter: false only when no rule can change `s`.
fn may_hold_secret(s: &str) -> bool {
    let b = s.as_bytes();
    if TRIGGERS.is_match(b) {
        return true;
    }
    if b[0].is_ascii_alphabetic() && separator_follows(b) && name_at(b, 0).is_some() {
        return true; // a query-only name first in the string: `key=…`
    }
    // A run of 32 token characters may be key material (`looks_like_secret`).
    long_token_run(b)
}

/// Whether `b` holds a run of 32 token characters. Every printed string that no
/// trigger word fires on is read through here, and a branch per byte and class was
/// as slow as the trigger search itself: blocks are rejected first, by table.
fn long_token_run(b: &[u8]) -> bool {
    const TOKEN: [u8; 256] = {
        let mut t = [0u8; 256];
        let mut c = 0;
        while c < 256 {
            t[c] = is_token_char(c as u8) as u8;
            c += 1;
        }
        t
    };
    // A run of 32 holds one of the string's 16-byte blocks whole; in text a block
    // of token characters alone is rare, and a word's end rejects a block at once.
    let whole_block = |block: &[u8]| block.iter().all(|&c| TOKEN[usize::from(c)] != 0);
    if !b.chunks_exact(16).any(whole_block) {
        return false;
    }
    let mut run = 0u32;
    let mut longest = 0u32;
    for &c in b {
        // A non-token byte multiplies the run by zero.
        run = (run + 1) * u32::from(TOKEN[usize::from(c)]);
        longest = longest.max(run);
    }
    longest >= 32
}

/// Whether the first word of `b` is followed (after a quote and blanks) by a byte
/// `value_after` takes for a separator: without one no name there has a value, and
/// the name need not be looked up (most strings start with a word).
fn separator_follows(b: &[u8]) -> bool {
    let j = b.iter().take_while(|&&c| is_name_char(c)).count();
    let (_, n) = quote_at(b, j);
    let k = skip_ws(b, j + n);
    matches!(b.get(k), Some(b':' | b'=' | b','))
}

/// The body of every PEM private key block becomes [`MARK`]; the armour lines stay so
/// a reader still sees what was there. A block cut short (an excerpt) loses all
/// that follows its header.
fn pem(s: &str) -> Cow<'_, str> {
    const BEGIN: &str = "-----BEGIN ";
    const DASHES: &str = "-----";
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut from = 0;
    while let Some(at) = find(s, BEGIN, from) {
        let label_start = at + BEGIN.len();
        // A label is a few words (`RSA PRIVATE KEY`, `PGP PRIVATE KEY BLOCK`).
        let Some(label_len) = s[label_start..]
            .get(..s.len().min(label_start + 64) - label_start)
            .and_then(|l| l.find(DASHES))
        else {
            from = label_start;
            continue;
        };
        let label = &s[label_start..label_start + label_len];
        let body_start = label_start + label_len + DASHES.len();
        if !label.contains("PRIVATE KEY") {
            from = body_start;
            continue;
        }
        let body_end = find(s, "-----END ", body_start).unwrap_or(s.len());
        let o = out.get_or_insert_with(|| String::with_capacity(s.len()));
        o.push_str(&s[copied..body_start]);
        o.push_str(MARK);
        copied = body_end;
        from = body_end.max(body_start);
    }
    finish(s, out, copied)
}

fn find(s: &str, needle: &str, from: usize) -> Option<usize> {
    memchr::memmem::find(&s.as_bytes()[from..], needle.as_bytes()).map(|i| from + i)
}

fn finish(s: &str, out: Option<String>, copied: usize) -> Cow<'_, str> {
    match out {
        None => Cow::Borrowed(s),
        Some(mut o) => {
            o.push_str(&s[copied..]);
            Cow::Owned(o)
        }
    }
}

/// A URL scheme character (`mongodb+srv`, `git+ssh`).
fn is_scheme_char(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.')
}

/// Where an authority (`user:pw@host:port`) ends: at the path, query or fragment,
/// or at anything that cannot sit in a URL written in text or JSON.
fn ends_authority(b: u8) -> bool {
    b.is_ascii_whitespace()
        || b.is_ascii_control()
        || matches!(
            b,
            b'/' | b'?' | b'#' | b'"' | b'\'' | b'\\' | b'<' | b'>' | b'`'
        )
}

/// The password of `scheme://user:password@host` becomes [`MARK`], in any URL or
/// DSN (`postgres://`, `redis://:pw@`, `mongodb+srv://`). The user stays: it names
/// an account, not a secret (a token used as the user is caught by its shape).
fn userinfo(s: &str) -> Cow<'_, str> {
    // Longer than any real authority; bounds the scan after each `://`.
    const MAX_AUTHORITY: usize = 1024;
    let b = s.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut from = 0;
    while let Some(sep) = find(s, "://", from) {
        from = sep + 3;
        if sep == 0 || !is_scheme_char(b[sep - 1]) {
            continue;
        }
        let start = sep + 3;
        let limit = b.len().min(start + MAX_AUTHORITY);
        let end = (start..limit)
            .find(|&i| ends_authority(b[i]))
            .unwrap_or(limit);
        // The last `@`: a careless DSN leaves `@` unescaped in the password.
        let Some(at) = b[start..end].iter().rposition(|&c| c == b'@') else {
            continue;
        };
        let at = start + at;
        let Some(colon) = b[start..at].iter().position(|&c| c == b':') else {
            continue;
        };
        let pw = start + colon + 1;
        if pw < at && &s[pw..at] != MARK {
            let o = out.get_or_insert_with(|| String::with_capacity(s.len()));
            o.push_str(&s[copied..pw]);
            o.push_str(MARK);
            copied = at;
        }
        from = at;
    }
    finish(s, out, copied)
}

fn by_shape(s: &str) -> Cow<'_, str> {
    let b = s.as_bytes();
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if !is_token_char(b[i]) || (i > 0 && is_token_char(b[i - 1])) {
            i += 1;
            continue;
        }
        // `Bearer <token>` / `Basic <token>`: blank the credential, keep the scheme.
        let word = run_len(b, i);
        let w = &s[i..i + word];
        if w.eq_ignore_ascii_case("bearer") || w.eq_ignore_ascii_case("basic") {
            let j = skip_ws(b, i + word);
            if j > i + word && j < b.len() && is_token_char(b[j]) {
                let len = run_len(b, j);
                let tok = &s[j..j + len];
                if len >= 8 && tok != MARK {
                    let o = out.get_or_insert_with(|| String::with_capacity(s.len()));
                    o.push_str(&s[copied..j]);
                    o.push_str(MARK);
                    copied = j + len;
                    i = j + len;
                    continue;
                }
            }
        }
        if looks_like_secret(w) {
            let o = out.get_or_insert_with(|| String::with_capacity(s.len()));
            o.push_str(&s[copied..i]);
            o.push_str(MARK);
            copied = i + word;
        }
        i += word.max(1);
    }
    match out {
        None => Cow::Borrowed(s),
        Some(mut o) => {
            o.push_str(&s[copied..]);
            Cow::Owned(o)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// One session id searched for as a substring replaces what the lookup per
        /// word replaces: whole words only, at starts, ends, next to each other and
        /// inside longer words (checked to fail without the test for id
        /// characters on either side).
        #[test]
        fn one_id_is_replaced_as_the_lookup_per_word_replaces_it(
            s in "[ab_\\- /.:é]{0,40}",
            id in "[ab_-]{1,4}",
        ) {
            let by = "session:0123456789abcdef".to_owned();
            let plain = Redactor { enabled: false };
            let one = Known { inner: plain, one: Some((id.as_str(), by.clone())), simple: Default::default(), complex: Vec::new() };
            let each = Known { inner: plain, one: None, simple: [(id.as_str(), by.clone())].into_iter().collect(), complex: Vec::new() };
            proptest::prop_assert_eq!(one.text(&s), each.text(&s));
        }
    }

    #[test]
    fn the_memo_reuses_a_redaction_only_for_the_same_string_and_session() {
        let mut memo = Memo::default();
        let mut calls = 0;
        let shared: Arc<str> = "tool-for-session-abcdefgh".into();
        let redact = |session: &str, s: &mut Arc<str>, calls: &mut i32| {
            *calls += 1;
            *s = s.replace(session, "session:x").into();
        };
        for (session, expect_calls, expect) in [
            ("abcdefgh", 1, "tool-for-session-session:x"),
            ("abcdefgh", 1, "tool-for-session-session:x"),
            // Another session: the same string is redacted again, for it.
            ("zzzzzzzz", 2, "tool-for-session-abcdefgh"),
            ("abcdefgh", 2, "tool-for-session-session:x"),
        ] {
            let mut s = Arc::clone(&shared);
            memo.session(session);
            memo.arc(&mut s, |s| redact(session, s, &mut calls));
            assert_eq!((calls, &*s), (expect_calls, expect));
        }
        // The same text in another allocation is not taken for the shared one.
        let mut other: Arc<str> = "tool-for-session-abcdefgh".into();
        memo.session("abcdefgh");
        memo.arc(&mut other, |s| redact("abcdefgh", s, &mut calls));
        assert_eq!(calls, 3);
        // However many strings pass, the memo stays small.
        memo.session("");
        for i in 0..1000 {
            let mut s: Arc<str> = format!("s{i}").into();
            memo.arc(&mut s, |_| {});
        }
        assert_eq!(memo.entries.len(), MEMO_ENTRIES);
    }

    fn r(s: &str) -> String {
        Redactor::default().text(s).into_owned()
    }

    #[test]
    fn headers_in_every_spelling() {
        assert_eq!(
            r("Authorization: Bearer abc.def.ghi"),
            "Authorization: [REDACTED]"
        );
        assert_eq!(r("cookie: a=1; b=2\nnext"), "cookie: [REDACTED]\nnext");
        assert_eq!(
            r(r#"{"message":"no Authorization: Bearer abcdefghijk","data":1}"#),
            r#"{"message":"no Authorization: [REDACTED]","data":1}"#
        );
        assert_eq!(
            r(r#"{"X-Api-Key": "k-123", "Accept": "x"}"#),
            r#"{"X-Api-Key": "[REDACTED]", "Accept": "x"}"#
        );
        assert_eq!(
            r(r#"[["Set-Cookie","sid=1; HttpOnly"],["Content-Type","a/b"]]"#),
            r#"[["Set-Cookie","[REDACTED]"],["Content-Type","a/b"]]"#
        );
        assert_eq!(
            r(r#"{\"password\": \"hunter2\", \"user\": \"bob\"}"#),
            r#"{\"password\": \"[REDACTED]\", \"user\": \"bob\"}"#
        );
    }

    #[test]
    fn query_strings_and_forms() {
        assert_eq!(
            r("POST https://h/mcp?access_token=abc&x=1#f"),
            "POST https://h/mcp?access_token=[REDACTED]&x=1#f"
        );
        assert_eq!(
            r("https://h/cb?code=xyz&state=s1"),
            "https://h/cb?code=[REDACTED]&state=[REDACTED]"
        );
        assert_eq!(
            r("grant_type=x&code_verifier=v1&client_secret=s"),
            "grant_type=x&code_verifier=[REDACTED]&client_secret=[REDACTED]"
        );
        assert_eq!(r("https://h/?key=AAA"), "https://h/?key=[REDACTED]");
        assert_eq!(
            r("API_KEY=abc Client-Secret: s1"),
            "API_KEY=[REDACTED] Client-Secret: [REDACTED]"
        );
        assert_eq!(
            r("https://b/o?X-Amz-Credential=AK%2F1&X-Amz-Signature=f00"),
            "https://b/o?X-Amz-Credential=[REDACTED]&X-Amz-Signature=[REDACTED]"
        );
        // A JSON key named like a query-only name is data.
        assert_eq!(r(r#"{"key": "a.txt"}"#), r#"{"key": "a.txt"}"#);
    }

    #[test]
    fn jsonrpc_codes_are_not_secrets() {
        let s = r#"{"jsonrpc":"2.0","id":3,"error":{"code":-32602,"message":"Invalid params"}}"#;
        assert_eq!(r(s), s);
        assert_eq!(
            r("code -32602: Invalid params"),
            "code -32602: Invalid params"
        );
        assert_eq!(r(r#"{"code":"oauth-code-1"}"#), r#"{"code":"[REDACTED]"}"#);
    }

    #[test]
    fn secrets_by_shape() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl";
        assert_eq!(r(&format!("got {jwt} back")), "got [REDACTED] back");
        assert_eq!(r("key sk-proj-abcdefghijklmnop1234"), "key [REDACTED]");
        assert_eq!(r("ghp_0123456789abcdefABCDEF0123"), "[REDACTED]");
        assert_eq!(r("bearer abcdefgh12345678"), "bearer [REDACTED]");
        assert_eq!(r("AKIAIOSFODNN7EXAMPLE1"), "[REDACTED]");
        assert_eq!(r("db-key-sk_live_abcdefghij0123"), "[REDACTED]");
        assert_eq!(
            r("task-queue-processing-item"),
            "task-queue-processing-item"
        );
        // Ordinary text, UUIDs, paths and short hex stay.
        for keep in [
            "4f1c2b7e-5d7a-4a8e-9a31-1d2c3b4a5f60",
            "/usr/local/share/some/very/long/path/name/here.txt",
            "the stream ended (closed) before a response for id 12",
            "deadbeef",
            "Basic auth is off",
        ] {
            assert_eq!(r(keep), keep);
        }
    }

    #[test]
    fn session_ids_become_stable_hashes() {
        let a = r("Mcp-Session-Id: 4f1c2b7e-5d7a");
        assert_eq!(
            a,
            format!("Mcp-Session-Id: session:{}", short_hash("4f1c2b7e-5d7a"))
        );
        assert_eq!(r(&a), a, "redaction is idempotent");
    }

    #[test]
    fn values_by_key() {
        let mut v = serde_json::json!({"code": -32602, "data": {"refresh_token": "r1", "note": "Bearer abcdefghijkl"}, "Mcp-Session-Id": "s1"});
        Redactor::default().value(&mut v);
        assert_eq!(v["code"], -32602);
        assert_eq!(v["data"]["refresh_token"], MARK);
        assert_eq!(v["data"]["note"], "Bearer [REDACTED]");
        assert_eq!(v["Mcp-Session-Id"], format!("session:{}", short_hash("s1")));
    }

    #[test]
    fn off_means_off() {
        let r = Redactor { enabled: false };
        assert_eq!(r.text("Authorization: x"), "Authorization: x");
    }

    #[test]
    fn every_rule_redacts_its_example() {
        for rule in RULES {
            let out = r(rule.example);
            assert!(
                !out.contains(rule.secret),
                "{}: {} -> {out}",
                rule.what,
                rule.example
            );
            assert!(out.contains(MARK), "{}: {out}", rule.what);
            // Each example is also caught inside JSON text, escaped once more.
            let json = serde_json::to_string(&serde_json::json!({ "text": rule.example })).unwrap();
            let escaped = serde_json::to_string(&json).unwrap();
            for wrapped in [json, escaped] {
                let out = r(&wrapped);
                assert!(!out.contains(rule.secret), "{}: {out}", rule.what);
            }
        }
    }

    /// A made-up key of the given format: its prefix and `n` more characters.
    fn fake(p: &Prefixed, n: usize) -> String {
        let body = "A1b2C3d4E5f6G7h8J9k0L1m2N3p4Q5r6S7t8U9v0W1x2";
        format!("{}{}", p.prefix, &body[..n])
    }

    #[test]
    fn every_key_format_is_redacted_by_its_prefix() {
        for p in PREFIXED {
            let key = fake(p, p.min_rest + 4);
            assert_eq!(
                prefixed_at(key.as_bytes()).map(|q| q.what),
                Some(p.what),
                "{key}"
            );
            for text in [
                format!("key {key} end"),
                format!("{{\"k\":\"{key}\"}}"),
                format!("x-{key}"),
            ] {
                let out = r(&text);
                assert!(!out.contains(&key), "{}: {out}", p.what);
            }
            // One character short of the minimum is not this format (`sk-ant-` and
            // eleven more is still a generic `sk-` key).
            let short = fake(p, p.min_rest - 1);
            assert_ne!(
                prefixed_at(short.as_bytes()).map(|q| q.what),
                Some(p.what),
                "{short}"
            );
        }
    }

    #[test]
    fn the_documented_table_names_every_key_format() {
        let doc = include_str!("../../docs/redaction.md");
        for p in PREFIXED {
            assert!(doc.contains(&format!("`{}`", p.prefix)), "{}", p.prefix);
        }
    }

    #[test]
    fn userinfo_passwords_in_urls_and_dsns() {
        assert_eq!(
            r("POST https://alice:hunter2@mcp.example/mcp?x=1"),
            "POST https://alice:[REDACTED]@mcp.example/mcp?x=1"
        );
        assert_eq!(
            r("redis://:pw@cache:6379"),
            "redis://:[REDACTED]@cache:6379"
        );
        assert_eq!(
            r(r#"{"dsn":"postgres://u:p@ss@db/x"}"#),
            r#"{"dsn":"postgres://u:[REDACTED]@db/x"}"#
        );
        assert_eq!(
            r(r#"{\"url\":\"amqp://g:pw@mq\"}"#),
            r#"{\"url\":\"amqp://g:[REDACTED]@mq\"}"#
        );
        // No password, a port, or an `@` in the path: nothing to hide.
        for keep in [
            "https://alice@host/mcp",
            "https://host:8443/mcp",
            "http://host/users/@me",
            "see ://x:y@z",
        ] {
            assert_eq!(r(keep), keep);
        }
        assert_eq!(
            r("https://a:b@h/ https://c:d@i/"),
            "https://a:[REDACTED]@h/ https://c:[REDACTED]@i/"
        );
        // Cut excerpts: only the cut piece goes, and only when it looks like a key.
        assert_eq!(r("ended with lorem ipsu…"), "ended with lorem ipsu…");
        assert_eq!(r("see https://host/pa…"), "see https://host/pa…");
        assert_eq!(r("key sk-ant-abcd…"), "key [REDACTED]…");
    }

    #[test]
    fn pem_blocks_keep_their_armour() {
        assert_eq!(
            r("-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg\n-----END EC PRIVATE KEY-----\n"),
            "-----BEGIN EC PRIVATE KEY-----[REDACTED]-----END EC PRIVATE KEY-----\n"
        );
        // A certificate is public.
        let cert = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----";
        assert_eq!(r(cert), cert);
    }

    #[test]
    fn the_prefilter_lets_only_harmless_text_through() {
        let mut texts: Vec<String> = RULES.iter().map(|r| r.example.to_owned()).collect();
        texts.extend(PREFIXED.iter().map(|p| fake(p, p.min_rest)));
        texts.extend(
            [
                "key=abc",
                "Key = abc",
                "state=s1&x=1",
                "MCP_SESSION_ID=4f1c2b7e",
                "x_API-key: 1",
                "the stream ended",
                "TOOL_SUCCESS in 12 ms",
            ]
            .map(String::from),
        );
        for t in &texts {
            assert_eq!(Redactor::default().text(t), every_rule(t), "{t}");
        }
        assert!(!may_hold_secret(
            "the stream ended (closed) before a response for id 12"
        ));
        assert!(!may_hold_secret("HTTP 500 carried no JSON-RPC error"));
    }

    proptest::proptest! {
        /// Whatever the text, the prefilter never skips a string a rule would change.
        #[test]
        fn the_prefilter_never_hides_a_secret(parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "key", "=", "?", "&", ";", ":", ",", "//", "@", " ", "\t", "\"", "\\\"", "'", "-", "_",
                "Bearer ", "basic ", "eyJhbGci", "Authorization", "x-api", "SESSION", "code",
                "AKIA", "ghp_", "sk-", "xoxb-", "abcdefgh", "ABCD1234", "0123456789abcdef",
                "-----BEGIN ", "PRIVATE KEY-----", "-----END ", "https", "redis", "é", "…",
            ]),
            0..24,
        )) {
            let t: String = parts.concat();
            proptest::prop_assert_eq!(Redactor::default().text(&t), every_rule(&t));
        }

        /// The block test in front of the run count changes no answer: a run of 32
        /// token characters anywhere, at any offset from a block's start.
        #[test]
        fn a_long_token_run_is_found_wherever_it_starts(
            text in "[a-z0-9 ._~+/=:é-]{0,120}",
            run in 28usize..36,
            at in 0usize..120,
        ) {
            let mut b = text.into_bytes();
            let at = at.min(b.len());
            b.splice(at..at, std::iter::repeat_n(b'k', run));
            let mut longest = 0;
            let mut here = 0;
            for &c in &b {
                here = if is_token_char(c) { here + 1 } else { 0 };
                longest = longest.max(here);
            }
            proptest::prop_assert_eq!(long_token_run(&b), longest >= 32);
        }
    }

    #[test]
    fn multibyte_text_is_safe() {
        assert_eq!(r("é password=ü€ ok"), "é password=[REDACTED] ok");
    }
}
