//! How a report is printed: one line per case. A case's name, a plugin's name and a
//! difference all carry text that a vector file or a plugin chose. Printed as is, a name
//! holding a newline prints a forged `ok` line, and an ANSI escape rewrites what the terminal
//! already shows. So every such piece goes through [`printable`], which escapes controls and
//! invisible characters the way Rust writes them in a string (`\n`, `\u{1b}`): still
//! readable, and never more than the one line.

use super::VectorReport;
use crate::printable::printable;

impl VectorReport {
    /// The report as `sluice plugin test` prints it, one line per case:
    /// `ok   PLUGIN FILE :: NAME`, or `FAIL PLUGIN FILE :: NAME: DIFFERENCE`, with every
    /// piece passed through [`printable`].
    pub fn lines<'a>(&'a self, plugin: &'a str) -> impl Iterator<Item = String> + 'a {
        let plugin = printable(plugin);
        let path = self.path.display().to_string();
        let path = printable(&path).into_owned();
        self.results.iter().map(move |r| {
            let name = printable(&r.name);
            match &r.failure {
                None => format!("ok   {plugin} {path} :: {name}"),
                Some(diff) => format!("FAIL {plugin} {path} :: {name}: {}", printable(diff)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::vectors::CaseResult;

    #[test]
    fn every_piece_of_a_line_is_escaped() {
        let report = VectorReport {
            path: PathBuf::from("v\u{2028}.json"),
            results: vec![
                CaseResult {
                    name: "a\nok   b\u{1b}[2K".into(),
                    failure: None,
                },
                CaseResult {
                    name: "c\u{ad}".into(),
                    failure: Some("got \u{202e}x".into()),
                },
            ],
        };
        let lines: Vec<String> = report.lines("p\u{e0041}").collect();
        assert_eq!(
            lines,
            [
                r"ok   p\u{e0041} v\u{2028}.json :: a\nok   b\u{1b}[2K",
                r"FAIL p\u{e0041} v\u{2028}.json :: c\u{ad}: got \u{202e}x",
            ]
        );
    }
}
