//! The configuration the host accepts: the admission TOML (`sluice::admission::Config`) and
//! the retry TOML (`sluice::retry::RetryConfig`), on arbitrary text.
//!
//! The input is the TOML text, then (after a NUL byte) steps for a scheduler. Asserts: a
//! configuration that validates builds a scheduler, which then takes arbitrary submits,
//! polls, completions and cancellations without panicking and keeps an exact count of what
//! waits; a retry configuration that parses gives every class at least one attempt and an
//! uncertain write exactly one.
#![no_main]

use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;
use sluice::admission::{Config, Scheduler};
use sluice::contract::RequestClass;
use sluice::retry::RetryConfig;
use sluice_fuzz::drive::{self, Driver, Routes};

fuzz_target!(|data: &[u8]| {
    let (text, rest) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let Ok(text) = std::str::from_utf8(text) else {
        return;
    };

    if let Ok(retry) = RetryConfig::from_toml(text) {
        for class in [
            RequestClass::Read,
            RequestClass::IdempotentWrite,
            RequestClass::UncertainWrite,
        ] {
            assert!(retry.budget(class).max_attempts >= 1);
        }
        assert_eq!(retry.budget(RequestClass::UncertainWrite).max_attempts, 1);
        let _ = retry.backoff();
    }

    let Ok(config) = Config::from_toml(text) else {
        return;
    };
    let mut routes: Routes = Vec::new();
    for (name, p) in config.providers.iter().take(4) {
        routes.push((name.clone(), "cred-1".into(), Vec::new()));
        let names: Vec<String> = p.named_scopes().map(|n| n.name).take(3).collect();
        if !names.is_empty() {
            routes.push((name.clone(), "cred-2".into(), names));
        }
    }
    routes.push(("unconfigured".into(), "cred".into(), vec!["search".into()]));
    let mut scheduler = match Scheduler::new(config) {
        Ok(s) => s,
        Err(e) => panic!("a configuration that validates builds no scheduler: {e}"),
    };
    let mut u = Unstructured::new(rest);
    let Ok(steps) = drive::steps(&mut u) else {
        return;
    };
    Driver::default().run(&mut scheduler, &routes, &steps, &[]);
});
