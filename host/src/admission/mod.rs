//! Admission: the buckets that pace every scope below its provider's limits, so calls wait
//! in the host instead of being refused by the provider.

pub mod bucket;

pub use bucket::{Bucket, Denial, Nanos, QuotaError};
