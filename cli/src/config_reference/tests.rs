//! The configuration reference cannot drift: `docs/configuration.md` is what `sluice config
//! reference` prints, and for every table of the file the keys the parser accepts are the
//! keys the reference lists there — found by asking the parsers themselves (the library's,
//! and the sidecar's for `[serve]`): a probe key no table has is refused with the list of the
//! keys that table takes.

use std::collections::BTreeSet;
use std::path::Path;

use super::{KeyDoc, keys, markdown};

/// A name the file chooses, in a probe: a provider with a bundled plugin, any other name.
fn concrete(segment: &str) -> &str {
    match segment {
        "NAME" | "PROVIDER" => "openai",
        s if s.chars().all(|c| c.is_ascii_uppercase() || c == '_') => "x",
        s => s,
    }
}

/// The parent table of a key (`""` for the root).
fn parent(key: &str) -> &str {
    key.rsplit_once('.').map_or("", |(p, _)| p)
}

/// The keys a table's probe is refused with: the parser's own list.
fn accepted(table: &str) -> BTreeSet<String> {
    let path: Vec<&str> = table
        .split('.')
        .filter(|s| !s.is_empty())
        .map(concrete)
        .collect();
    // What a table's parent needs before the parser reads the table itself.
    let before = if table.starts_with("serve.admin.operators") {
        "[serve.admin]\ntoken = { env = \"SLUICE_ADMIN_TOKEN\" }\n"
    } else {
        ""
    };
    let text = if path.is_empty() {
        "sluice_reference_probe = 1\n".to_owned()
    } else {
        let quoted: Vec<String> = path.iter().map(|s| format!("\"{s}\"")).collect();
        format!(
            "{before}[{}]\nsluice_reference_probe = 1\n",
            quoted.join(".")
        )
    };
    // The whole file as the sidecar reads it: the library's tables and the `[serve]` table.
    let err = match sluice_serve::config::from_toml(&text, Path::new("/")) {
        Ok(_) => panic!("the probe of `{table}` was accepted:\n{text}"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("sluice_reference_probe"),
        "the probe of `{table}` was refused for another reason: {err}\n{text}"
    );
    // serde, which reads every table: "unknown field `x`, expected one of `a`, `b`" (or
    // "expected `a` or `b`", or "expected `a`").
    let list = err
        .split_once("expected one of ")
        .or_else(|| err.split_once("expected "))
        .map(|(_, l)| l)
        .unwrap_or_else(|| panic!("the probe of `{table}` names no keys: {err}"));
    list.split(',')
        .flat_map(|k| k.split(" or "))
        .map(|k| k.trim().trim_matches('`').to_owned())
        .filter(|k| !k.is_empty())
        .collect()
}

/// The keys the reference lists directly under `table`.
fn listed(table: &str) -> BTreeSet<String> {
    keys()
        .filter(|d| parent(d.key) == table)
        .map(|d| d.key.rsplit('.').next().unwrap_or(d.key).to_owned())
        .collect()
}

#[test]
fn the_page_is_what_the_command_prints() {
    let page = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/configuration.md"),
    )
    .unwrap();
    assert!(
        page == markdown(),
        "docs/configuration.md is not the reference the code holds: run \
         `cargo run -- config reference > docs/configuration.md`"
    );
}

#[test]
fn every_table_takes_exactly_the_keys_the_reference_lists() {
    let mut tables: Vec<&str> = vec![""];
    tables.extend(
        keys()
            .filter(|d| d.kind.starts_with("table"))
            .map(|d| d.key),
    );
    let mut wrong = Vec::new();
    for table in tables {
        let accepted = accepted(table);
        let listed = listed(table);
        for k in accepted.difference(&listed) {
            wrong.push(format!(
                "`{table}.{k}` is accepted but not in the reference"
            ));
        }
        for k in listed.difference(&accepted) {
            wrong.push(format!("`{table}.{k}` is in the reference but refused"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_key_has_its_table_and_each_is_listed_once() {
    let mut seen = BTreeSet::new();
    for KeyDoc {
        key, kind, what, ..
    } in keys()
    {
        assert!(seen.insert(*key), "`{key}` is listed twice");
        assert!(!kind.is_empty() && !what.is_empty(), "`{key}` says nothing");
        let p = parent(key);
        assert!(
            p.is_empty() || keys().any(|d| d.key == p),
            "`{key}` has no entry for its table `{p}`"
        );
    }
}
