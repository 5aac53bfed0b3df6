//! The host at the wire, against a fake provider on loopback as strict as the real one: each
//! provider's dialect, streams, media, long generations, retries, holds, pools, TLS, usage
//! corrections, spans and metrics.
//!
//! One test binary of the area (`cargo test -p sluice-tests --test wire`); a file is one
//! concern, run alone with its module's name as the filter (`-- bedrock_wire::`).

mod bedrock_wire;
mod blame_wire;
mod fake_dialects;
mod gemini_wire;
mod generations_wire;
mod holds_wire;
mod media_wire;
mod observe_wire;
mod pools_wire;
mod real_traffic;
mod retry_wire;
mod sigv4_suite;
mod tls_wire;
mod usage_correction;
