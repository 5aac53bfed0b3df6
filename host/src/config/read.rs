//! How the file is read: one way, with serde. The keys outside admission are split off the
//! TOML table ([`super::parse`]) and deserialized into raw tables, every one
//! `deny_unknown_fields` and every number in its range as it is read ([`Ranged`]); what no
//! type can say (a URL's scheme, a tier that exists, one of `env` or `file`) is checked after,
//! from the raw table into the configuration's own types. Either way an error names the key's
//! whole dotted path, as the file would write it. The sidecar reads its own `[serve]` table
//! the same way, with the same [`Reader`] (`SluiceConfig::from_file_with`).

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde_path_to_error::Segment;
use toml::Value;

use super::ConfigFileError;
use crate::admission::config::toml_key;

/// Reads the tables of one file, naming the file and the key of every error.
#[derive(Debug)]
pub struct Reader<'a> {
    /// The file, or `configuration`.
    pub origin: &'a str,
    /// What relative paths are taken from.
    pub base_dir: &'a Path,
}

impl Reader<'_> {
    /// The error about `key`.
    pub fn invalid(&self, key: &str, message: impl Into<String>) -> ConfigFileError {
        ConfigFileError::Invalid {
            origin: self.origin.to_owned(),
            key: key.to_owned(),
            message: message.into(),
        }
    }

    /// Deserializes `value`, the table at the dotted key `at` (`""`: the file's root).
    pub fn read<T: DeserializeOwned>(&self, at: &str, value: Value) -> Result<T, ConfigFileError> {
        serde_path_to_error::deserialize(value).map_err(|e| {
            let key = key_path(at, e.path().iter());
            self.invalid(&key, one_line(&e.inner().to_string()))
        })
    }

    /// A path the file names, taken from the file's directory when relative.
    pub fn path(&self, given: NonEmpty) -> PathBuf {
        self.base_dir.join(given.0)
    }
}

/// `at` and the segments below it, as the file writes a key: `a.b."gpt-4.1"[2]`.
pub fn key_path<'s>(at: &str, segments: impl Iterator<Item = &'s Segment>) -> String {
    let mut key = at.to_owned();
    for segment in segments {
        match segment {
            Segment::Seq { index } => key.push_str(&format!("[{index}]")),
            Segment::Map { key: name } => push(&mut key, &toml_key(name)),
            Segment::Enum { variant } => push(&mut key, variant),
            Segment::Unknown => push(&mut key, "?"),
        }
    }
    key
}

/// `key.name`, or `name` at the root.
pub fn under(key: &str, name: &str) -> String {
    let mut out = key.to_owned();
    push(&mut out, &toml_key(name));
    out
}

fn push(key: &mut String, segment: &str) {
    if !key.is_empty() {
        key.push('.');
    }
    key.push_str(segment);
}

/// The first line of a deserializer's message (the rest repeats the key).
pub fn one_line(message: &str) -> String {
    message.lines().next().unwrap_or("").trim().to_owned()
}

/// A whole number from `MIN` to `MAX`, refused with its range as it is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ranged<const MIN: u64, const MAX: u64>(pub u64);

impl<const MIN: u64, const MAX: u64> Ranged<MIN, MAX> {
    /// The number.
    pub fn get(self) -> u64 {
        self.0
    }

    /// The number as milliseconds.
    pub fn ms(self) -> Duration {
        Duration::from_millis(self.0)
    }

    /// The number as days.
    pub fn days(self) -> Duration {
        Duration::from_secs(self.0.saturating_mul(86_400))
    }

    /// The number as a `u32` (every range that asks for one fits it).
    pub fn u32(self) -> u32 {
        u32::try_from(self.0).unwrap_or(u32::MAX)
    }

    /// The number as a `usize`.
    pub fn usize(self) -> usize {
        usize::try_from(self.0).unwrap_or(usize::MAX)
    }
}

impl<'de, const MIN: u64, const MAX: u64> Deserialize<'de> for Ranged<MIN, MAX> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Whole<const MIN: u64, const MAX: u64>;
        impl<const MIN: u64, const MAX: u64> Visitor<'_> for Whole<MIN, MAX> {
            type Value = Ranged<MIN, MAX>;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a whole number from {MIN} to {MAX}")
            }

            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Self::Value, E> {
                if (MIN..=MAX).contains(&n) {
                    Ok(Ranged(n))
                } else {
                    Err(E::custom(format!("from {MIN} to {MAX}, not {n}")))
                }
            }

            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Self::Value, E> {
                match u64::try_from(n) {
                    Ok(n) => self.visit_u64(n),
                    Err(_) => Err(E::custom(format!("from {MIN} to {MAX}, not {n}"))),
                }
            }
        }
        deserializer.deserialize_u64(Whole)
    }
}

/// A string that is not empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonEmpty(pub String);

impl<'de> Deserialize<'de> for NonEmpty {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        if s.is_empty() {
            Err(de::Error::custom("must not be empty"))
        } else {
            Ok(Self(s))
        }
    }
}

impl NonEmpty {
    /// The string.
    pub fn into_string(self) -> String {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A table of each kind of value; only its errors are looked at.
    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)]
    struct Probe {
        n: Option<Ranged<1, 10>>,
        s: Option<NonEmpty>,
        list: Option<Vec<Ranged<0, 5>>>,
    }

    fn error(text: &str) -> String {
        let reader = Reader {
            origin: "f.toml",
            base_dir: Path::new("."),
        };
        let value = Value::Table(toml::from_str(text).unwrap());
        reader
            .read::<std::collections::BTreeMap<String, Probe>>("t", value)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_number_out_of_range_a_wrong_type_and_an_unknown_key_are_each_named() {
        assert_eq!(
            error("[\"gpt-4.1\"]\nn = 11\n"),
            "f.toml: `t.\"gpt-4.1\".n`: from 1 to 10, not 11"
        );
        assert_eq!(
            error("[a]\nn = -1\n"),
            "f.toml: `t.a.n`: from 1 to 10, not -1"
        );
        assert!(
            error("[a]\nn = \"5\"\n").contains("expected a whole number from 1 to 10"),
            "{}",
            error("[a]\nn = \"5\"\n")
        );
        assert_eq!(
            error("[a]\nlist = [1, 9]\n"),
            "f.toml: `t.a.list[1]`: from 0 to 5, not 9"
        );
        assert_eq!(
            error("[a]\ns = \"\"\n"),
            "f.toml: `t.a.s`: must not be empty"
        );
        assert_eq!(
            error("[a]\nm = 1\n"),
            "f.toml: `t.a.m`: unknown field `m`, expected one of `n`, `s`, `list`"
        );
    }
}
