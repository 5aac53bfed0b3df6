//! The official TypeScript SDKs (`openai`, `@anthropic-ai/sdk`; pinned in
//! `tests/node/package.json` and its lock) through the sidecar: the scripts of `tests/node/`,
//! run by the PATH's `node` with the SDKs from `$SLUICE_SDK_NODE_DIR`, else from the
//! workspace's `target/sdk-node`, made (or remade, when `tests/node/package.json` or its lock
//! changed) by `tests/node/make-modules.sh`. Their cases are the Python SDKs' (`main.rs`,
//! `writes.rs`), one body for both: the scripts print the same lines.

use std::path::PathBuf;

use crate::scripts::{Runner, Sdks, given_or_made};

/// The official openai and @anthropic-ai/sdk npm packages, pinned in
/// `tests/node/package-lock.json`.
pub static NODE: Sdks = Sdks::new(
    "Node.js with the TypeScript SDKs",
    "tests/node",
    "mjs",
    modules,
);

/// `node`, told where the pinned SDKs are installed; or why they could not be.
fn modules() -> Result<Runner, String> {
    let dir = given_or_made(
        "SLUICE_SDK_NODE_DIR",
        "sdk-node",
        "tests/node/make-modules.sh",
        |dir| dir,
        |dir, said| {
            format!(
                "the SDK tests need Node.js 20 or later and npm, for the pinned openai and \
                 @anthropic-ai/sdk packages, and tests/node/make-modules.sh could not make \
                 {}:\n{said}\n(or point SLUICE_SDK_NODE_DIR at a directory where `npm ci` \
                 installed tests/node/package-lock.json)",
                dir.display()
            )
        },
    )?;
    Ok(Runner {
        program: PathBuf::from("node"),
        env: vec![("SLUICE_SDK_NODE_DIR", dir.into_os_string())],
    })
}

/// A test for each case, `name => body`: the `body` (a function of `main.rs` or `writes.rs`
/// that the Python SDKs run too) with the TypeScript SDKs, skipped where they are missing.
macro_rules! cases {
    ($($name:ident => $body:path),* $(,)?) => {$(
        #[test]
        fn $name() {
            if NODE.unavailable() {
                return;
            }
            $body(&NODE);
        }
    )*};
}

cases! {
    the_sdks_get_completions_and_messages_streamed_or_not_through_the_sidecar =>
        crate::completions_and_messages,
    a_429_storm_is_absorbed_and_the_sdk_sees_only_200s => crate::a_429_storm_is_absorbed,
    refusals_reach_the_sdks_as_their_own_errors => crate::refusals_are_the_sdks_own_errors,
    an_sdk_that_retries_anyway_is_told_on_its_retry => crate::an_sdk_retry_is_told,
    a_write_stored_and_then_dropped_is_reconciled_to_one_effect =>
        crate::writes::a_lost_answer_is_one_effect,
}
