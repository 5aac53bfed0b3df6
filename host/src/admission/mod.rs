//! Admission: every call waits in the host, not at the provider.
//!
//! - [`bucket`]: one quota dimension as a GCRA bucket;
//! - [`scope`]: a provider quota scope — its buckets, concurrency slots, holds and what
//!   responses said about it (the provider's `remaining` is believed when it is lower);
//! - [`fair`]: the priority classes, the weighted fair queue between tenants, and deadlines
//!   within a class;
//! - [`scheduler`]: the state machine that admits requests when every scope they charge can
//!   take them, on the caller's clock;
//! - [`config`]: the TOML that configures all of it;
//! - [`coalesce`]: identical immutable reads in flight, shared when the caller says so;
//! - [`snapshot`]: a read-only view of every scope and of the queue, for operators;
//! - [`shared`]: the scopes' state shared by several hosts on Redis, so N hosts admit one
//!   limit, not N.

pub mod bucket;
pub mod coalesce;
pub mod config;
pub mod fair;
pub mod handle;
pub mod limits;
pub mod outcome;
pub mod scheduler;
pub mod scope;
pub mod shared;
pub mod snapshot;
pub mod tenant;
pub mod usage;

pub use bucket::{Bucket, Denial, Nanos, QuotaError, Rate};
pub use config::{Config, ConfigError, model_scope};
pub use fair::{Class, MAX_PRECEDENCE, RequestId};
pub use handle::{Acquire, Admission, Permit, Refused, Ticket};
pub use limits::Limits;
pub use outcome::{Bound, GrantId, QueueEvent, Rejection, Waiting, Why};
pub use scheduler::{Ask, PoolAsk, Route, Scheduler, TaskId, TenantId};
pub use scope::{Block, Hold, Learned, Origin, Scope, ScopeKey};
pub use snapshot::{
    ConcurrencyStatus, HoldStatus, PoolMemberStatus, PoolStatus, QueueRow, QuotaOrigin,
    QuotaStatus, ReportedQuota, ScopeKind, ScopeStatus, Snapshot,
};
pub use tenant::ClassSet;
pub use usage::{Dimension, Usage};
