//! The audit log end to end: a log written through the library, tampered with the way an
//! intruder would, and checked with `sluice audit verify` as an auditor runs it.

mod chain;
mod head;
mod keys;
mod support;
mod witness;
