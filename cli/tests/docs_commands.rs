//! Every `sluice` command the README and `docs/` show is one the binary has: each command in
//! a shell block or an inline code span that runs `sluice …` or `cargo run -- …` names real
//! subcommands, and each of its `--flags` is one that subcommand's `--help` lists. A page
//! that drifts from the program fails here, naming the page, the line and what is missing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The pages: the README and every page of `docs/`.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![repo().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The commands a page shows: `sh` blocks' lines (continuations joined, comments cut) and
/// inline code spans, each as the words after `sluice` or `cargo run --`.
fn commands(text: &str) -> Vec<(usize, Vec<String>)> {
    let mut out = Vec::new();
    let mut in_sh = false;
    let mut in_other = false;
    let mut pending = String::new();
    let mut pending_line = 0;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        if let Some(lang) = line.trim_start().strip_prefix("```") {
            if in_sh || in_other {
                in_sh = false;
                in_other = false;
            } else if lang.trim() == "sh" {
                in_sh = true;
            } else {
                in_other = true;
            }
            continue;
        }
        if in_other {
            continue;
        }
        if in_sh {
            let code = line.split(" #").next().unwrap_or("");
            if code.trim_start().starts_with('#') {
                continue;
            }
            if pending.is_empty() {
                pending_line = n;
            }
            if let Some(cont) = code.trim_end().strip_suffix('\\') {
                pending.push_str(cont);
                pending.push(' ');
                continue;
            }
            pending.push_str(code);
            out.extend(invocation(&pending).map(|w| (pending_line, w)));
            pending.clear();
            continue;
        }
        for (k, span) in line.split('`').enumerate() {
            if k % 2 == 1 {
                out.extend(invocation(span).map(|w| (n, w)));
            }
        }
    }
    out
}

/// The words after `sluice ` or `cargo run -- ` in `line`, if it runs the command.
fn invocation(line: &str) -> Option<Vec<String>> {
    let line = line.trim();
    let rest = ["cargo run -- ", "sluice "].iter().find_map(|p| {
        let at = line.find(p)?;
        // `sluice` as a command: not inside a word or a path (`sluice-serve`, `/sluice`),
        // nor a flag's value (`cargo run -p sluice --example embed`).
        let before = &line[..at];
        let word_starts = before.is_empty() || before.ends_with(' ');
        let a_flags_value = before
            .split_whitespace()
            .last()
            .is_some_and(|t| t.starts_with('-'));
        (word_starts && !a_flags_value).then(|| &line[at + p.len()..])
    })?;
    let words: Vec<String> = rest.split_whitespace().map(str::to_owned).collect();
    let first = words.first()?;
    // Prose that names the product, not a command: the first word must be a subcommand.
    first
        .chars()
        .all(|c| c.is_ascii_lowercase() || c == '-')
        .then_some(words)
}

/// `sluice <chain> --help`, once per chain.
fn help(cache: &mut HashMap<Vec<String>, Option<String>>, chain: &[String]) -> Option<String> {
    cache
        .entry(chain.to_vec())
        .or_insert_with(|| {
            let out = Command::new(env!("CARGO_BIN_EXE_sluice"))
                .args(chain)
                .arg("--help")
                .output()
                .unwrap();
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
        })
        .clone()
}

/// The subcommands a help text lists.
fn subcommands(help: &str) -> Vec<String> {
    help.split("Commands:")
        .nth(1)
        .map(|rest| {
            rest.lines()
                .skip(1)
                .take_while(|l| l.starts_with("  "))
                .filter_map(|l| l.split_whitespace().next().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn every_command_the_docs_show_has_its_subcommands_and_flags() {
    let mut cache = HashMap::new();
    let mut wrong = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let name = page
            .strip_prefix(repo())
            .unwrap_or(&page)
            .display()
            .to_string();
        for (line, words) in commands(&text) {
            let mut chain: Vec<String> = Vec::new();
            let Some(mut text) = help(&mut cache, &chain) else {
                panic!("sluice --help failed");
            };
            for w in &words {
                if subcommands(&text).contains(w) {
                    chain.push(w.clone());
                    text = help(&mut cache, &chain).unwrap_or_default();
                } else {
                    break;
                }
            }
            if chain.is_empty() {
                wrong.push(format!(
                    "{name}:{line}: `sluice {}`: no such command",
                    words.join(" ")
                ));
                continue;
            }
            checked += 1;
            for flag in words.iter().filter(|w| w.starts_with("--")) {
                let flag = flag.split('=').next().unwrap_or(flag);
                let flag = flag.trim_end_matches([',', ')', '`', '.', ';']);
                let listed = text.lines().any(|l| {
                    l.split([' ', ',', '='])
                        .any(|t| t == flag || t.trim_end_matches('>') == flag)
                });
                if flag.len() > 2 && !listed {
                    wrong.push(format!(
                        "{name}:{line}: `sluice {}` has no flag {flag}",
                        chain.join(" ")
                    ));
                }
            }
        }
    }
    assert!(
        checked >= 30,
        "only {checked} commands found in the docs: is the scan broken?"
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_scan_finds_commands_in_blocks_and_spans() {
    let page = "Run `sluice config check FILE`, not `sluice-serve`.\n\
                ```sh\nSLUICE_X=1 cargo run -- serve --config f \\\n  --fake-providers # c\n```\n\
                ```toml\nsluice = 1\n```\n";
    let found: Vec<(usize, String)> = commands(page)
        .into_iter()
        .map(|(n, w)| (n, w.join(" ")))
        .collect();
    assert_eq!(
        found,
        [
            (1, "config check FILE".to_owned()),
            (3, "serve --config f --fake-providers".to_owned())
        ]
    );
}
