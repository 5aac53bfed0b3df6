//! The provider's answers to writes, kept beside the journal's actions: a write submitted
//! again after it succeeded (an agent's retry, a resubmission after a restart) is answered
//! with the provider's own status and body, so that the agent's SDK parses it as it parsed
//! the first — not with an account of sluice's own. An answer is kept for as long as the
//! configuration says (`[journal] keep_answers_days`), and only up to [`MAX_KEPT_ANSWER`]
//! bytes; past either, the journal's account stands in for it.

use super::value::values;
use super::{Journal, JournalError};

/// The largest answer body kept, in bytes.
pub const MAX_KEPT_ANSWER: usize = 1 << 20;

/// A provider's answer to a write, as kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptAnswer {
    /// Its status.
    pub status: u16,
    /// Its `content-type`, when it had one.
    pub content_type: Option<String>,
    /// Its body.
    pub body: Vec<u8>,
}

/// The answers kept for writes, to hand back when the agent asks again
/// ([`Journal::answers`]). A view of the one journal.
#[derive(Debug, Clone, Copy)]
pub struct Answers<'j> {
    pub(crate) journal: &'j Journal,
}

impl Answers<'_> {
    /// Keeps `answer` as action `action_id`'s, received at `at_ms`; `false` (nothing kept)
    /// when its body is larger than [`MAX_KEPT_ANSWER`].
    ///
    /// # Errors
    /// A database failure.
    pub fn keep(
        &self,
        action_id: i64,
        answer: &KeptAnswer,
        at_ms: i64,
    ) -> Result<bool, JournalError> {
        if answer.body.len() > MAX_KEPT_ANSWER {
            return Ok(false);
        }
        self.journal.write(|c| {
            c.exec(
                "INSERT INTO answers (action_id, status, content_type, body, at_ms) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (action_id) DO UPDATE SET \
                 status = excluded.status, content_type = excluded.content_type, \
                 body = excluded.body, at_ms = excluded.at_ms",
                values![
                    action_id,
                    answer.status,
                    answer.content_type.as_ref(),
                    &answer.body,
                    at_ms
                ],
            )?;
            Ok(true)
        })
    }

    /// The answer kept for action `action_id`, if one is.
    ///
    /// # Errors
    /// A database failure.
    pub fn kept(&self, action_id: i64) -> Result<Option<KeptAnswer>, JournalError> {
        self.journal.read(|c| {
            let row = c.row(
                "SELECT status, content_type, body FROM answers WHERE action_id = ?1",
                values![action_id],
            )?;
            Ok(match row {
                None => None,
                Some(r) => Some(KeptAnswer {
                    status: r.get(0)?,
                    content_type: r.get(1)?,
                    body: r.get(2)?,
                }),
            })
        })
    }

    /// Forgets the answers received before `before_ms`; returns how many.
    ///
    /// # Errors
    /// A database failure.
    pub fn forget_before(&self, before_ms: i64) -> Result<usize, JournalError> {
        self.journal.write(|c| {
            let n = c.exec("DELETE FROM answers WHERE at_ms < ?1", values![before_ms])?;
            Ok(usize::try_from(n).unwrap_or(usize::MAX))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(j: &Journal, name: &str) -> i64 {
        let intent = crate::journal::tests::intent(name, "amount=100");
        j.record(&intent).unwrap().action().id
    }

    #[test]
    fn an_answer_is_kept_until_it_is_forgotten_and_a_large_one_is_not_kept() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::open_or_create(&dir.path().join("journal.sqlite")).unwrap();
        let (first, second) = (action(&j, "a"), action(&j, "b"));
        let answer = KeptAnswer {
            status: 201,
            content_type: Some("application/json".into()),
            body: br#"{"id":"pi_1"}"#.to_vec(),
        };
        assert!(j.answers().keep(first, &answer, 1_000).unwrap());
        assert_eq!(j.answers().kept(first).unwrap(), Some(answer));
        let large = KeptAnswer {
            status: 200,
            content_type: None,
            body: vec![b'x'; MAX_KEPT_ANSWER + 1],
        };
        assert!(!j.answers().keep(second, &large, 1_000).unwrap());
        assert_eq!(j.answers().kept(second).unwrap(), None);
        assert_eq!(j.answers().forget_before(2_000).unwrap(), 1);
        assert_eq!(j.answers().kept(first).unwrap(), None);
    }
}
