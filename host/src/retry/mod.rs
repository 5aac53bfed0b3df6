//! The retry machinery, split the way tower splits it: the plugin classifies, [`decide`](decide())
//! weighs the class's budget, [`backoff`] spaces the attempts, [`breaker`] stops a path that
//! keeps failing the same way. The executor ([`crate::execute`]) runs them around the
//! admission queue and the transport.

pub mod backoff;
pub mod breaker;
pub mod classes;
pub mod decide;

pub use backoff::Backoff;
pub use breaker::{BreakerState, Breakers, Kind as BreakerKind, Open, route_template};
pub use classes::{ClassBudget, RetryConfig, RetryConfigError, class_name, class_named};
pub use decide::{AfterAttempt, Next, Plan, Spent, Stop, decide};
