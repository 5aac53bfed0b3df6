//! The audit log's reader and verifier (`sluice::audit::{AuditLog::open, verify}`) on
//! arbitrary log and witness bytes, with a fixed public key.
//!
//! The input is a flags byte (bit 0: verify as a live log; bit 1: reopen it), the log, and
//! optionally (after four NUL bytes) a witness.
//! Asserts: the verifier answers every input (no panic, a finding or a report); a report
//! counts what it says (records from first to last seq, checkpoints among them); and a log
//! that verifies as a live log, reopened by the writer and closed, verifies as a closed one:
//! the writer continues the chain exactly where the verifier says it ends.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sluice::audit::{AuditKey, AuditLog, AuditSettings, Event, EventKind, verify};
use sluice_fuzz::audit::{SECRET, verifying_key};
use sluice_fuzz::{NOW_MS, scratch_dir};

const SPLIT: &[u8] = b"\0\0\0\0";

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let (log, witness) = match rest.windows(SPLIT.len()).position(|w| w == SPLIT) {
        Some(i) => (&rest[..i], Some(&rest[i + SPLIT.len()..])),
        None => (rest, None),
    };
    let dir = scratch_dir();
    let (log_path, witness_path) = (dir.join("verify.log"), dir.join("verify.witness"));
    std::fs::write(&log_path, log).expect("write the log");
    if let Some(w) = witness {
        std::fs::write(&witness_path, w).expect("write the witness");
    }
    let key = verifying_key();
    let open_tail = flags & 1 == 1;
    let witness_arg = witness.map(|_| witness_path.as_path());
    let verified = verify(&log_path, &key, witness_arg, open_tail);
    if let Ok(report) = &verified {
        assert!(report.records >= 1);
        assert_eq!(
            report.last_seq - report.first_seq + 1,
            report.records,
            "{report:?}"
        );
        assert!(report.checkpoints <= report.records);
        assert!(open_tail || report.unsigned_tail == 0, "{report:?}");
    }

    // The reader (with the second flag bit): the writer reopens what the verifier accepts as
    // a live log. Signatures are the slow part: the answer above is reused when it was that.
    if flags & 2 == 0 {
        return;
    }
    let live = if open_tail && witness.is_none() {
        verified.is_ok()
    } else {
        verify(&log_path, &key, None, true).is_ok()
    };
    if !live {
        return;
    }
    let settings = AuditSettings::default();
    let writer = match AuditLog::open(&log_path, AuditKey::from_bytes(&SECRET), settings, NOW_MS) {
        Ok(w) => w,
        Err(e) => panic!("the writer refuses a log the verifier accepts: {e}"),
    };
    writer
        .append(&Event::new(EventKind::Decision, NOW_MS).detail("reopened"))
        .expect("append");
    writer.close(NOW_MS).expect("close");
    if let Err(e) = verify(&log_path, &key, None, false) {
        panic!("a reopened and closed log does not verify: {e}");
    }
});
