//! A digest's fields: reading them by their dotted names, and the names the host adds from
//! its configuration (which a body cannot set).

use super::{BodyDigest, digest};

/// The prefix of the fields the host adds from its configuration: a body's own fields of
/// these names are never kept, so only the host's settings carry them.
pub const HOST_FIELDS: &str = "sluice.";

/// The field the host adds when its configuration sets a default maximum output for the
/// request's model (`[providers.X.generations."model"] default_max_output`): the output a
/// generation that names no maximum is counted for. See [`BodyDigest::default_max_output`].
pub const DEFAULT_MAX_OUTPUT: &str = "sluice.default_max_output";

/// The field the reader adds when the body gives a key twice in its object or in an object
/// directly under it: the first such key's dotted name. The host refuses such a body before
/// a plugin sees it (see [`BodyDigest::duplicate_key`]).
pub const DUPLICATE_KEY: &str = "sluice.duplicate_key";

impl BodyDigest {
    /// Reads `body` (see [`digest`]).
    pub fn of(body: &[u8]) -> Self {
        digest(body)
    }

    /// The default maximum output the host's configuration sets for the request's model
    /// ([`DEFAULT_MAX_OUTPUT`]); `None` when it sets none.
    pub fn default_max_output(&self) -> Option<u64> {
        self.number(DEFAULT_MAX_OUTPUT)
    }

    /// The first key the body gives twice, in its object or in an object directly under it
    /// ([`DUPLICATE_KEY`]), as a dotted name: sluice and the provider could read different
    /// values of it, so the host refuses the body.
    pub fn duplicate_key(&self) -> Option<String> {
        self.string(DUPLICATE_KEY)
    }

    /// Sets (or, with `None`, removes) the configured default maximum output: the host's
    /// part, after it read the body.
    pub fn set_default_max_output(&mut self, tokens: Option<u64>) {
        set_number(&mut self.fields, DEFAULT_MAX_OUTPUT, tokens);
    }

    /// The value of `field` (a dotted name, as in [`BodyDigest::fields`]) as JSON text.
    pub fn field(&self, name: &str) -> Option<&str> {
        field(&self.fields, name)
    }

    /// The string value of `field`, unquoted; `None` when absent or not a string.
    pub fn string(&self, name: &str) -> Option<String> {
        string(self.field(name)?)
    }

    /// The whole-number value of `field`; `None` when absent or not a whole number.
    pub fn number(&self, name: &str) -> Option<u64> {
        self.field(name)?.parse().ok()
    }

    /// The boolean value of `field`; `None` when absent or not a boolean.
    pub fn flag(&self, name: &str) -> Option<bool> {
        self.field(name)?.parse().ok()
    }
}

/// Sets the whole-number field `name` among a digest's `fields` to `value`, or removes it.
pub fn set_number(fields: &mut Vec<(String, String)>, name: &str, value: Option<u64>) {
    fields.retain(|(n, _)| n != name);
    if let Some(v) = value {
        fields.push((name.to_owned(), v.to_string()));
    }
}

/// The JSON text of the field `name` among a digest's `fields`.
pub fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// A field's JSON text as a string, unquoted; `None` when it is not a string.
pub fn string(json: &str) -> Option<String> {
    serde_json::from_str::<String>(json).ok()
}
