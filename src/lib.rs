//! mcpsift: offline analysis of Model Context Protocol traffic.
//!
//! ```text
//! input files ──► ingest ──► Exchange ──► jsonrpc ──► classify ──► correlate ──► report
//!   (jsonl, …)    (sse)      (model)     (messages)   (per call)   (across calls)
//! ```
//!
//! Every input format becomes `model::Exchange`s; `correlate` assembles each
//! `tools/call` with whatever answered it and asks the one shared classifier
//! (`classify::classify`) for its verdict, then looks across calls for findings.

#![forbid(unsafe_code)]

pub mod batch;
pub mod classify;
pub mod config;
pub mod correlate;
pub mod explain;
pub mod ingest;
pub mod json;
pub mod jsonrpc;
pub mod model;
pub mod report;
pub mod sse;
pub mod stage;
pub mod text;
