//! The audit verifier against real logs: a log written and signed by `AuditLog` (one of 256
//! chains of 1 to 12 events, a checkpoint every 1 to 5 records, a third of them pruned by
//! the writer), then mutated (bytes flipped, set,
//! inserted or deleted; lines deleted, duplicated or swapped; the head or the tail cut), in
//! the log or in its witness.
//!
//! Asserts: the unmutated log verifies, with its witness; and a mutated one never verifies
//! unless what is left is what the verifier documents it cannot tell from an intact log:
//! without the witness, a log cut to end at a checkpoint (and, for a pruned log, after the
//! checkpoint that signs its `pruned` record); and a change to the witness's lines before
//! a pruned log's first record, which vouch for nothing the log still holds. A log whose
//! head was cut fails (no signed `pruned` record names where it starts), and so does any
//! change to the witness from the log's first record on.
#![no_main]

use std::cell::RefCell;
use std::collections::HashMap;

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use sluice::audit::{VerifyError, verify};
use sluice_fuzz::audit::{ChainSpec, verifying_key, write_chain};
use sluice_fuzz::scratch_dir;

#[derive(Debug, Arbitrary)]
enum Mutation {
    Flip { at: u16, mask: u8 },
    Set { at: u16, byte: u8 },
    Insert { at: u16, bytes: Vec<u8> },
    Delete { at: u16, len: u8 },
    Truncate { at: u16 },
    DeleteLine { line: u8 },
    DuplicateLine { line: u8 },
    SwapLines { a: u8, b: u8 },
    CutHead { lines: u8 },
}

#[derive(Debug)]
struct Input {
    chain: u8,
    with_witness: bool,
    in_witness: bool,
    mutations: Vec<Mutation>,
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        let chain = u8::arbitrary(u)?;
        let with_witness = bool::arbitrary(u)?;
        let in_witness = with_witness && u.ratio(1, 4)?;
        let n = u.int_in_range(1..=3)?;
        let mutations = (0..n)
            .map(|_| Mutation::arbitrary(u))
            .collect::<arbitrary::Result<_>>()?;
        Ok(Self {
            chain,
            with_witness,
            in_witness,
            mutations,
        })
    }
}

thread_local! {
    /// Every chain written so far, by seed: signing is the slow part.
    static CHAINS: RefCell<HashMap<u8, (Vec<u8>, Vec<u8>)>> = RefCell::new(HashMap::new());
}

fuzz_target!(|input: Input| {
    let dir = scratch_dir();
    let (log_path, witness_path) = (dir.join("chain.log"), dir.join("chain.witness"));
    let key = verifying_key();
    let (log, witness) = CHAINS.with(|chains| {
        chains
            .borrow_mut()
            .entry(input.chain)
            .or_insert_with(|| {
                let spec = ChainSpec::from_seed(input.chain);
                let written = write_chain(&spec, &log_path, &witness_path);
                if let Err(e) = verify(&log_path, &key, Some(&witness_path), false) {
                    panic!("a log as written does not verify: {e}");
                }
                written
            })
            .clone()
    });

    let original = if input.in_witness { &witness } else { &log };
    let mut mutated = original.clone();
    for m in &input.mutations {
        apply(&mut mutated, m);
    }
    if mutated == *original {
        return;
    }
    let (log_bytes, witness_bytes) = if input.in_witness {
        (&log, &mutated)
    } else {
        (&mutated, &witness)
    };
    let (checked_log, checked_witness) = (dir.join("mutated.log"), dir.join("mutated.witness"));
    std::fs::write(&checked_log, log_bytes).expect("write");
    std::fs::write(&checked_witness, witness_bytes).expect("write");
    let witness_arg = input.with_witness.then_some(checked_witness.as_path());
    let report = match verify(&checked_log, &key, witness_arg, false) {
        Err(VerifyError::Tampered(_)) => return,
        Err(e) => panic!("verify could not read its own scratch files: {e}"),
        Ok(report) => report,
    };

    let lines = |b: &[u8]| -> Vec<Vec<u8>> {
        b.split_inclusive(|&c| c == b'\n')
            .map(<[u8]>::to_vec)
            .collect()
    };
    if input.in_witness {
        // The witness must hold exactly the log's checkpoints from the log's first record
        // on: shortened, reordered or edited there, it fails. Its lines before that vouch
        // for records the writer pruned, which the log no longer holds.
        let seq = |l: &[u8]| -> u64 {
            let text = String::from_utf8_lossy(l);
            let digits = text.split_once(r#""seq":"#).map_or("", |(_, rest)| rest);
            let end = digits
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(digits.len());
            digits[..end].parse().unwrap_or(0)
        };
        let kept = |b: &[u8]| -> Vec<Vec<u8>> {
            lines(b)
                .into_iter()
                .filter(|l| seq(l) >= report.first_seq)
                .collect()
        };
        assert!(
            kept(&mutated) == kept(&witness),
            "verify accepted a witness changed from record {} on ({report:?}):\n{}",
            report.first_seq,
            String::from_utf8_lossy(&mutated)
        );
        return;
    }
    let whole = lines(&log);
    let cut = lines(&mutated);
    let has = |l: &[u8], what: &[u8]| l.windows(what.len()).any(|w| w == what);
    let is_checkpoint = |l: &[u8]| has(l, br#""event":"checkpoint""#);
    // The checkpoint that signs a pruned log's `pruned` record follows it.
    let signed_prune = whole
        .iter()
        .position(|l| has(l, br#""event":"pruned""#))
        .map(|p| p + 1);
    let start = whole.iter().position(|l| cut.first() == Some(l));
    let allowed = start.is_some_and(|a| {
        let b = a + cut.len();
        let slice = b <= whole.len() && whole[a..b] == cut[..];
        let head_ok = a == 0;
        let tail_ok = b == whole.len()
            || (!input.with_witness
                && is_checkpoint(&whole[b - 1])
                && signed_prune.is_none_or(|s| b > s));
        slice && head_ok && tail_ok
    });
    assert!(
        allowed,
        "verify accepted a mutated log ({report:?}; witness: {}):\n{}",
        input.with_witness,
        String::from_utf8_lossy(&mutated)
    );
});

fn apply(b: &mut Vec<u8>, m: &Mutation) {
    let at = |i: u16, len: usize| usize::from(i) % (len + 1);
    match m {
        Mutation::Flip { at: i, mask } => {
            if !b.is_empty() {
                let i = usize::from(*i) % b.len();
                b[i] ^= mask.max(&1);
            }
        }
        Mutation::Set { at: i, byte } => {
            if !b.is_empty() {
                let i = usize::from(*i) % b.len();
                b[i] = *byte;
            }
        }
        Mutation::Insert { at: i, bytes } => {
            let i = at(*i, b.len());
            b.splice(i..i, bytes.iter().copied());
        }
        Mutation::Delete { at: i, len } => {
            let i = at(*i, b.len());
            let end = (i + usize::from(*len)).min(b.len());
            b.drain(i..end);
        }
        Mutation::Truncate { at: i } => {
            let i = at(*i, b.len());
            b.truncate(i);
        }
        Mutation::DeleteLine { line } => edit_lines(b, |l| {
            if !l.is_empty() {
                let i = usize::from(*line) % l.len();
                l.remove(i);
            }
        }),
        Mutation::DuplicateLine { line } => edit_lines(b, |l| {
            if !l.is_empty() {
                let i = usize::from(*line) % l.len();
                let copy = l[i].clone();
                l.insert(i, copy);
            }
        }),
        Mutation::SwapLines { a, b: c } => edit_lines(b, |l| {
            if !l.is_empty() {
                let (i, j) = (usize::from(*a) % l.len(), usize::from(*c) % l.len());
                l.swap(i, j);
            }
        }),
        Mutation::CutHead { lines } => edit_lines(b, |l| {
            let n = usize::from(*lines).min(l.len());
            l.drain(..n);
        }),
    }
}

fn edit_lines(b: &mut Vec<u8>, f: impl FnOnce(&mut Vec<Vec<u8>>)) {
    let mut lines: Vec<Vec<u8>> = b
        .split_inclusive(|&c| c == b'\n')
        .map(<[u8]>::to_vec)
        .collect();
    f(&mut lines);
    *b = lines.concat();
}
