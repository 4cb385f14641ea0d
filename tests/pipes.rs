//! The same bytes give the same report from a file and from any pipe: every input
//! format, compressed (gzip, zstd, bzip2, xz) and archived, read whole and read through a reader that hands
//! over one byte (or a few) at a time, as `tcpdump -w -`, `ssh host cat` or `zcat`
//! deliver it. The whole JSON report is compared, not a count.

use mcpsift::batch::{self, Report};
use mcpsift::config::Config;
use mcpsift::report::{self, HumanOptions, OutputFormat};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

/// A pipe that returns at most `sizes[k % len]` bytes on its k-th read.
struct Trickle<'a> {
    data: &'a [u8],
    sizes: &'a [usize],
    k: usize,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let want = self.sizes[self.k % self.sizes.len()];
        self.k += 1;
        let n = want.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

/// The JSON report of one named input read from `reader`.
fn json_report(name: &str, reader: Box<dyn Read + '_>) -> String {
    let mut report = Report::default();
    for r in batch::analyse_named(name.to_owned(), reader, false, &Config::default()) {
        match r {
            Ok(ir) => report.inputs.push(ir),
            Err(skip) => report.skipped.push(skip),
        }
    }
    let mut out = Vec::new();
    report::write(
        &report,
        OutputFormat::Json,
        &HumanOptions::default(),
        &mut out,
    )
    .unwrap();
    String::from_utf8(out).unwrap()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(data).unwrap();
    gz.finish().unwrap()
}

fn tar_of(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, data) in files {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, data.as_slice()).unwrap();
    }
    b.into_inner().unwrap()
}

/// One file of every format the tool reads.
fn every_format() -> Vec<(String, Vec<u8>)> {
    let files = [
        "samples/stateless-2026.jsonl",
        "samples/stdio-tee.jsonl",
        "samples/stdio-transcript.jsonl",
        "samples/streamable-http.jsonl",
        "lab/captures/gzip_chunked_ts/capture.har",
        "lab/captures/gzip_chunked_ts/capture.pcap",
        "lab/captures/gzip_chunked_ts/capture.pcapng",
        "lab/captures/gzip_chunked_ts/exchanges.jsonl",
        "lab/captures/sse_cut_ts/capture.pcapng",
        "tests/fixtures/pcap/mcp-loopback.pcap",
        "tests/fixtures/har/mitmproxy-failures.har",
        "tests/fixtures/clientlogs/claude-code-session.jsonl",
        "tests/fixtures/clientlogs/codex-rollout.jsonl",
        "tests/fixtures/clientlogs/conformance-checks.json",
        "tests/fixtures/clientlogs/inspector-network-kitchen-2026-08-10T09-46-00.json",
        "tests/fixtures/clientlogs/otel-spans.jsonl",
        "tests/fixtures/clientlogs/vscode-mcp-output.log",
    ];
    files
        .iter()
        .map(|f| (f.to_string(), std::fs::read(repo(f)).unwrap()))
        .collect()
}

/// Every format on its own, gzipped, and all of them in a tar and a tar.gz.
fn cases() -> Vec<(String, Vec<u8>)> {
    let plain = every_format();
    let mut out = Vec::new();
    for (name, data) in &plain {
        out.push((format!("{name}.gz"), gzip(data)));
        out.push((name.clone(), data.clone()));
    }
    let tar = tar_of(&plain);
    out.push(("all.tar.gz".to_owned(), gzip(&tar)));
    out.push(("all.tar.zst".to_owned(), zstd(&tar)));
    // The other decoders, on a pcapng (binary) and a HAR (text).
    for (name, data) in plain
        .iter()
        .filter(|(n, _)| n.ends_with(".pcapng") || n.ends_with(".har"))
    {
        out.push((format!("{name}.zst"), zstd(data)));
        out.push((format!("{name}.bz2"), bzip2(data)));
        out.push((format!("{name}.xz"), xz(data)));
    }
    out.push(("all.tar".to_owned(), tar));
    out
}

fn zstd(data: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
}

fn bzip2(data: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

fn xz(data: &[u8]) -> Vec<u8> {
    let mut w =
        lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::with_preset(1)).unwrap();
    w.write_all(data).unwrap();
    w.finish().unwrap()
}

#[test]
fn a_pipe_of_any_chunking_gives_the_report_of_the_file() {
    for (name, data) in cases() {
        let whole = json_report(&name, Box::new(data.as_slice()));
        assert!(
            whole.contains("\"status\":\"ok\""),
            "{name} is not read at all:\n{whole}"
        );
        for sizes in [&[1usize][..], &[3, 1, 7, 2], &[511, 1, 4096]] {
            let piped = json_report(
                &name,
                Box::new(Trickle {
                    data: &data,
                    sizes,
                    k: 0,
                }),
            );
            assert_eq!(piped, whole, "{name} read {sizes:?} bytes at a time");
        }
    }
}

#[test]
fn an_archive_from_a_pipe_keeps_every_member() {
    let plain = every_format();
    let tar = gzip(&tar_of(&plain));
    let piped = json_report(
        "x.tar.gz",
        Box::new(Trickle {
            data: &tar,
            sizes: &[1],
            k: 0,
        }),
    );
    let v: serde_json::Value = serde_json::from_str(&piped).unwrap();
    let inputs: Vec<&serde_json::Value> = v["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["type"] == "input")
        .collect();
    assert_eq!(inputs.len(), plain.len(), "{piped}");
    for i in &inputs {
        assert_eq!(i["status"], "ok", "{i}");
        assert!(i["calls"].as_u64() > Some(0), "{i}");
    }
}
