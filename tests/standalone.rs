//! The product stands alone: nothing it ships (docs, comments, samples, the text of
//! `mcpsift explain`) points at files outside the repository, which a user of a
//! fresh clone does not have.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Text that names the development notes kept beside the repository.
const FORBIDDEN: &[&str] = &[
    "../shared",
    "shared/reference",
    "design.md §",
    "mcp-wire",
    "rust-stack.md",
    "ecosystem.md",
];

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Every text file under `dir` (binary captures are skipped: they are not prose).
fn text_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries {
        let path = e.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n == "target") {
                continue;
            }
            text_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

fn offences(what: &str, text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for (n, line) in text.lines().enumerate() {
        for f in FORBIDDEN {
            if line.contains(f) {
                found.push(format!("{what}:{}: {f:?} in {line:?}", n + 1));
            }
        }
    }
    found
}

#[test]
fn shipped_text_cites_nothing_outside_the_repository() {
    let mut files = vec![
        repo().join("README.md"),
        repo().join("ARCHITECTURE.md"),
        repo().join("lab/README.md"),
        repo().join("fuzz/README.md"),
    ];
    for dir in ["docs", "src", "samples", "examples", "bench", "scripts"] {
        text_files(&repo().join(dir), &mut files);
    }
    assert!(files.len() > 20, "the walk found the sources: {files:?}");
    let mut found = Vec::new();
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue; // a binary capture
        };
        let name = f.strip_prefix(repo()).unwrap().display().to_string();
        found.extend(offences(&name, &text));
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn explain_output_cites_nothing_outside_the_repository() {
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_mcpsift"))
            .arg("explain")
            .args(args)
            .output()
            .expect("run mcpsift");
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let list = run(&[]);
    let names: Vec<&str> = list
        .lines()
        .filter(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names.len(), 18, "10 outcomes and 8 finding kinds: {list}");
    let mut found = offences("explain", &list);
    for name in names {
        let text = run(&[name]);
        assert!(text.contains("Rule:"), "{text}");
        found.extend(offences(&format!("explain {name}"), &text));
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_check_would_catch_a_citation() {
    // The guard itself: a line naming the notes is caught, a plain one is not.
    assert_eq!(offences("x", "see ../shared/design.md §4").len(), 2);
    assert!(offences("x", "see docs/output.md").is_empty());
}

#[test]
fn the_readme_says_how_to_start_install_and_with_which_rust() {
    let readme = std::fs::read_to_string(repo().join("README.md")).unwrap();
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).unwrap();
    // The first commands a newcomer types stay at the top.
    let top: String = readme.lines().take(15).collect::<Vec<_>>().join("\n");
    assert!(
        top.contains("cargo run --release -- analyze samples/"),
        "{top}"
    );
    assert!(top.contains("cargo test "), "{top}");
    assert!(readme.contains("cargo install --path ."));
    // The minimum Rust version in the README is the one Cargo.toml declares.
    let msrv = manifest
        .lines()
        .find_map(|l| l.strip_prefix("rust-version = "))
        .map(|v| v.trim_matches('"'))
        .expect("Cargo.toml declares rust-version");
    assert!(
        readme.contains(&format!("Rust {msrv} or newer")),
        "README does not name Rust {msrv}"
    );
}
