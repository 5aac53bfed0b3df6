//! Building the HTTP client the host sends with: no redirects, no retries of its own, and
//! the connect timeout of [`Timeouts`]. The other limits of an attempt (time to the first
//! byte, idle time between chunks) are kept by the attempt itself, on the host's clock.

use super::{Timeouts, Transport, TransportError};

impl Transport {
    /// A client with `timeouts`, no redirects and no retries.
    ///
    /// # Errors
    /// [`TransportError`] when the client cannot be built.
    pub fn new(timeouts: Timeouts) -> Result<Self, TransportError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(timeouts.connect)
            .build()?;
        Ok(Self { client, timeouts })
    }
}
