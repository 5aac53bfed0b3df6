//! The provider's answers to writes, kept with the journal's actions: a write submitted
//! again after it succeeded is answered with the provider's own status and body (see
//! [`crate::journal::KeptAnswer`]).

use std::time::Duration;

use super::Writes;
use crate::contract::Response;
use crate::journal::{JournalError, KeptAnswer};

impl Writes {
    /// Keeps the provider's answer to each write for `keep` (7 days by default; zero keeps
    /// none), and forgets those older now: a write submitted again after it succeeded is
    /// answered with the provider's own status and body ([`WriteOutcome::Succeeded`]'s
    /// `replayed`), so that the agent's SDK parses it as it did the first time.
    ///
    /// # Errors
    /// [`JournalError`] when the old answers cannot be forgotten.
    pub fn keep_answers(mut self, keep: Duration) -> Result<Self, JournalError> {
        self.keep_answers = keep;
        let keep_ms = i64::try_from(keep.as_millis()).unwrap_or(i64::MAX);
        self.journal
            .answers()
            .forget_before(self.clock.wall_ms().saturating_sub(keep_ms))?;
        Ok(self)
    }

    /// Keeps `response` as action `id`'s answer, when answers are kept (a failure is
    /// logged: the journal's account stands in for the answer then).
    pub(super) fn keep_answer(&self, id: i64, response: &Response) {
        if self.keep_answers.is_zero() {
            return;
        }
        let content_type = crate::headers::field_pairs(&response.headers)
            .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
            .map(|(_, v)| v.to_owned());
        let answer = KeptAnswer {
            status: response.status,
            content_type,
            body: response.body.clone(),
        };
        if let Err(e) = self
            .journal
            .answers()
            .keep(id, &answer, self.clock.wall_ms())
        {
            tracing::warn!("could not keep the provider's answer to action {id}: {e}");
        }
    }

    /// The provider's answer kept for action `id`, as a response.
    pub(super) fn kept_answer(&self, id: i64) -> Option<Box<Response>> {
        let kept = match self.journal.answers().kept(id) {
            Ok(kept) => kept?,
            Err(e) => {
                tracing::warn!("could not read the answer kept for action {id}: {e}");
                return None;
            }
        };
        let headers = kept
            .content_type
            .map(|t| format!("content-type:{t}\n"))
            .unwrap_or_default();
        Some(Box::new(Response {
            status: kept.status,
            headers,
            body: kept.body,
        }))
    }
}
