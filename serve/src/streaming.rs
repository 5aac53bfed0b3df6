//! A streamed answer passed straight through: each chunk goes to the agent as it arrives
//! from the provider. The host's [`Stream`] keeps the call's admission slot while it runs
//! and, at its end, corrects the charge by the usage the stream reports. A stream that
//! breaks off after it began is never retried (the agent has part of an answer already):
//! the agent gets an error event in the provider's shape, then the end of the stream. An
//! OpenAI stream the sidecar asked for its usage passes an event at a time, without what
//! asking added (`stream_usage.rs`).

use bytes::Bytes;
use http_body_util::{BodyExt, Channel};
use hyper::Response;
use hyper::body::Frame;
use serde_json::json;
use sluice::contract::ErrorShape;
use sluice::execute::Stream;

use crate::reply::{self, Body, BodyError};
use crate::shape::SluiceError;
use crate::stream_usage::UsageFilter;

/// How many chunks may wait for a slow agent before the provider's stream is paused.
const BUFFERED_CHUNKS: usize = 16;

/// The answer to a call whose stream began. `strip_usage`: the sidecar asked for the
/// stream's usage on the agent's behalf, and takes out what that added
/// ([`UsageFilter`]).
pub fn respond(mut stream: Stream, shape: ErrorShape, strip_usage: bool) -> Response<Body> {
    let (mut tx, body) = Channel::<Bytes, BodyError>::new(BUFFERED_CHUNKS);
    let status = stream.status;
    let headers = Bytes::copy_from_slice(stream.headers.as_bytes());
    // A binary stream's error is a message of its own framing, never text in its middle.
    let binary = sluice::execute::is_event_stream(&stream.headers);
    let (attempts, waited) = (stream.attempts, stream.waited);
    let mut filter = strip_usage.then(UsageFilter::default);
    tokio::spawn(async move {
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(bytes) => {
                    let bytes = match &mut filter {
                        Some(f) => f.pass(&bytes),
                        None => bytes,
                    };
                    if !bytes.is_empty() && tx.send(Frame::data(bytes)).await.is_err() {
                        // The agent hung up: dropping the stream ends the provider's too.
                        return;
                    }
                }
                Err(broken) => {
                    let e = SluiceError::new(
                        502,
                        "stream_broken",
                        format!(
                            "sluice: {}; it is not sent again (part of the answer was already \
                             delivered)",
                            sluice::printable::printable(&broken.to_string())
                        ),
                    )
                    .detail(json!({
                        "delivered_bytes": broken.delivered,
                        "provider_error_code": broken.error_code,
                    }));
                    if let Some(rest) = filter.as_mut().map(UsageFilter::finish) {
                        let _ = tx.send(Frame::data(rest)).await;
                    }
                    let event = if binary {
                        Bytes::from(e.exception_message(shape))
                    } else {
                        Bytes::from(e.event(shape))
                    };
                    let _ = tx.send(Frame::data(event)).await;
                    return;
                }
            }
        }
        if let Some(rest) = filter.as_mut().map(UsageFilter::finish)
            && !rest.is_empty()
        {
            let _ = tx.send(Frame::data(rest)).await;
        }
    });
    let mut r = reply::with_fields(status, headers, body.boxed());
    reply::tally(&mut r, attempts, waited);
    r
}
