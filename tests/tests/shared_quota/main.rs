//! Several hosts, one quota, judged at the provider: hosts share one account's quotas
//! through a real `redis-server` (a `rediss://` one in `tls`), and the fake provider's ledger says what they sent — how
//! many, when, and whether it had to refuse any.

mod in_process;
mod pools;
mod processes;
mod restart;
mod slices;
mod support;
mod tls;
