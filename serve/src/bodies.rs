//! Request bodies read within their bounds: one body's size (`serve.max_body_bytes`), the
//! memory one tenant's bodies hold at once (`serve.max_body_memory_per_tenant`) and all
//! bodies together (`serve.max_body_memory`). A body is weighed by its `Content-Length`
//! before a byte of it is read (and read into one buffer of that size), and as each chunk
//! of a chunked body arrives. Its memory is counted until the call that carries it ends
//! ([`Hold`] is kept with it), then given back.

use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::json;

use crate::allowance::{Allowance, Hold, Short};
use crate::shape::SluiceError;

/// A body's bounds.
#[derive(Debug, Clone)]
pub(crate) struct Bounds {
    /// One body's largest size.
    pub max_body: usize,
    /// The memory bodies may hold, by tenant and in all.
    pub memory: Arc<Allowance>,
    /// How long the whole body may take to arrive.
    pub within: Duration,
}

/// Reads `body`, declared `declared` bytes long (its `Content-Length`, if it has one), for
/// `tenant`: its bytes, and the memory they are counted in.
///
/// # Errors
/// 413 `body_too_large` past one body's bound or the tenant's whole memory; 503
/// `body_memory_full` (with `Retry-After`) while other bodies hold the memory; 408
/// `read_timeout`; 400 `body_unreadable`.
pub(crate) async fn read(
    bounds: &Bounds,
    body: Incoming,
    declared: Option<u64>,
    tenant: &str,
) -> Result<(Bytes, Hold), SluiceError> {
    let declared = declared.unwrap_or(0);
    if let Some(e) = never_fits(bounds, declared) {
        return Err(e);
    }
    let mut hold = bounds.memory.take(tenant, declared).map_err(short)?;
    // One buffer of the declared size: a body is never copied to grow.
    let mut buf = BytesMut::with_capacity(usize::try_from(declared).unwrap_or(0));
    let read = async {
        let mut body = body;
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                SluiceError::new(
                    400,
                    "body_unreadable",
                    format!("sluice: the request body: {e}"),
                )
            })?;
            let Ok(data) = frame.into_data() else {
                continue;
            };
            let len = (buf.len() + data.len()) as u64;
            if let Some(e) = never_fits(bounds, len) {
                return Err(e);
            }
            if len > hold.units() {
                hold.grow(len - hold.units()).map_err(short)?;
            }
            buf.extend_from_slice(&data);
        }
        Ok(())
    };
    tokio::time::timeout(bounds.within, read)
        .await
        .map_err(|_| {
            SluiceError::new(
                408,
                "read_timeout",
                format!(
                    "sluice: the request body did not arrive whole within {} ms \
                     (serve.read_timeout_ms)",
                    bounds.within.as_millis()
                ),
            )
        })??;
    Ok((buf.freeze(), hold))
}

/// 413: the body is larger than `key`'s `bound` bytes.
fn too_large(key: &str, bound: u64) -> SluiceError {
    SluiceError::new(
        413,
        "body_too_large",
        format!("sluice: the request body is larger than {bound} bytes ({key})"),
    )
    .detail(json!({"bound": key, "bytes": bound}))
}

/// 413 when a body of `len` bytes could never fit: larger than one body may be, or than
/// its tenant's whole memory.
fn never_fits(bounds: &Bounds, len: u64) -> Option<SluiceError> {
    let per_tenant = bounds.memory.per_owner();
    if len > bounds.max_body as u64 {
        Some(too_large("serve.max_body_bytes", bounds.max_body as u64))
    } else if len > per_tenant {
        Some(too_large("serve.max_body_memory_per_tenant", per_tenant))
    } else {
        None
    }
}

/// 503, try again in a second: the memory is held by other bodies now.
fn short(s: Short) -> SluiceError {
    let (key, whose) = match s {
        Short::Owner { .. } => ("serve.max_body_memory_per_tenant", "the tenant's"),
        Short::Total { .. } => ("serve.max_body_memory", "the sidecar's"),
    };
    SluiceError::new(
        503,
        "body_memory_full",
        format!(
            "sluice: request bodies in flight hold {whose} {} bytes of memory for bodies \
             ({key}); send this one again once some of them have ended",
            s.cap()
        ),
    )
    .detail(json!({"bound": key, "bytes": s.cap()}))
    .retry_after(1)
}
