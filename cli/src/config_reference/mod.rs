//! The configuration reference: every key of the configuration file, its type, default,
//! range and meaning, as a table in code ([`keys`]). `docs/configuration.md` is rendered from it
//! (`sluice config reference`), and the tests here hold the table to the parser: for every
//! table of the file, the keys the parser accepts are exactly the keys listed here, so
//! neither can change without the other. It lives with its one user, the command; the
//! library's parser knows nothing of it.

mod keys;
#[cfg(test)]
mod tests;

pub use keys::keys;

/// One key of the configuration file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyDoc {
    /// Its dotted path from the file's root. A segment in capitals (`NAME`, `LABEL`,
    /// `MODEL`, `TENANT`, …) is a name the file chooses: a key of a map.
    pub key: &'static str,
    /// What it holds: `table`, `map` (its keys are names the file chooses), `string`,
    /// `path`, `integer`, `number`, `boolean`, `array of strings`, `string or table`, ….
    pub kind: &'static str,
    /// Its default, or `required`, or `none` (absent means off or not set).
    pub default: &'static str,
    /// The values it may take (`1 ..= 60000`, `"refuse" or "strip"`), or empty.
    pub range: &'static str,
    /// What it means, in one or two sentences.
    pub what: &'static str,
}

/// What the page says before the tables.
const PREAMBLE: &str = "# Configuration

Every key of the configuration file, its type, default and range. This page is generated
from the code (`cli/src/config_reference/`) by `sluice config reference`, and a test holds
the code's table to the parser: a key the parser accepts and this page does not list, or the
other way round, fails the tests — so is a page that differs from what the command prints.

A host reads one TOML file (`sluice config check FILE` validates it; [operations](operations.md)).
A segment in capitals (`NAME`, `LABEL`, `MODEL`, …) is a name the file chooses. Relative paths
are taken from the file's directory. Worked examples: [`examples/sluice.toml`](../examples/sluice.toml)
(a whole host), [`examples/serve.toml`](../examples/serve.toml) (the sidecar),
[`examples/admission.toml`](../examples/admission.toml), [`examples/budgets.toml`](../examples/budgets.toml),
[`examples/plugins.toml`](../examples/plugins.toml), [`examples/shared.toml`](../examples/shared.toml).
";

/// The section a key is shown in: its first segment, or the file's root for a plain key.
fn section(doc: &KeyDoc) -> &'static str {
    match doc.key.split_once('.') {
        Some((first, _)) => first,
        None if doc.kind.starts_with("table") || doc.kind == "map" => doc.key,
        None => "",
    }
}

/// A table cell: one line, its pipes escaped.
fn cell(text: &str) -> String {
    let text = text.replace('|', "\\|").replace('\n', " ");
    if text.is_empty() {
        "–".to_owned()
    } else {
        text
    }
}

/// The reference as Markdown: the text of `docs/configuration.md`.
pub fn markdown() -> String {
    let mut out = String::from(PREAMBLE);
    let mut sections: Vec<&'static str> = Vec::new();
    for doc in keys() {
        let s = section(doc);
        if !sections.contains(&s) {
            sections.push(s);
        }
    }
    for s in sections {
        let title = if s.is_empty() {
            "The file's root".to_owned()
        } else {
            format!("`[{s}]`")
        };
        out.push_str(&format!(
            "\n## {title}\n\n| key | type | default | range | what |\n|---|---|---|---|---|\n"
        ));
        for doc in keys().filter(|d| section(d) == s) {
            out.push_str(&format!(
                "| `{}` | {} | {} | {} | {} |\n",
                doc.key,
                cell(doc.kind),
                cell(doc.default),
                cell(doc.range),
                cell(doc.what)
            ));
        }
    }
    out
}
