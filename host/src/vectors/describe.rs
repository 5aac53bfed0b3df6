//! What a file expects of `describe` (the top-level `describe` of `docs/PLUGIN-VECTORS.md`).
//!
//! `describe` is the one export that reads no request: it says who the plugin is and which
//! traffic it governs, and the host routes calls by its hosts. So its expectation belongs to
//! the file, not to a case, and a file checks it once. A plugin that starts claiming another
//! host, or stops claiming its own, fails it.

use serde::Deserialize;

use crate::contract::{Description, Refill};

/// The expected answer of `describe`: only the fields present are checked.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedDescription {
    /// The plugin's name, when checked.
    pub name: Option<String>,
    /// The plugin's version, when checked.
    pub version: Option<String>,
    /// The provider it speaks for, when checked.
    pub provider: Option<String>,
    /// The hosts it governs, when checked: the same names in any order.
    pub hosts: Option<Vec<String>>,
    /// The routes it understands, when checked: the same patterns in any order.
    pub routes: Option<Vec<String>>,
    /// How it says its provider refills, when checked (`Some(None)`: it declares none).
    #[serde(default, deserialize_with = "super::expect::present")]
    pub refill: Option<Option<Refill>>,
}

/// The name of the result line that reports the `describe` check.
pub const RESULT_NAME: &str = "describe";

impl ExpectedDescription {
    /// Refuses an expectation that checks nothing.
    pub(super) fn validate(&self) -> Result<(), String> {
        if self.name.is_none()
            && self.version.is_none()
            && self.provider.is_none()
            && self.hosts.is_none()
            && self.routes.is_none()
            && self.refill.is_none()
        {
            return Err(
                "describe: checks nothing; name at least one of name, version, provider, hosts, \
                 routes, refill"
                    .into(),
            );
        }
        Ok(())
    }

    /// The first difference between the description and this expectation, if any.
    pub(super) fn check(&self, d: &Description) -> Option<String> {
        let texts = [
            ("name", &self.name, &d.name),
            ("version", &self.version, &d.version),
            ("provider", &self.provider, &d.provider),
        ];
        for (field, want, got) in texts {
            if let Some(want) = want
                && want != got
            {
                return Some(format!("describe.{field}: expected {want:?}, got {got:?}"));
            }
        }
        let lists = [
            ("hosts", &self.hosts, &d.hosts),
            ("routes", &self.routes, &d.routes),
        ];
        for (field, want, got) in lists {
            if let Some(want) = want
                && let Some(diff) = same_set(field, want, got)
            {
                return Some(diff);
            }
        }
        if let Some(want) = self.refill
            && want != d.refill
        {
            let name = |r: Option<Refill>| match r {
                None => "null",
                Some(Refill::Window) => "\"window\"",
                Some(Refill::Continuous) => "\"continuous\"",
            };
            return Some(format!(
                "describe.refill: expected {}, got {}",
                name(want),
                name(d.refill)
            ));
        }
        None
    }

    /// The expectation that `d` passes, every field filled in.
    pub fn of(d: &Description) -> Self {
        Self {
            name: Some(d.name.clone()),
            version: Some(d.version.clone()),
            provider: Some(d.provider.clone()),
            hosts: Some(d.hosts.clone()),
            routes: Some(d.routes.clone()),
            refill: Some(d.refill),
        }
    }
}

/// The difference between two lists compared as sets, naming what is missing and extra.
fn same_set(field: &str, want: &[String], got: &[String]) -> Option<String> {
    let mut w: Vec<&str> = want.iter().map(String::as_str).collect();
    let mut g: Vec<&str> = got.iter().map(String::as_str).collect();
    w.sort_unstable();
    g.sort_unstable();
    (w != g).then(|| format!("describe.{field}: expected {w:?}, got {g:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn openai() -> Description {
        Description {
            name: "openai".into(),
            version: "0.2.0".into(),
            provider: "OpenAI".into(),
            hosts: vec!["api.openai.com".into(), "*.openai.azure.com".into()],
            routes: vec!["/v1/*".into()],
            read_routes: vec![],
            error_shape: None,
            refill: None,
        }
    }

    #[test]
    fn a_description_with_the_expected_fields_passes_in_any_host_order() {
        let want = ExpectedDescription {
            name: Some("openai".into()),
            hosts: Some(vec!["*.openai.azure.com".into(), "api.openai.com".into()]),
            ..ExpectedDescription::default()
        };
        assert_eq!(want.check(&openai()), None);
        assert_eq!(ExpectedDescription::of(&openai()).check(&openai()), None);
    }

    #[test]
    fn a_refill_declared_or_not_is_checked() {
        let want: ExpectedDescription =
            serde_json::from_str(r#"{"refill": "continuous"}"#).unwrap();
        assert_eq!(
            want.check(&openai()).as_deref(),
            Some(r#"describe.refill: expected "continuous", got null"#)
        );
        let none: ExpectedDescription = serde_json::from_str(r#"{"refill": null}"#).unwrap();
        assert_eq!(none.refill, Some(None), "null expects no declaration");
        assert_eq!(none.check(&openai()), None);
    }

    #[test]
    fn a_different_provider_fails_and_names_both() {
        let want = ExpectedDescription {
            provider: Some("Anthropic".into()),
            ..ExpectedDescription::default()
        };
        assert_eq!(
            want.check(&openai()).as_deref(),
            Some(r#"describe.provider: expected "Anthropic", got "OpenAI""#)
        );
    }

    #[test]
    fn a_host_claimed_or_dropped_fails() {
        let want = ExpectedDescription {
            hosts: Some(vec!["api.openai.com".into()]),
            ..ExpectedDescription::default()
        };
        assert_eq!(
            want.check(&openai()).as_deref(),
            Some(
                r#"describe.hosts: expected ["api.openai.com"], got ["*.openai.azure.com", "api.openai.com"]"#
            )
        );
        let want = ExpectedDescription {
            routes: Some(vec![]),
            ..ExpectedDescription::default()
        };
        assert!(
            want.check(&openai())
                .unwrap()
                .starts_with("describe.routes:")
        );
    }

    #[test]
    fn an_expectation_naming_no_field_is_refused() {
        let err = ExpectedDescription::default().validate().unwrap_err();
        assert!(err.starts_with("describe: checks nothing"), "{err}");
    }
}
