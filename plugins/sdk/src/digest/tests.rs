use base64::Engine as _;

use super::*;

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A PNG's signature and header, then `filler` bytes of picture.
pub(crate) fn png(width: u32, height: u32, filler: usize) -> Vec<u8> {
    let mut v = b"\x89PNG\r\n\x1a\n\x00\x00\x00\x0dIHDR".to_vec();
    v.extend(width.to_be_bytes());
    v.extend(height.to_be_bytes());
    v.extend([8, 6, 0, 0, 0, 0, 0, 0, 0]);
    v.resize(v.len() + filler, 0x55);
    v
}

/// A JPEG with an APP1 segment of `exif` bytes before its frame header.
fn jpeg(width: u16, height: u16, exif: usize) -> Vec<u8> {
    let mut v = vec![0xFF, 0xD8, 0xFF, 0xE1];
    let len = u16::try_from(exif + 2).unwrap();
    v.extend(len.to_be_bytes());
    v.resize(v.len() + exif, 0);
    v.extend([0xFF, 0xC0, 0x00, 0x11, 0x08]);
    v.extend(height.to_be_bytes());
    v.extend(width.to_be_bytes());
    v.extend([0x03; 12]);
    v
}

fn pdf(pages: usize) -> Vec<u8> {
    let mut v = b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n".to_vec();
    v.extend(format!("2 0 obj << /Type /Pages /Count {pages} >> endobj\n").as_bytes());
    for i in 0..pages {
        v.extend(format!("{} 0 obj << /Type /Page /Parent 2 0 R >> endobj\n", i + 3).as_bytes());
    }
    v
}

#[test]
fn an_openai_chat_with_an_image_reads_its_size_detail_text_and_fields() {
    let image = format!("data:image/png;base64,{}", b64(&png(1024, 768, 200_000)));
    let body = serde_json::json!({
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is in this picture?"},
            {"type": "image_url", "image_url": {"url": image, "detail": "high"}},
        ]}],
        "model": "gpt-4o",
        "max_tokens": 50,
        "stream_options": {"include_usage": true},
    })
    .to_string();
    let d = digest(body.as_bytes());
    assert!(d.json);
    assert_eq!(d.length, body.len() as u64);
    assert_eq!(d.media.len(), 1, "{:?}", d.media);
    let m = &d.media[0];
    assert_eq!(m.kind, MediaKind::Image);
    assert_eq!(m.media_type.as_deref(), Some("image/png"));
    assert_eq!((m.width, m.height), (Some(1024), Some(768)));
    assert_eq!(m.detail.as_deref(), Some("high"));
    assert!(!m.by_url);
    assert!(m.bytes.unwrap() > 200_000);
    // The text, the role and the model's name: never the image's base64.
    assert!(d.text_chars < 100, "{}", d.text_chars);
    assert_eq!(d.string("model").as_deref(), Some("gpt-4o"));
    assert_eq!(d.number("max_tokens"), Some(50));
    assert_eq!(d.flag("stream_options.include_usage"), Some(true));
}

#[test]
fn an_anthropic_image_and_document_by_data_and_an_image_by_url() {
    let body = serde_json::json!({
        "model": "claude-sonnet-4",
        "max_tokens": 1024,
        "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg",
                "data": b64(&jpeg(1092, 1092, 30_000))}},
            {"type": "document", "source": {"type": "base64", "media_type": "application/pdf",
                "data": b64(&pdf(3))}},
            {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.png"}},
            {"type": "text", "text": "compare them"},
        ]}],
    })
    .to_string();
    let d = digest(body.as_bytes());
    assert_eq!(d.media.len(), 3, "{:?}", d.media);
    let (image, doc, link) = (&d.media[0], &d.media[1], &d.media[2]);
    assert_eq!((image.width, image.height), (Some(1092), Some(1092)));
    assert_eq!(image.kind, MediaKind::Image);
    assert_eq!(doc.kind, MediaKind::Document);
    assert_eq!(doc.pages, Some(3));
    assert!(link.by_url && link.kind == MediaKind::Image && link.bytes.is_none());
    assert!(d.text_chars < 60, "{}", d.text_chars);
}

#[test]
fn gemini_inline_data_and_openai_audio_are_media() {
    let wav = {
        let mut v = b"RIFF\x00\x00\x00\x00WAVEfmt ".to_vec();
        v.resize(4_000, 1);
        v
    };
    let body = serde_json::json!({
        "contents": [{"parts": [
            {"inline_data": {"mime_type": "image/gif", "data": b64(&[&b"GIF89a\x20\x03\x58\x02"[..], &[7; 100]].concat())}},
            {"text": "hi"},
        ]}],
        "messages": [{"role": "user", "content": [
            {"type": "input_audio", "input_audio": {"data": b64(&wav), "format": "wav"}},
        ]}],
    })
    .to_string();
    let d = digest(body.as_bytes());
    assert_eq!(d.media.len(), 2, "{:?}", d.media);
    assert_eq!(
        (d.media[0].width, d.media[0].height),
        (Some(800), Some(600))
    );
    assert_eq!(d.media[1].kind, MediaKind::Audio);
    assert_eq!(d.media[1].media_type.as_deref(), Some("audio/wav"));
}

#[test]
fn gemini_s_camel_case_parts_are_media_as_its_snake_case_ones_are() {
    let body = serde_json::json!({
        "contents": [{"parts": [
            {"inlineData": {"mimeType": "image/gif", "data": b64(&[&b"GIF89a\x20\x03\x58\x02"[..], &[7; 100]].concat())}},
            {"fileData": {"mimeType": "application/pdf", "fileUri": "gs://bucket/report.pdf"}},
            {"fileData": {"mimeType": "video/mp4", "fileUri": "https://generativelanguage.googleapis.com/v1beta/files/abc"}},
            {"text": "hi"},
        ]}],
    })
    .to_string();
    let d = digest(body.as_bytes());
    assert_eq!(d.media.len(), 3, "{:?}", d.media);
    assert_eq!(
        (d.media[0].width, d.media[0].height),
        (Some(800), Some(600))
    );
    assert_eq!(d.media[1].kind, MediaKind::Document);
    assert!(d.media[1].by_url && d.media[2].by_url);
    assert_eq!(d.media[2].media_type.as_deref(), Some("video/mp4"));
    // Only "hi" is text: neither the base64 nor a link nor a media type is.
    assert_eq!(d.text_chars, 2);
}

#[test]
fn bedrock_s_parts_are_media_by_the_key_they_stand_under_and_their_format() {
    let body = serde_json::json!({
        "messages": [{"role": "user", "content": [
            {"image": {"format": "png", "source": {"bytes": b64(&png(1000, 750, 5_000))}}},
            {"document": {"format": "pdf", "name": "report", "source": {"bytes": b64(&pdf(2))}}},
            {"document": {"format": "txt", "name": "notes", "source": {"bytes": b64(&[b'a'; 4_000])}}},
            {"video": {"format": "mp4", "source": {"bytes": b64(&[0; 3_000])}}},
            {"image": {"format": "jpeg", "source": {"s3Location": {"uri": "s3://bucket/cat.jpg", "bucketOwner": "123456789012"}}}},
            {"text": "compare them"},
        ]}],
        "inferenceConfig": {"maxTokens": 512},
    })
    .to_string();
    let d = digest(body.as_bytes());
    assert_eq!(d.media.len(), 5, "{:?}", d.media);
    let (image, pdf_doc, text_doc, video, link) = (
        &d.media[0],
        &d.media[1],
        &d.media[2],
        &d.media[3],
        &d.media[4],
    );
    assert_eq!(image.kind, MediaKind::Image);
    assert_eq!((image.width, image.height), (Some(1000), Some(750)));
    assert_eq!(image.media_type.as_deref(), Some("image/png"));
    assert_eq!(
        (pdf_doc.kind, pdf_doc.pages),
        (MediaKind::Document, Some(2))
    );
    assert_eq!(text_doc.kind, MediaKind::Document);
    assert_eq!(text_doc.media_type.as_deref(), Some("text/plain"));
    assert_eq!(text_doc.bytes, Some(4_000));
    assert_eq!(video.kind, MediaKind::Other);
    assert_eq!(video.media_type.as_deref(), Some("video/mp4"));
    assert!(link.by_url && link.kind == MediaKind::Image && link.bytes.is_none());
    assert_eq!(link.media_type.as_deref(), Some("image/jpeg"));
    // The text, the roles, the documents' names and the bucket's owner: never the base64,
    // the formats or the link.
    assert!(d.text_chars < 60, "{}", d.text_chars);
    assert_eq!(d.number("inferenceConfig.maxTokens"), Some(512));
}

#[test]
fn bytes_and_uris_elsewhere_are_text() {
    let body = serde_json::json!({
        "bytes": "a".repeat(100),
        "tool": {"uri": "s3://bucket/key", "source": {"uri": "s3://bucket/key"}},
        "source": {"bytes": "short"},
    })
    .to_string();
    let d = digest(body.as_bytes());
    assert!(d.media.is_empty(), "{:?}", d.media);
    assert_eq!(d.text_chars, 100 + 15 + 15 + 5);
}

#[test]
fn bedrock_s_output_maxima_are_kept_past_the_bound_on_fields() {
    let mut body = serde_json::Map::new();
    for i in 0..100 {
        body.insert(format!("f{i}"), serde_json::json!(i));
    }
    body.insert(
        "inferenceConfig".into(),
        serde_json::json!({"maxTokens": 9, "max_new_tokens": 8}),
    );
    body.insert(
        "textGenerationConfig".into(),
        serde_json::json!({"maxTokenCount": 7}),
    );
    body.insert("max_gen_len".into(), serde_json::json!(6));
    let d = digest(serde_json::Value::Object(body).to_string().as_bytes());
    assert_eq!(d.number("inferenceConfig.maxTokens"), Some(9));
    assert_eq!(d.number("inferenceConfig.max_new_tokens"), Some(8));
    assert_eq!(d.number("textGenerationConfig.maxTokenCount"), Some(7));
    assert_eq!(d.number("max_gen_len"), Some(6));
}

#[test]
fn a_jpeg_whose_frame_follows_long_metadata_is_still_measured() {
    let image = format!("data:image/jpeg;base64,{}", b64(&jpeg(4032, 3024, 60_000)));
    let d = digest(serde_json::json!({ "image": image }).to_string().as_bytes());
    assert_eq!(
        (d.media[0].width, d.media[0].height),
        (Some(4032), Some(3024))
    );
}

#[test]
fn a_url_that_is_not_in_a_media_part_is_text() {
    let body = r#"{"tools":[{"type":"function","url":"https://example.com/hook"}],"url":"https://x.example/"}"#;
    let d = digest(body.as_bytes());
    assert!(d.media.is_empty(), "{:?}", d.media);
    assert!(d.text_chars > 40);
}

#[test]
fn a_body_that_is_not_whole_json_has_only_its_length() {
    for body in [
        &b"not json at all"[..],
        b"{\"model\":\"gpt-4o\",\"messages\":[",
        b"",
    ] {
        let d = digest(body);
        assert_eq!(d.length, body.len() as u64);
        assert!(!d.json && d.media.is_empty() && d.fields.is_empty() && d.text_chars == 0);
    }
}

#[test]
fn text_is_counted_in_characters_and_long_fields_are_left_out() {
    let long = "é".repeat(300);
    let body = serde_json::json!({"prompt": long, "model": "m"}).to_string();
    let d = digest(body.as_bytes());
    assert_eq!(d.text_chars, 301);
    assert_eq!(d.field("prompt"), None, "over the field cap");
    assert_eq!(d.string("model").as_deref(), Some("m"));
}

#[test]
fn a_body_cannot_set_the_host_s_fields() {
    let body = br#"{"model":"m","sluice":{"default_max_output":1}}"#;
    let mut d = digest(body);
    assert_eq!(d.default_max_output(), None, "{:?}", d.fields);
    d.set_default_max_output(Some(4096));
    assert_eq!(d.default_max_output(), Some(4096));
    d.set_default_max_output(None);
    assert_eq!(d.default_max_output(), None);
    assert_eq!(d.string("model").as_deref(), Some("m"));
}

#[test]
fn nesting_past_the_bound_is_not_read() {
    let deep = "[".repeat(200) + &"]".repeat(200);
    assert!(!digest(deep.as_bytes()).json);
}

#[test]
fn parts_past_the_bound_are_counted_not_described() {
    let image = format!("data:image/png;base64,{}", b64(&png(8, 8, 0)));
    let parts: Vec<_> = (0..MAX_MEDIA + 5)
        .map(|_| serde_json::json!({"type": "image_url", "image_url": {"url": image}}))
        .collect();
    let d = digest(
        serde_json::json!({ "messages": [{"role": "user", "content": parts}] })
            .to_string()
            .as_bytes(),
    );
    assert_eq!(d.media.len(), MAX_MEDIA);
    assert_eq!(d.media_omitted, 5);
}

#[test]
fn keys_are_read_alike_whether_written_plain_or_with_escapes() {
    let plain = digest(br#"{"model":"m","stream_options":{"include_usage":true},"type":"x"}"#);
    let escaped = digest(
        br#"{"mod\u0065l":"m","stream\u005foptions":{"include_usage":true},"t\u0079pe":"x"}"#,
    );
    // The same digest but for the body's length.
    assert_eq!(
        BodyDigest {
            length: plain.length,
            ..escaped
        },
        plain
    );
    assert!(plain.fields.iter().any(|(n, _)| n == "model"));
    assert!(
        plain
            .fields
            .iter()
            .any(|(n, _)| n == "stream_options.include_usage")
    );
}

/// The fields that decide cost are kept wherever they stand: after more other fields than
/// the bound keeps (OpenAI's `logit_bias` takes up to 300 entries, each a field), the model,
/// the maximum and `stream` are still read.
#[test]
fn the_fields_that_decide_cost_are_kept_past_the_bound() {
    let bias: serde_json::Map<String, serde_json::Value> = (0..300)
        .map(|i| (format!("{}", 1000 + i), serde_json::json!(-100)))
        .collect();
    let body = format!(
        r#"{{"logit_bias":{},"messages":[{{"role":"user","content":"hi"}}],"model":"o3-pro","max_completion_tokens":4096,"stream":true,"n":3}}"#,
        serde_json::Value::Object(bias)
    );
    let d = digest(body.as_bytes());
    assert!(d.json);
    assert!(d.fields.len() > MAX_FIELDS, "{}", d.fields.len());
    assert_eq!(d.string("model").as_deref(), Some("o3-pro"));
    assert_eq!(d.number("max_completion_tokens"), Some(4096));
    assert_eq!(d.flag("stream"), Some(true));
    assert_eq!(d.number("n"), Some(3));
    // Other fields past the bound are not kept.
    assert_eq!(d.fields.len(), MAX_FIELDS + 4);
    // Gemini's maximum, one level down, too.
    let body = format!(
        r#"{{"logit_bias":{},"generationConfig":{{"maxOutputTokens":900}}}}"#,
        serde_json::json!(
            (0..100)
                .map(|i| (i.to_string(), 1))
                .collect::<std::collections::BTreeMap<_, _>>()
        )
    );
    let d = digest(body.as_bytes());
    assert_eq!(d.number("generationConfig.maxOutputTokens"), Some(900));
}

/// A key given twice in the body's object, or in an object directly under it, is named;
/// one given twice deeper (inside a message) is not the host's concern.
#[test]
fn a_key_given_twice_near_the_top_is_named() {
    for (body, duplicate) in [
        (
            r#"{"model":"gpt-4o-mini","messages":[],"model":"o3-pro"}"#,
            Some("model"),
        ),
        (
            r#"{"model":"m","max_tokens":1,"max_tokens":100000}"#,
            Some("max_tokens"),
        ),
        (r#"{"mod\u0065l":"a","model":"b"}"#, Some("model")),
        (
            r#"{"generationConfig":{"maxOutputTokens":10,"maxOutputTokens":9000}}"#,
            Some("generationConfig.maxOutputTokens"),
        ),
        (r#"{"metadata":{"a":1,"a":2}}"#, Some("metadata.a")),
        (
            r#"{"messages":[{"role":"user","role":"user"}],"model":"m"}"#,
            None,
        ),
        (
            r#"{"model":"m","messages":[{"role":"user","content":"hi"}]}"#,
            None,
        ),
        (r#"{"a":{"model":1},"model":2}"#, None),
    ] {
        let d = digest(body.as_bytes());
        assert!(d.json, "{body}");
        assert_eq!(d.duplicate_key().as_deref(), duplicate, "{body}");
    }
}

/// Text is counted as text whatever it looks like: a data URL typed into a message is not a
/// picture (the provider bills its characters), nor is one under a `data` or `type` key. A
/// data URL a media part carries is.
#[test]
fn a_data_url_in_text_is_text() {
    let image = format!("data:image/png;base64,{}", b64(&png(64, 64, 30_000)));
    for body in [
        serde_json::json!({"messages": [{"role": "user", "content": &image}]}),
        serde_json::json!({"messages": [{"role": "user", "content": [{"type": "text", "text": &image}]}]}),
        serde_json::json!({"prompt": [&image, &image]}),
        serde_json::json!({"input": [{"type": "input_text", "url": &image}]}),
    ] {
        let text = body.to_string();
        let d = digest(text.as_bytes());
        assert!(d.media.is_empty(), "{text:.80}: {:?}", d.media);
        assert!(d.text_chars >= image.len() as u64, "{text:.80}");
    }
    for body in [
        serde_json::json!({"content": [{"type": "image_url", "image_url": {"url": &image}}]}),
        serde_json::json!({"input": [{"type": "input_image", "image_url": &image}]}),
        serde_json::json!({"image": &image}),
    ] {
        let d = digest(body.to_string().as_bytes());
        assert_eq!(d.media.len(), 1, "{body:.80}");
        assert_eq!(d.media[0].width, Some(64));
    }
}
