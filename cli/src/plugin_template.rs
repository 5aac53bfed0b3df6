//! The files `sluice plugin new` writes: a plugin crate that builds, tests and passes its
//! vectors as it is, so an author starts from green and changes one hook at a time.
//!
//! The texts are templates with `{{name}}` (the crate name), `{{type}}` (the plugin's type
//! name), `{{lib}}` (the library's file name, as the `.wasm` is named), `{{sdk_version}}` (the
//! SDK's version) and `{{sdk_path}}` (where the SDK's package is, as a TOML string). They are kept here, beside the command, rather than as files
//! of a template directory, so the binary carries them and needs no checkout to read them.

/// A file of the new crate: its path relative to the crate's directory, and its template.
pub struct TemplateFile {
    /// Where the file goes, relative to the crate's directory.
    pub path: &'static str,
    /// Its text, with the placeholders.
    pub template: &'static str,
}

/// What fills the placeholders.
pub struct Fill<'a> {
    /// The crate name (`acme-policy`).
    pub name: &'a str,
    /// The plugin's type name (`AcmePolicy`).
    pub type_name: &'a str,
    /// The library's name (`acme_policy`): the component is `<lib>.wasm`.
    pub lib: &'a str,
    /// The SDK's version (`0.1.0`).
    pub sdk_version: &'a str,
    /// Where the SDK's package is, as a TOML string: the copy in `vendor/`, or `--sdk`'s.
    pub sdk_path: &'a str,
}

impl Fill<'_> {
    /// `template` with every placeholder filled.
    pub fn apply(&self, template: &str) -> String {
        template
            .replace("{{name}}", self.name)
            .replace("{{type}}", self.type_name)
            .replace("{{lib}}", self.lib)
            .replace("{{sdk_version}}", self.sdk_version)
            .replace("{{sdk_path}}", self.sdk_path)
    }
}

/// The files of a new plugin crate.
pub const FILES: &[TemplateFile] = &[
    TemplateFile {
        path: "Cargo.toml",
        template: CARGO_TOML,
    },
    TemplateFile {
        path: "src/lib.rs",
        template: LIB_RS,
    },
    TemplateFile {
        path: ".cargo/config.toml",
        template: CARGO_CONFIG_TOML,
    },
    TemplateFile {
        path: "vectors.json",
        template: VECTORS_JSON,
    },
    TemplateFile {
        path: "README.md",
        template: README_MD,
    },
    TemplateFile {
        path: ".gitignore",
        template: "/target\n",
    },
];

const CARGO_TOML: &str = r#"[package]
name = "{{name}}"
version = "0.1.0"
edition = "2024"
rust-version = "1.95"
publish = false

# A plugin is a WebAssembly component: a cdylib built for wasm32-wasip2. `cargo test` builds
# the same code natively and runs the unit tests in src/lib.rs.
[lib]
crate-type = ["cdylib"]

[dependencies]
# The SDK, by version. It is not on crates.io yet: the patch below takes it from the package
# `sluice plugin new` wrote into vendor/ (the SDK of the sluice that made this crate). Once it
# is published, delete the patch and vendor/.
sluice-plugin-sdk = "{{sdk_version}}"

[patch.crates-io]
sluice-plugin-sdk = { path = {{sdk_path}} }

# `cargo component build` reads this table. The SDK already embeds the contract's WIT
# (sluice:policy@0.5.0) in the module, so no `target` world is named here.
[package.metadata.component]
package = "sluice:{{name}}"

# Small, fast components: the host compiles each once and calls it on every request.
[profile.release]
opt-level = "s"
lto = true
codegen-units = 1
strip = "debuginfo"

# A crate of its own, even inside another project's directory: an enclosing workspace does
# not capture it. The vendored packages are apart, not members.
[workspace]
exclude = ["vendor"]
"#;

const CARGO_CONFIG_TOML: &str = r#"# `cargo test --target wasm32-wasip2` builds the unit tests into a WebAssembly component and
# runs it with `sluice plugin run-test`: in the engine that hosts the plugin, sandboxed as the
# plugin is (no files, network or environment; clocks frozen at the Unix epoch), with the
# test binary's stdout and stderr. `sluice` must be on your PATH (see README.md); without it
# cargo says it could not execute `sluice`. Plain `cargo test` runs natively and needs none.
[target.wasm32-wasip2]
runner = ["sluice", "plugin", "run-test"]
"#;

const LIB_RS: &str = r##"//! The {{name}} plugin: how sluice reads one provider's answers and plans its requests.
//!
//! sluice asks a plugin two things per request, each in one call into the sandbox: its plan
//! before the request is queued (the hooks `priority`, `estimate_cost` and `scopes`) and its
//! reading of each attempt (`classify`, `parse_quota` and `usage`). Every hook below does
//! what the SDK's default does, written out so you can see it and change it; a hook you
//! delete keeps that default. Only `describe` is required.

use sluice_plugin_sdk::{
    Classification, Cost, Description, Observation, Outcome, Plugin, PolicyError, Priority,
    Request, Response, ResponsePart, default_classify, default_priority, headers,
    ietf_observations, json, one_request,
};

/// The {{name}} policy.
#[derive(Debug)]
pub struct {{type}};

impl Plugin for {{type}} {
    /// Names the plugin and the traffic it governs: the hosts it answers for and the routes
    /// (`/v1/*`, or with a method: `POST /v1/chat`) of those hosts; the routes that are
    /// reads although they are not `GET` (a generation: `POST /v1/generate`), which the
    /// sidecar then retries instead of journaling as writes; and how the provider writes
    /// its errors (`Some(ErrorShape::Openai)`...; `None`: OpenAI's).
    fn describe() -> Description {
        Description {
            name: "{{name}}".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            provider: "Example".into(),
            hosts: vec!["api.example.com".into()],
            routes: vec!["/v1/*".into()],
            read_routes: vec![],
            error_shape: None,
            refill: None,
        }
    }

    /// What one attempt's outcome means: a verdict (`Success`, `RateLimited`,
    /// `QuotaExhausted`, `Overloaded`, `Transient`, ...), the delay the provider asks for,
    /// and its error code. The default reads the status and `Retry-After` (and on a 429 or
    /// 503 an exhausted quota's reset); this one also reads the error code of a JSON body
    /// `{"error": {"code": "..."}}`. Read your provider's own error shapes here: a 429 that
    /// means "credits used up" is `QuotaExhausted`, not a short wait.
    fn classify(req: &Request, outcome: &Outcome) -> Result<Classification, PolicyError> {
        let mut c = default_classify(req, outcome);
        if let Outcome::Response(resp) = outcome {
            c.error_code = json::string_at(&resp.body, &["error", "code"])
                .map(|code| json::normalize_code(&code))
                .filter(|code| !code.is_empty());
        }
        Ok(c)
    }

    /// The quota figures in a response's headers (called for a whole answer and a stream's
    /// start). The default reads the IETF fields (`RateLimit-Limit` / `-Remaining` /
    /// `-Reset`, and the structured `RateLimit` and `RateLimit-Policy`). For a provider's
    /// own headers, see `sluice_plugin_sdk::header_pair`.
    fn parse_quota(req: &Request, resp: &Response) -> Result<Vec<Observation>, PolicyError> {
        let _ = req;
        Ok(ietf_observations(&headers(&resp.headers)))
    }

    /// What the request used, as the answer reports it (at `ResponsePart::StreamEnd` for a
    /// stream, from its last events; see `sluice_plugin_sdk::sse`). The default reports
    /// nothing, so the host keeps its estimate from `estimate_cost`.
    fn usage(req: &Request, resp: &Response, part: ResponsePart) -> Result<Vec<Cost>, PolicyError> {
        let _ = (req, resp, part);
        Ok(Vec::new())
    }

    /// Where a request belongs in the queue: its class, tenant and deadline. The default
    /// reads the `x-sluice-priority` and `x-sluice-tenant` headers a caller may set.
    fn priority(req: &Request) -> Result<Priority, PolicyError> {
        Ok(default_priority(req))
    }

    /// What a request will use, per dimension, charged before it is sent. The default is one
    /// request; add tokens (`Dimension::Tokens`) if your provider limits them.
    fn estimate_cost(req: &Request) -> Result<Vec<Cost>, PolicyError> {
        let _ = req;
        Ok(vec![one_request()])
    }

    /// The narrower quotas a request counts in (a model's, say: `model_scope(req)`), named
    /// as `parse_quota`'s observations name their `scope`. The default is none.
    fn scopes(req: &Request) -> Result<Vec<String>, PolicyError> {
        let _ = req;
        Ok(Vec::new())
    }

    // `reconcile` and `read_reconciliation` settle a write whose outcome is unknown by
    // asking the provider; their defaults say "unsupported", so the host escalates it.
}

sluice_plugin_sdk::export_plugin!({{type}});

#[cfg(test)]
mod tests {
    use super::*;
    use sluice_plugin_sdk::test::{request, response};
    use sluice_plugin_sdk::{Dimension, PriorityClass, Verdict};

    const URL: &str = "https://api.example.com/v1/chat";

    #[test]
    fn a_429_asks_for_its_retry_after_and_names_its_error_code() {
        let req = request("POST", URL, &[("content-type", "application/json")], "{}");
        let resp = response(
            429,
            &[("retry-after", "2")],
            r#"{"error":{"code":"rate_limit_exceeded"}}"#,
        );
        let r = {{type}}::read_response(&req, &resp.into(), ResponsePart::Complete).unwrap();
        assert_eq!(r.classification.verdict, Verdict::RateLimited);
        assert_eq!(r.classification.retry_after_ms, Some(2_000));
        assert_eq!(
            r.classification.error_code.as_deref(),
            Some("rate_limit_exceeded")
        );
    }

    #[test]
    fn a_503_is_overloaded() {
        let req = request("GET", URL, &[], "");
        let r = {{type}}::classify(&req, &response(503, &[], "").into()).unwrap();
        assert_eq!(r.verdict, Verdict::Overloaded);
    }

    #[test]
    fn the_ratelimit_headers_are_read_as_a_request_quota() {
        let req = request("GET", URL, &[], "");
        let headers = [
            ("RateLimit-Limit", "100"),
            ("RateLimit-Remaining", "99"),
            ("RateLimit-Reset", "30"),
        ];
        let resp = response(200, &headers, "");
        let r = {{type}}::read_response(&req, &resp.into(), ResponsePart::Complete).unwrap();
        assert_eq!(r.classification.verdict, Verdict::Success);
        let o = &r.observations[0];
        assert_eq!(o.dimension, Dimension::Requests);
        assert_eq!(o.limit, Some(100));
        assert_eq!(o.remaining, Some(99));
        assert_eq!(o.reset_after_ms, Some(30_000));
    }

    #[test]
    fn a_background_request_is_planned_as_one_request() {
        let req = request("POST", URL, &[("x-sluice-priority", "background")], "{}");
        let plan = {{type}}::plan_request(&req).unwrap();
        assert_eq!(plan.class, PriorityClass::Background);
        assert_eq!(plan.cost, vec![one_request()]);
    }
}
"##;

const VECTORS_JSON: &str = r#"{
  "cases": [
    {
      "name": "a 429 asks for its Retry-After and names its error code",
      "request": {"method": "POST", "url": "https://api.example.com/v1/chat", "class": "read",
        "headers": [["content-type", "application/json"]], "body": "{}"},
      "response": {"status": 429, "headers": [["retry-after", "2"]],
        "body": "{\"error\":{\"code\":\"rate_limit_exceeded\"}}"},
      "expect": {"verdict": "rate-limited", "retry_after_ms": 2000, "error_code": "rate_limit_exceeded"}
    },
    {
      "name": "a 503 is overloaded",
      "request": {"method": "GET", "url": "https://api.example.com/v1/models", "class": "read"},
      "response": {"status": 503},
      "expect": {"verdict": "overloaded", "error_code": null}
    },
    {
      "name": "the RateLimit headers are read as a request quota",
      "request": {"method": "GET", "url": "https://api.example.com/v1/models", "class": "read"},
      "response": {"status": 200, "headers": [["RateLimit-Limit", "100"], ["RateLimit-Remaining", "99"], ["RateLimit-Reset", "30"]]},
      "expect": {
        "verdict": "success",
        "observations": [{"dimension": "requests", "limit": 100, "remaining": 99, "reset_after_ms": 30000}],
        "observations_exact": true
      }
    },
    {
      "name": "a background request is planned as one request",
      "request": {"method": "POST", "url": "https://api.example.com/v1/chat", "class": "read",
        "headers": [["x-sluice-priority", "background"]], "body": "{}"},
      "response": {"status": 200},
      "expect": {"plan": {"class": "background", "cost": {"requests": 1}, "cost_exact": true, "scopes": []}}
    },
    {
      "name": "a connection that failed before sending is transient",
      "request": {"method": "POST", "url": "https://api.example.com/v1/chat", "class": "uncertain-write"},
      "transport": "connect-failed",
      "expect": {"verdict": "transient"}
    }
  ]
}
"#;

const README_MD: &str = r#"# {{name}}

A sluice provider plugin: a WebAssembly component (`wasm32-wasip2`) that implements the
`sluice:policy@0.5.0` contract through `sluice-plugin-sdk`'s `Plugin` trait. Start in
`src/lib.rs`: every hook is written out with what it decides.

## Build

```sh
rustup target add wasm32-wasip2          # once
cargo build --target wasm32-wasip2 --release
# the component: target/wasm32-wasip2/release/{{lib}}.wasm
```

or, with [cargo-component](https://github.com/bytecodealliance/cargo-component)
(`cargo install cargo-component --locked`; it builds for `wasm32-wasip1` and adapts the
module to a component):

```sh
cargo component build --release
# the component: target/wasm32-wasip1/release/{{lib}}.wasm
```

## Test

```sh
cargo test                                    # the unit tests, natively
cargo test --target wasm32-wasip2             # the unit tests, in sluice's plugin sandbox
sluice plugin test target/wasm32-wasip2/release/{{lib}}.wasm vectors.json   # the component
```

The unit tests build requests and responses with `sluice_plugin_sdk::test::{request,
response}`. Built for `wasm32-wasip2`, they run under `sluice plugin run-test`, the runner
`.cargo/config.toml` names (so `sluice` must be on your `PATH`): in the engine and the
sandbox the plugin runs in, with no files, network or environment and a clock frozen at the
Unix epoch. A panic there aborts the whole run (`panic = "abort"` is the target's default):
the runner then runs the tests again with `--nocapture`, so the panic's message is shown. `vectors.json` records requests, the answers a provider sent and what the plugin
must conclude (the format is `docs/PLUGIN-VECTORS.md` in the sluice repository): add a case
for every answer of your provider you have seen. `sluice plugin test` runs the component
in the host's sandbox, as in production, and prints one line per case; `sluice plugin
inspect target/wasm32-wasip2/release/{{lib}}.wasm` shows what it exports.

## The SDK dependency

`Cargo.toml` names `sluice-plugin-sdk` by version, as any dependency. The SDK is not
published on crates.io yet, so its `[patch.crates-io]` takes the package from `vendor/`,
where `sluice plugin new` wrote the SDK of the sluice that made this crate, and beside it
the contract's vocabulary the SDK depends on (`vendor/contract`): the crate builds anywhere,
with no sluice checkout. Move it, commit `vendor/` with it, and once the SDK is published
delete the patch and `vendor/`. A newer sluice's SDK: `sluice plugin new` a scratch crate and
copy its `vendor/` over yours.
"#;
