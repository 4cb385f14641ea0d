//! Compressed inputs and archives inside archives: gzip, zstd, bzip2 and xz are
//! read like the bytes they hold, under the same decompression cap; a `.tar.gz`
//! (or `.tar`, `.tar.zst`, …) inside an archive is read member by member, named
//! `OUTER!/inner.tar.gz!/member`, up to a depth cap. Every file here is made by the
//! test with the same crates the tool reads them with.

use serde_json::Value;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn analyze(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mcpsift"))
        .arg("analyze")
        .args(args)
        .output()
        .expect("run mcpsift")
}

fn jsonl(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("every stdout line is JSON"))
        .collect()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(data).unwrap();
    e.finish().unwrap()
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

/// A compressor: the bytes it writes for the bytes it is given.
type Compress = fn(&[u8]) -> Vec<u8>;

const COMPRESSORS: &[(&str, Compress)] = &[("gz", gzip), ("zst", zstd), ("bz2", bzip2), ("xz", xz)];

fn tar_of(files: &[(&str, Vec<u8>)]) -> Vec<u8> {
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

/// The (input path, call id, outcome) of every call of a run.
fn calls(records: &[Value]) -> Vec<(String, String, String)> {
    records
        .iter()
        .filter(|r| r["type"] == "call")
        .map(|r| {
            (
                r["input"].as_str().unwrap().to_owned(),
                r["id"].to_string(),
                r["outcome"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn without_input(c: Vec<(String, String, String)>) -> Vec<(String, String)> {
    c.into_iter().map(|(_, id, o)| (id, o)).collect()
}

#[test]
fn every_compression_reads_like_the_plain_file_and_keeps_the_cap() {
    let plain_path = repo("samples/streamable-http.jsonl");
    let plain = std::fs::read(&plain_path).unwrap();
    let expected = without_input(calls(&jsonl(&analyze(&[
        plain_path.to_str().unwrap(),
        "--format",
        "jsonl",
    ]))));
    assert_eq!(expected.len(), 14);
    let dir = tempfile::tempdir().unwrap();
    for (ext, compress) in COMPRESSORS {
        let path = dir.path().join(format!("log.jsonl.{ext}"));
        std::fs::write(&path, compress(&plain)).unwrap();
        let out = analyze(&[path.to_str().unwrap(), "--format", "jsonl"]);
        assert_eq!(out.status.code(), Some(0), "{ext}: {}", stderr(&out));
        let records = jsonl(&out);
        assert_eq!(records[0]["format"], "jsonl", "{ext}");
        assert_eq!(without_input(calls(&records)), expected, "{ext}");

        // The same cap as gzip, named with the flag that raises it.
        let out = analyze(&[
            path.to_str().unwrap(),
            "--format",
            "jsonl",
            "--max-decompressed-bytes",
            "1000",
        ]);
        assert_eq!(out.status.code(), Some(2), "{ext}");
        assert!(
            stderr(&out).contains(
                "expands past the 1000-byte cap (raise --max-decompressed-bytes to read it)"
            ),
            "{ext}: {}",
            stderr(&out)
        );

        // A compressed tar archive of it: each member an input.
        let tar = tar_of(&[("logs/a.jsonl", plain.clone())]);
        let path = dir.path().join(format!("logs.tar.{ext}"));
        std::fs::write(&path, compress(&tar)).unwrap();
        let out = analyze(&[path.to_str().unwrap(), "--format", "jsonl"]);
        assert_eq!(out.status.code(), Some(0), "{ext}: {}", stderr(&out));
        let records = jsonl(&out);
        assert_eq!(
            records[0]["path"],
            format!("{}!/logs/a.jsonl", path.display()),
            "{ext}"
        );
        assert_eq!(without_input(calls(&records)), expected, "tar.{ext}");
    }
}

#[test]
fn damaged_compressed_data_is_a_named_error() {
    let dir = tempfile::tempdir().unwrap();
    let plain = std::fs::read(repo("samples/streamable-http.jsonl")).unwrap();
    for (ext, compress) in COMPRESSORS {
        let mut data = compress(&plain);
        let cut = data.len() / 2;
        data.truncate(cut);
        let path = dir.path().join(format!("cut.jsonl.{ext}"));
        std::fs::write(&path, &data).unwrap();
        let out = analyze(&[path.to_str().unwrap(), "--format", "jsonl"]);
        assert_eq!(out.status.code(), Some(2), "{ext}");
        let err = stderr(&out);
        assert!(err.contains(path.to_str().unwrap()), "{ext}: {err}");
        assert!(!err.contains("panicked"), "{ext}: {err}");
    }
}

#[test]
fn archives_inside_archives_are_read_up_to_the_depth_cap() {
    let dir = tempfile::tempdir().unwrap();
    let tee = std::fs::read(repo("samples/stdio-tee.jsonl")).unwrap();
    let http = std::fs::read(repo("samples/streamable-http.jsonl")).unwrap();
    let innermost = tar_of(&[("tee.jsonl", tee.clone())]);
    let inner = tar_of(&[
        ("http.jsonl", http.clone()),
        ("deeper.tar.zst", zstd(&innermost)),
        ("notes.txt", b"not a log\n".to_vec()),
    ]);
    let outer = tar_of(&[
        ("first.jsonl", tee.clone()),
        ("inner.tar.gz", gzip(&inner)),
        ("last.jsonl", tee.clone()),
    ]);
    let path = dir.path().join("outer.tar");
    std::fs::write(&path, &outer).unwrap();
    let out = analyze(&[path.to_str().unwrap(), "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = jsonl(&out);
    let p = path.display().to_string();
    let inputs: Vec<String> = records
        .iter()
        .filter(|r| r["type"] == "input")
        .map(|r| r["path"].as_str().unwrap().replace(&p, "OUTER"))
        .collect();
    assert_eq!(
        inputs,
        [
            "OUTER!/first.jsonl",
            "OUTER!/inner.tar.gz!/http.jsonl",
            "OUTER!/inner.tar.gz!/deeper.tar.zst!/tee.jsonl",
            "OUTER!/last.jsonl",
        ]
    );
    assert_eq!(calls(&records).len(), 3 + 14 + 3 + 3);
    let skipped = records.last().unwrap()["skipped"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(skipped.len(), 1);
    assert_eq!(
        skipped[0]["path"].as_str().unwrap().replace(&p, "OUTER"),
        "OUTER!/inner.tar.gz!/notes.txt"
    );

    // Six archives deep: the first four nested ones are read, the fifth is an
    // error naming the cap, and the run still reports what it read.
    let mut nested = tar_of(&[("tee.jsonl", tee.clone())]);
    for level in (1..=5).rev() {
        nested = tar_of(&[
            (&format!("level{level}.jsonl"), tee.clone()),
            (&format!("level{level}.tar.gz"), gzip(&nested)),
        ]);
    }
    let path = dir.path().join("deep.tar");
    std::fs::write(&path, &nested).unwrap();
    let out = analyze(&[path.to_str().unwrap(), "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(2));
    let records = jsonl(&out);
    let p = path.display().to_string();
    let inputs: Vec<(String, String)> = records
        .iter()
        .filter(|r| r["type"] == "input")
        .map(|r| {
            (
                r["path"].as_str().unwrap().replace(&p, "D"),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(inputs.len(), 6, "{inputs:?}");
    assert_eq!(
        inputs[4],
        (
            "D!/level1.tar.gz!/level2.tar.gz!/level3.tar.gz!/level4.tar.gz!/level5.jsonl"
                .to_owned(),
            "ok".to_owned()
        )
    );
    assert_eq!(
        inputs[5],
        (
            "D!/level1.tar.gz!/level2.tar.gz!/level3.tar.gz!/level4.tar.gz!/level5.tar.gz"
                .to_owned(),
            "error".to_owned()
        )
    );
    assert!(
        stderr(&out).contains("an archive nested more than 4 archives deep"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn zip_and_7z_are_named_not_called_binary() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("logs.zip"),
        b"PK\x03\x04\x14\x00\x00\x00rest",
    )
    .unwrap();
    std::fs::copy(
        repo("samples/stdio-tee.jsonl"),
        dir.path().join("tee.jsonl"),
    )
    .unwrap();
    // Found in a walk: skipped with the reason; named: an error with it.
    let out = analyze(&[dir.path().to_str().unwrap(), "--format", "jsonl"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let summary = jsonl(&out).last().unwrap().clone();
    assert_eq!(
        summary["skipped"][0]["reason"],
        "a zip archive (unpack it, or make it a tar) recognised, but mcpsift does not read it"
    );
    let zip = dir.path().join("logs.zip");
    let out = analyze(&[zip.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("a zip archive"), "{}", stderr(&out));
}

/// One decompression budget per input: compressed members of an archive, and
/// archives inside it, spend the cap of the whole input, so nesting cannot
/// multiply `--max-decompressed-bytes`.
#[test]
fn members_share_the_decompression_cap_of_their_archive() {
    let dir = tempfile::tempdir().unwrap();
    let tee = std::fs::read(repo("samples/stdio-tee.jsonl")).unwrap();
    let n = tee.len();
    let archive = tar_of(&[
        ("a.jsonl.gz", gzip(&tee)),
        ("b.jsonl.zst", zstd(&tee)),
        ("c.jsonl.xz", xz(&tee)),
    ]);
    let path = dir.path().join("three.tar");
    std::fs::write(&path, &archive).unwrap();
    // Room for two members' worth of bytes, not three.
    let cap = (2 * n + n / 2).to_string();
    let out = analyze(&[
        path.to_str().unwrap(),
        "--format",
        "jsonl",
        "--max-decompressed-bytes",
        &cap,
    ]);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let records = jsonl(&out);
    let statuses: Vec<(String, String)> = records
        .iter()
        .filter(|r| r["type"] == "input")
        .map(|r| {
            (
                r["path"]
                    .as_str()
                    .unwrap()
                    .rsplit('/')
                    .next()
                    .unwrap()
                    .to_owned(),
                r["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        statuses,
        [
            ("a.jsonl.gz".to_owned(), "ok".to_owned()),
            ("b.jsonl.zst".to_owned(), "ok".to_owned()),
            ("c.jsonl.xz".to_owned(), "error".to_owned()),
        ]
    );
    assert!(
        stderr(&out).contains(&format!(
            "expands past the {cap}-byte cap (raise --max-decompressed-bytes to read it)"
        )),
        "{}",
        stderr(&out)
    );
    // With room for all three, all three are read.
    let cap = (3 * n).to_string();
    let out = analyze(&[
        path.to_str().unwrap(),
        "--format",
        "jsonl",
        "--max-decompressed-bytes",
        &cap,
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
}

/// A PAX header may give a member a name of any length, and each input (or skipped
/// member) keeps its name: one longer than 1,024 bytes is kept as its first bytes,
/// its length and a hash, so two such members stay apart and the run stays small
/// (5,000 members named with 65 KB each took 1.3 GB).
#[test]
fn archive_members_with_long_names_are_named_short_and_apart() {
    let sample = std::fs::read(repo("samples/stdio-transcript.jsonl")).unwrap();
    let (a, b) = (
        format!("{}a.jsonl", "d/".repeat(3000)),
        format!("{}b.jsonl", "d/".repeat(3000)),
    );
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("long.tar");
    std::fs::write(&path, tar_of(&[(&a, sample.clone()), (&b, sample)])).unwrap();
    let records = jsonl(&analyze(&[path.to_str().unwrap(), "--format", "jsonl"]));
    let inputs: Vec<&str> = records
        .iter()
        .filter(|r| r["type"] == "input")
        .map(|r| r["path"].as_str().unwrap())
        .collect();
    assert_eq!(inputs.len(), 2, "{records:?}");
    assert_ne!(inputs[0], inputs[1]);
    for p in &inputs {
        assert!(p.len() < 1_200 && p.contains("…[6007 bytes, #"), "{p}");
    }
}
