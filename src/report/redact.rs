//! Redaction: the one pass that every string leaving mcpsift goes through, on by
//! default in every output format (`--no-redact` turns it off).
//!
//! Two kinds of rule, both applied to any text (JSON, escaped JSON inside a JSON
//! string, header dumps, URLs, prose):
//!
//! - **by name**: the value after a sensitive name (`Authorization: …`,
//!   `"access_token": "…"`, `?code=…`, `["Cookie", "…"]`) is replaced;
//!   `Mcp-Session-Id` values become `session:<hash>`, the same short hash the
//!   correlator uses for scopes, so a session can still be followed;
//! - **by shape**: `Bearer …`, JWT-looking `eyJ…` tokens, keys with well-known
//!   prefixes (`sk-`, `ghp_`, `xoxb-`, `AKIA`, …) and long high-entropy runs are
//!   replaced wherever they occur.
//!
//! Hand-written rather than regex-based: the rules need JSON-aware quoting (`"`
//! and `\"`), which is awkward in a regex and cheap by hand.

use crate::batch::Report;
use crate::correlate::short_hash;
use serde_json::Value;
use std::borrow::Cow;

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

/// Prefixes of well-known credential formats.
const SECRET_PREFIXES: &[&str] = &[
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "pk_live_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "ghr_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "xoxa-",
    "xoxs-",
    "AKIA",
    "ASIA",
    "AIza",
    "npm_",
    "hf_",
    "pypi-",
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

fn is_token_char(b: u8) -> bool {
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
    if HASHED_NAMES.contains(&lower) {
        Some(NameKind::Hashed)
    } else if SECRET_NAMES.contains(&lower) {
        Some(if HEADER_NAMES.contains(&lower) {
            NameKind::Header
        } else {
            NameKind::Secret
        })
    } else if QUERY_NAMES.contains(&lower) {
        Some(NameKind::QueryOnly)
    } else {
        None
    }
}

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
        if !self.enabled || s.is_empty() {
            return Cow::Borrowed(s);
        }
        match by_name(s) {
            Cow::Borrowed(_) => by_shape(s),
            Cow::Owned(named) => Cow::Owned(by_shape(&named).into_owned()),
        }
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
    pub fn report(&self, report: &mut Report) {
        if !self.enabled {
            return;
        }
        let mut sessions: Vec<String> = report
            .inputs
            .iter()
            .flat_map(|i| &i.analysis.calls)
            .filter_map(|c| c.timeline.as_ref()?.session_id.clone())
            .filter(|s| s.len() >= 8)
            .collect();
        sessions.sort();
        sessions.dedup();
        let (simple, complex): (Vec<&String>, Vec<&String>) = sessions
            .iter()
            .filter(|id| !id.is_empty())
            .partition(|id| id.bytes().all(is_id_char));
        let r = Known {
            inner: *self,
            simple: simple
                .into_iter()
                .map(|s| (s.as_str(), format!("session:{}", short_hash(s))))
                .collect(),
            complex: complex
                .into_iter()
                .map(|s| (s.as_str(), format!("session:{}", short_hash(s))))
                .collect(),
        };
        r.report(report);
    }
}

/// A redactor that also knows the session ids of the report being redacted.
struct Known<'a> {
    inner: Redactor,
    /// Session ids made only of id characters (UUIDs, hex: what SDKs mint), found
    /// by looking each token of a string up: one pass whatever the number of sessions.
    simple: std::collections::HashMap<&'a str, String>,
    /// Other session ids, searched for one by one.
    complex: Vec<(&'a str, String)>,
}

impl Known<'_> {
    fn string(&self, s: &mut String) {
        if !self.simple.is_empty() {
            // One pass over the id-shaped words; a copy is made only on a hit.
            let b = s.as_bytes();
            let mut out: Option<String> = None;
            let (mut i, mut copied) = (0, 0);
            while i < b.len() {
                if !is_id_char(b[i]) {
                    i += 1;
                    continue;
                }
                let len = id_len(b, i);
                if let Some(h) = self.simple.get(&s[i..i + len]) {
                    let o = out.get_or_insert_with(|| String::with_capacity(s.len()));
                    o.push_str(&s[copied..i]);
                    o.push_str(h);
                    copied = i + len;
                }
                i += len;
            }
            if let Some(mut o) = out {
                o.push_str(&s[copied..]);
                *s = o;
            }
        }
        for (id, hashed) in &self.complex {
            if s.contains(id) {
                *s = s.replace(id, hashed);
            }
        }
        self.inner.string(s);
    }

    fn option(&self, s: &mut Option<String>) {
        if let Some(s) = s {
            self.string(s);
        }
    }

    /// Strings calls share (interned by the correlator): replaced only when redaction
    /// changes them, so the shared copy stays shared.
    fn arc(&self, s: &mut std::sync::Arc<str>) {
        let mut owned = s.to_string();
        self.string(&mut owned);
        if *owned != **s {
            *s = owned.into();
        }
    }

    fn arc_option(&self, s: &mut Option<std::sync::Arc<str>>) {
        if let Some(s) = s {
            self.arc(s);
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

    fn report(&self, report: &mut Report) {
        // The filters echo what was typed, which can be anything.
        self.string(&mut report.filters);
        for (path, why) in &mut report.skipped {
            self.string(path);
            self.string(why);
        }
        for ir in &mut report.inputs {
            self.string(&mut ir.path);
            self.string(&mut ir.stable_path);
            self.option(&mut ir.error);
            let a = &mut ir.analysis;
            for p in a.problems.iter_mut().chain(a.notices.iter_mut()) {
                self.string(&mut p.message);
            }
            for f in &mut a.findings {
                self.string(&mut f.scope);
                self.string(&mut f.detail);
            }
            for c in &mut a.calls {
                self.arc(&mut c.scope);
                self.arc(&mut c.endpoint);
                self.arc_option(&mut c.tool);
                self.arc_option(&mut c.protocol_version);
                self.arc_option(&mut c.client);
                self.arc_option(&mut c.server);
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
    let tb = t.as_bytes();
    if tb.len() >= 15 {
        for at in 0..tb.len() - 14 {
            if at > 0 && tb[at - 1].is_ascii_alphanumeric() {
                continue;
            }
            let rest = &tb[at..];
            if SECRET_PREFIXES
                .iter()
                .any(|p| rest.starts_with(p.as_bytes()) && rest.len() >= p.len() + 12)
            {
                return true;
            }
        }
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
    fn multibyte_text_is_safe() {
        assert_eq!(r("é password=ü€ ok"), "é password=[REDACTED] ok");
    }
}
