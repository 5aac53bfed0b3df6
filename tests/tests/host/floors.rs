//! Every arrow points down: each module of the library and of the sidecar imports only from
//! modules on floors below its own, as `docs/architecture.md` writes them down ("Floors").
//! The same holds one level down, inside the library's largest parts — `admission`, one
//! call's run (`execute`), the plugin runtime (`plugin`), the `journal` and the `audit` log:
//! their children have floors of their own.
//!
//! The check reads the floors tables from the page itself, so the page and the code cannot
//! drift apart: a module on no floor, a floor naming a module that does not exist, or an
//! import that reaches up or sideways (`crate::X` from a module on X's floor or below it)
//! fails, naming the file and the import. Doc comments and test modules are not imports.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The floors table for `src` (`host/src`, `serve/src`): module name → floor.
fn floors(page: &str, src: &str) -> BTreeMap<String, u32> {
    let start = format!("<!-- floors: {src} -->");
    let table = page
        .split(&start)
        .nth(1)
        .and_then(|rest| rest.split("<!-- /floors -->").next())
        .unwrap_or_else(|| panic!("docs/architecture.md has no `{start}` table"));
    let mut out = BTreeMap::new();
    for row in table.lines().filter(|l| l.starts_with('|')) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let Ok(floor) = cells[1].parse::<u32>() else {
            continue; // the header and its rule
        };
        for module in cells[2].split(',') {
            let module = module.trim().trim_matches('`').to_owned();
            assert!(
                out.insert(module.clone(), floor).is_none(),
                "docs/architecture.md puts `{module}` of {src} on two floors"
            );
        }
    }
    out
}

/// The modules the crate root declares: its `mod x;`, `pub mod x;` and `pub(crate) mod x;`
/// lines (the library declares each of its parts twice, public with its `internals` feature
/// and private without), but for a test module.
fn declared(root: &str) -> BTreeSet<String> {
    root.lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = ["pub ", "pub(crate) ", "pub(super) "]
                .iter()
                .find_map(|p| l.strip_prefix(p))
                .unwrap_or(l);
            let name = l.strip_prefix("mod ")?.strip_suffix(';')?.trim();
            (name != "tests").then(|| name.to_owned())
        })
        .collect()
}

/// A file's text without its comments and its inline test module.
fn code(text: &str) -> String {
    let text = text.split("#[cfg(test)]\nmod tests").next().unwrap_or(text);
    text.lines()
        .filter(|l| !l.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The names a file imports after `prefix` (`crate::`, `crate::admission::`,
/// `super::super::`): `prefix X…`, and each top-level `X` of a `prefix{X::…, Y}` group. An
/// occurrence inside a longer path (`a::super::`) or going on up (`super::super::` for
/// `super::`) is not this prefix's.
fn imports_after(code: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in code.match_indices(prefix) {
        let rest = &code[at + prefix.len()..];
        if code[..at].ends_with("::") || rest.starts_with("super::") {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item = String::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    _ => {}
                }
                if depth == 0 || (depth == 1 && c == ',') {
                    out.extend(first_name(&item));
                    item.clear();
                    if depth == 0 {
                        break;
                    }
                } else {
                    item.push(c);
                }
            }
        } else {
            out.extend(first_name(rest));
        }
    }
    out
}

fn first_name(s: &str) -> Option<String> {
    let s = s.trim_start();
    let end = s
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    (end > 0).then(|| s[..end].to_owned())
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "tests") {
                rust_files(&path, out);
            }
        } else if path.extension().is_some_and(|e| e == "rs")
            && path.file_name().is_some_and(|n| n != "tests.rs")
        {
            out.push(path);
        }
    }
}

/// The file that declares the modules of `src`: a crate's `lib.rs`, or a module's `mod.rs`.
fn root_file(dir: &Path) -> PathBuf {
    let lib = dir.join("lib.rs");
    if lib.exists() {
        lib
    } else {
        dir.join("mod.rs")
    }
}

/// Every violation among the modules `src` declares: a crate's (`host/src`) or a module's
/// own children (`host/src/admission`).
fn violations(page: &str, src: &str) -> Vec<String> {
    let dir = repo().join(src);
    let floors = floors(page, src);
    let root = root_file(&dir);
    let declared = declared(&fs::read_to_string(&root).unwrap());
    let mut out = Vec::new();
    for module in declared.difference(&floors.keys().cloned().collect()) {
        out.push(format!("`{module}` of {src} is on no floor"));
    }
    for module in floors.keys().filter(|m| !declared.contains(*m)) {
        out.push(format!(
            "a floor names `{module}`, which {} does not declare",
            root.strip_prefix(repo()).unwrap_or(&root).display()
        ));
    }
    // A module's children are named from anywhere as `crate::<its path>::X`, and from a
    // file `n` modules below it as `super::` n times.
    let inner = src
        .split_once("/src/")
        .map(|(_, path)| path.replace('/', "::"));
    let mut files = Vec::new();
    rust_files(&dir, &mut files);
    files.sort();
    for file in files {
        let rel = file.strip_prefix(&dir).unwrap();
        let Some(module) = rel.iter().next().and_then(|m| m.to_str()) else {
            continue;
        };
        let module = module.trim_end_matches(".rs");
        let Some(&floor) = floors.get(module) else {
            continue; // the root, above every floor
        };
        let code = code(&fs::read_to_string(&file).unwrap());
        let found = match &inner {
            None => imports_after(&code, "crate::"),
            Some(path) => {
                let below = rel.iter().filter(|c| *c != "mod.rs").count();
                let mut found = imports_after(&code, &format!("crate::{path}::"));
                found.extend(imports_after(&code, &"super::".repeat(below)));
                found
            }
        };
        for import in found {
            if import == module {
                continue;
            }
            // Not a module: an item of the root, which any floor may name.
            let Some(&to) = floors.get(&import) else {
                continue;
            };
            if to >= floor {
                let prefix = inner
                    .as_deref()
                    .map_or("crate".to_owned(), |p| format!("crate::{p}"));
                out.push(format!(
                    "{src}/{}: `{module}` (floor {floor}) imports `{prefix}::{import}` (floor {to})",
                    rel.display()
                ));
            }
        }
    }
    out
}

#[test]
fn every_import_of_the_library_and_the_sidecar_points_down() {
    let page = fs::read_to_string(repo().join("docs/architecture.md")).unwrap();
    let mut found = violations(&page, "host/src");
    found.extend(violations(&page, "host/src/admission"));
    for part in ["execute", "plugin", "journal", "audit"] {
        found.extend(violations(&page, &format!("host/src/{part}")));
    }
    found.extend(violations(&page, "serve/src"));
    assert!(
        found.is_empty(),
        "imports that do not point down (docs/architecture.md, \"Floors\"):\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_an_import_that_reaches_up() {
    let page = "<!-- floors: x/src -->\n| floor | m | w |\n|---|---|---|\n\
                | 0 | `low` | |\n| 1 | `high` | |\n<!-- /floors -->";
    let floors = floors(page, "x/src");
    assert_eq!(floors["low"], 0);
    assert_eq!(floors["high"], 1);
    let found = imports_after(
        &code("// use crate::ignored;\nuse crate::{high::A, other};\nfn f() { crate::low::g() }"),
        "crate::",
    );
    let expected: BTreeSet<String> = ["high", "low", "other"].map(String::from).into();
    assert_eq!(found, expected);
}

#[test]
fn a_child_s_imports_are_found_by_their_depth() {
    let text = "use super::super::{scope::Scope, usage};\nuse super::turn::Turn;\n\
                use super::super::super::clock::Clock;\nfn f() { crate::admission::fair::g() }";
    let two_below = imports_after(&code(text), "super::super::");
    let expected: BTreeSet<String> = ["scope", "usage"].map(String::from).into();
    assert_eq!(two_below, expected);
    let one_below = imports_after(&code(text), "super::");
    assert_eq!(one_below, ["turn".to_owned()].into());
    let by_path = imports_after(&code(text), "crate::admission::");
    assert_eq!(by_path, ["fair".to_owned()].into());
}

/// "What is where" in `docs/architecture.md`: one path a row, each in the tree; and every
/// test file of this crate, every plugin crate and fixture, every frozen contract and every
/// top-level directory named (a directory by itself or by a path under it).
#[test]
fn what_is_where_names_one_existing_path_a_row_and_all_it_must() {
    let page = fs::read_to_string(repo().join("docs/architecture.md")).unwrap();
    let table = page
        .split("## What is where")
        .nth(1)
        .expect("docs/architecture.md has a \"What is where\" table");
    let mut listed = BTreeSet::new();
    for row in table.lines().filter(|l| l.starts_with("| `")) {
        let cell = row.split('|').nth(1).unwrap().trim();
        let path = cell
            .strip_prefix('`')
            .and_then(|c| c.strip_suffix('`'))
            .filter(|p| !p.contains(['`', ',', ' ']))
            .unwrap_or_else(|| panic!("a row of \"What is where\" names one path: {cell}"));
        assert!(
            repo().join(path).exists(),
            "\"What is where\" names `{path}`, which is not in the tree"
        );
        listed.insert(path.trim_end_matches('/').to_owned());
    }
    let entries = |dir: &str| -> Vec<(String, bool)> {
        let mut out: Vec<(String, bool)> = fs::read_dir(repo().join(dir))
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let name = e.file_name().to_string_lossy().into_owned();
                (name, e.file_type().unwrap().is_dir())
            })
            .filter(|(name, _)| !name.starts_with('.') && name != "target")
            .collect();
        out.sort();
        out
    };
    let mut missing = Vec::new();
    for (name, _) in entries("tests")
        .into_iter()
        .filter(|(n, dir)| !dir && n.ends_with(".rs"))
    {
        let path = format!("tests/{name}");
        if !listed.contains(&path) {
            missing.push(path);
        }
    }
    for dir in ["plugins", "plugins/fixtures", "wit/deps"] {
        for (name, is_dir) in entries(dir) {
            let path = format!("{dir}/{name}");
            if is_dir && path != "plugins/fixtures" && !listed.contains(&path) {
                missing.push(path);
            }
        }
    }
    for (name, is_dir) in entries("") {
        let under = format!("{name}/");
        if is_dir && !listed.iter().any(|p| *p == name || p.starts_with(&under)) {
            missing.push(name);
        }
    }
    assert!(
        missing.is_empty(),
        "\"What is where\" in docs/architecture.md does not name: {missing:?}"
    );
}
