use super::*;

/// AWS's own smallest message (the event-stream test suite's "empty message"): a prelude
/// of 16 and 0, no headers, no payload, and the two CRC-32s.
const EMPTY: [u8; 16] = [
    0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0x00, 0x00, 0x05, 0xc2, 0x48, 0xeb, 0x7d, 0x98, 0xc8, 0xff,
];

/// A message written out by hand: a prelude of 43 bytes in all and 20 of headers (CRC-32
/// `c9e91501`), the header `:event-type` (11 bytes of name, type 7, 5 bytes: `chunk`), the
/// payload `{"a":1}` and the message's CRC-32 (`5538c0b5`).
const CHUNK: [u8; 43] = [
    0x00, 0x00, 0x00, 0x2b, 0x00, 0x00, 0x00, 0x14, 0xc9, 0xe9, 0x15, 0x01, 0x0b, 0x3a, 0x65, 0x76,
    0x65, 0x6e, 0x74, 0x2d, 0x74, 0x79, 0x70, 0x65, 0x07, 0x00, 0x05, 0x63, 0x68, 0x75, 0x6e, 0x6b,
    0x7b, 0x22, 0x61, 0x22, 0x3a, 0x31, 0x7d, 0x55, 0x38, 0xc0, 0xb5,
];

#[test]
fn hand_built_messages_decode_and_encode_to_the_same_bytes() {
    let (m, len) = decode(&EMPTY).unwrap();
    assert_eq!(len, 16);
    assert!(m.payload.is_empty() && m.headers().next().is_none());
    assert_eq!(encode(&[], b""), EMPTY);

    let (m, len) = decode(&CHUNK).unwrap();
    assert_eq!(len, CHUNK.len());
    assert_eq!(m.event_type(), Some("chunk"));
    assert_eq!(m.message_type(), None);
    assert_eq!(m.payload, br#"{"a":1}"#);
    assert_eq!(
        encode(
            &[(":event-type", HeaderValue::String("chunk"))],
            br#"{"a":1}"#
        ),
        CHUNK
    );
    assert_eq!(message_len(&CHUNK), Some(43));
}

#[test]
fn every_header_type_goes_both_ways() {
    let uuid = [7; 16];
    let headers = [
        ("t", HeaderValue::Bool(true)),
        ("f", HeaderValue::Bool(false)),
        ("b", HeaderValue::Byte(-2)),
        ("s", HeaderValue::Short(-300)),
        ("i", HeaderValue::Int(70_000)),
        ("l", HeaderValue::Long(-5_000_000_000)),
        ("bytes", HeaderValue::Bytes(&[0, 1, 2])),
        ("str", HeaderValue::String("é")),
        ("ts", HeaderValue::Timestamp(1_796_587_200_000)),
        ("id", HeaderValue::Uuid(uuid)),
    ];
    let bytes = encode(&headers, b"x");
    let (m, _) = decode(&bytes).unwrap();
    let read: Vec<_> = m.headers().map(Result::unwrap).collect();
    assert_eq!(read, headers);
    assert_eq!(
        m.header("ts"),
        Some(HeaderValue::Timestamp(1_796_587_200_000))
    );
    assert_eq!(m.string("str"), Some("é"));
    assert_eq!(m.string("i"), None, "not a string");
}

#[test]
fn a_cut_message_is_truncated_and_says_how_long_it_is() {
    for cut in [0, 5, 11, 12, 30, 42] {
        let err = decode(&CHUNK[..cut]).unwrap_err();
        let needed = if cut < PRELUDE_LEN { PRELUDE_LEN } else { 43 };
        assert_eq!(err, Error::Truncated { needed }, "cut at {cut}");
    }
}

#[test]
fn a_crc_that_does_not_hold_is_refused() {
    let mut bad = CHUNK;
    bad[35] ^= 1;
    assert_eq!(decode(&bad).unwrap_err(), Error::MessageCrc);
    let mut bad = CHUNK;
    bad[42] ^= 0x80;
    assert_eq!(decode(&bad).unwrap_err(), Error::MessageCrc);
    let mut bad = CHUNK;
    bad[9] ^= 1;
    assert_eq!(decode(&bad).unwrap_err(), Error::PreludeCrc);
    assert_eq!(message_len(&bad), None);
}

#[test]
fn lengths_no_message_can_have_are_refused_without_reading_past_them() {
    let prelude = |total: u32, headers: u32| {
        let mut p = Vec::new();
        p.extend(total.to_be_bytes());
        p.extend(headers.to_be_bytes());
        p.extend(crc32fast::hash(&p).to_be_bytes());
        p.resize(64, 0);
        p
    };
    for (total, headers) in [
        (0, 0),
        (15, 0),
        (u32::MAX, 0),
        (16 * 1024 * 1024 + 1, 0),
        (20, 5),
        (16, u32::MAX),
    ] {
        assert_eq!(
            decode(&prelude(total, headers)).unwrap_err(),
            Error::Length,
            "{total} {headers}"
        );
    }
}

#[test]
fn malformed_headers_are_refused() {
    // A header of an unknown type (10), a string that is not UTF-8, a name that runs past
    // the headers: each with lengths and CRC-32s that hold.
    for headers in [
        &b"\x01a\x0a"[..],
        b"\x01a\x07\x00\x02\xff\xfe",
        b"\x09a",
        b"\x01a\x04\x00\x00",
    ] {
        let total = (PRELUDE_LEN + headers.len() + 4) as u32;
        let mut m = Vec::new();
        m.extend(total.to_be_bytes());
        m.extend((headers.len() as u32).to_be_bytes());
        m.extend(crc32fast::hash(&m).to_be_bytes());
        m.extend_from_slice(headers);
        m.extend(crc32fast::hash(&m).to_be_bytes());
        assert_eq!(decode(&m).unwrap_err(), Error::Header, "{headers:?}");
    }
}

#[test]
fn a_body_cut_and_joined_as_a_long_stream_s_end_yields_its_whole_messages() {
    let a = event("contentBlockDelta", r#"{"delta":{"text":"one"}}"#);
    let b = event("contentBlockDelta", r#"{"delta":{"text":"two"}}"#);
    let c = event("metadata", r#"{"usage":{"inputTokens":3}}"#);
    // The first half ends inside `b`; the last half begins at `c`.
    let body = [&a[..], &b[..b.len() / 2], &c[..]].concat();
    let read: Vec<_> = messages(&body).map(|m| m.event_type()).collect();
    assert_eq!(read, [Some("contentBlockDelta"), Some("metadata")]);
    // A cut last message is not returned; bytes before a first prelude are skipped.
    let body = [&b"junk"[..], &a[..], &c[..c.len() - 1]].concat();
    assert_eq!(messages(&body).count(), 1);
    assert_eq!(messages(b"").count(), 0);
    assert_eq!(messages(&[0; 100]).count(), 0);
}

#[test]
fn exceptions_name_their_type() {
    let bytes = exception("throttlingException", r#"{"message":"Too many tokens"}"#);
    let (m, _) = decode(&bytes).unwrap();
    assert!(m.is_exception());
    assert_eq!(m.exception_type(), Some("throttlingException"));
    let metadata = event("metadata", "{}");
    let (e, _) = decode(&metadata).unwrap();
    assert!(!e.is_exception());
    assert_eq!(e.message_type(), Some("event"));
}

#[test]
fn a_body_built_to_make_the_search_slow_is_given_up_on() {
    // Preludes that hold, each stating a long message whose CRC does not: every offset would
    // checksum the rest of the body.
    let mut body = Vec::new();
    while body.len() < 256 * 1024 {
        let mut p = Vec::new();
        p.extend(0x1000_u32.to_be_bytes());
        p.extend(0_u32.to_be_bytes());
        p.extend(crc32fast::hash(&p).to_be_bytes());
        body.extend(p);
    }
    assert_eq!(messages(&body).count(), 0);
}
