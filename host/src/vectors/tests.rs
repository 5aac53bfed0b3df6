//! The expectations of every export, each passing when the policy answers what the file
//! says and failing, with the difference named, when it answers anything else. The policy
//! here is a table of answers, so each test states exactly what the plugin said.

use std::path::Path;

use super::*;
use crate::contract::{
    Classification, Description, PluginError, PriorityClass, Reading, ReconcilePlan,
    Reconciliation, Request, RequestPlan, Response, ResponsePart, StatusQuery, UncertainWrite,
    Verdict, WireOutcome,
};

/// A policy that gives the same answers whatever it is asked.
#[derive(Debug)]
struct Answers {
    description: Description,
    should_retry: Option<bool>,
    plan: ReconcilePlan,
    reconciliation: Reconciliation,
}

impl Answers {
    fn new() -> Self {
        Self {
            description: Description {
                name: "stripe".into(),
                version: "1.2.0".into(),
                provider: "Stripe".into(),
                hosts: vec!["api.stripe.com".into()],
                routes: vec!["/v1/*".into()],
                read_routes: vec![],
                error_shape: None,
                refill: None,
            },
            should_retry: Some(false),
            plan: ReconcilePlan::Query(StatusQuery {
                method: "GET".into(),
                url: "https://api.stripe.com/v1/charges/ch_1".into(),
                headers: "accept:application/json\n".into(),
                body: vec![],
            }),
            reconciliation: Reconciliation::Found(Some("ch_1".into())),
        }
    }
}

impl ProviderPolicy for Answers {
    fn description(&self) -> &Description {
        &self.description
    }
    fn plan_request(&self, _: &Request) -> Result<RequestPlan, PluginError> {
        Ok(RequestPlan {
            class: PriorityClass::Standard,
            tenant: None,
            deadline_ms: None,
            cost: vec![],
            scopes: vec![],
        })
    }
    fn read_response(
        &self,
        _: &Request,
        _: &WireOutcome,
        _: ResponsePart,
    ) -> Result<Reading, PluginError> {
        Ok(Reading {
            classification: Classification {
                verdict: Verdict::ClientError,
                retry_after_ms: None,
                error_code: Some("card_declined".into()),
                should_retry: self.should_retry,
                scope: None,
            },
            observations: vec![],
            usage: vec![],
        })
    }
    fn reconcile(&self, _: &UncertainWrite) -> Result<ReconcilePlan, PluginError> {
        Ok(self.plan.clone())
    }
    fn read_reconciliation(
        &self,
        _: &UncertainWrite,
        _: &Response,
    ) -> Result<Reconciliation, PluginError> {
        Ok(self.reconciliation.clone())
    }
}

const ATTEMPT: &str = r#"{"name": "a declined card",
    "request": {"method": "POST", "url": "https://api.stripe.com/v1/charges", "class": "uncertain-write"},
    "response": {"status": 402}, "expect": EXPECT}"#;

const WRITE: &str = r#"{"name": "a lost charge",
    "write": {"method": "POST", "url": "https://api.stripe.com/v1/charges", "operation_id": "ch_1"},
    "response": {"status": 200, "body": "{\"id\":\"ch_1\"}"}, "expect": EXPECT}"#;

/// The failures of running `case` (with `expect` in place) in a file of its own against `p`.
fn failures(p: &Answers, top: &str) -> Vec<Option<String>> {
    let file = parse(Path::new("t.json"), top).unwrap();
    run(p, &file)
        .results
        .into_iter()
        .map(|r| r.failure)
        .collect()
}

fn attempt(expect: &str) -> String {
    format!(r#"{{"cases": [{}]}}"#, ATTEMPT.replace("EXPECT", expect))
}

fn write(expect: &str) -> String {
    format!(
        r#"{{"cases": [], "writes": [{}]}}"#,
        WRITE.replace("EXPECT", expect)
    )
}

fn malformed(text: &str) -> String {
    parse(Path::new("t.json"), text).unwrap_err().to_string()
}

#[test]
fn should_retry_passes_when_the_advice_matches_and_fails_naming_both_when_not() {
    let p = Answers::new();
    assert_eq!(failures(&p, &attempt(r#"{"should_retry": false}"#)), [None]);
    assert_eq!(
        failures(&p, &attempt(r#"{"should_retry": true}"#)),
        [Some("should_retry: expected true, got false".into())]
    );
    assert_eq!(
        failures(&p, &attempt(r#"{"should_retry": null}"#)),
        [Some("should_retry: expected null, got false".into())]
    );
}

#[test]
fn every_difference_of_a_case_is_reported_not_only_the_first() {
    let p = Answers::new();
    let found = failures(
        &p,
        &attempt(
            r#"{"verdict": "success", "error_code": "other", "should_retry": true,
                "plan": {"class": "background", "cost": {"requests": 1}}}"#,
        ),
    );
    assert_eq!(
        found,
        [Some(
            "verdict: expected success, got client-error; error_code: expected \"other\", got \
             \"card_declined\"; should_retry: expected true, got false; plan.class: expected \
             background, got standard; plan.cost: no reported amount of \"requests\" (reported: \
             none)"
                .into()
        )]
    );
}

#[test]
fn a_misspelt_dimension_is_refused_with_the_name_it_meant() {
    for (written, meant) in [
        ("input_tokens", "input-tokens"),
        ("prompt_tokens", "input-tokens"),
        ("Output-Tokens", "output-tokens"),
        ("request", "requests"),
    ] {
        let usage = format!(r#"{{"usage": {{"{written}": 3}}}}"#);
        let err = malformed(&attempt(&usage));
        assert!(
            err.contains(&format!("did you mean \"{meant}\"")),
            "{written}: {err}"
        );
        let obs = format!(r#"{{"observations": [{{"dimension": "{written}", "limit": 1}}]}}"#);
        let err = malformed(&attempt(&obs));
        assert!(err.contains("did you mean"), "{written}: {err}");
    }
    // A provider's own dimension is its own.
    assert_eq!(
        failures(&Answers::new(), &attempt(r#"{"usage": {"images": 1}}"#)),
        [Some(
            "usage: no reported amount of \"images\" (reported: none)".into()
        )]
    );
}

#[test]
fn should_retry_alone_is_an_expectation_that_checks_something() {
    let p = Answers {
        should_retry: None,
        ..Answers::new()
    };
    assert_eq!(failures(&p, &attempt(r#"{"should_retry": null}"#)), [None]);
}

#[test]
fn describe_is_checked_once_per_file_before_the_cases() {
    let p = Answers::new();
    let text = attempt(r#"{"verdict": "client-error"}"#).replacen(
        '{',
        r#"{"describe": {"name": "stripe", "hosts": ["api.stripe.com"]}, "#,
        1,
    );
    let report = run(&p, &parse(Path::new("t.json"), &text).unwrap());
    assert_eq!(report.results.len(), 2);
    assert_eq!(report.results[0].name, "describe");
    assert_eq!(report.failed(), 0);

    let wrong = text.replace(r#""name": "stripe""#, r#""name": "stripe-v2""#);
    assert_eq!(
        failures(&p, &wrong)[0].as_deref(),
        Some(r#"describe.name: expected "stripe-v2", got "stripe""#)
    );
}

#[test]
fn a_describe_that_checks_nothing_or_misspells_a_field_is_malformed() {
    let empty = attempt(r#"{"verdict": "client-error"}"#).replacen('{', r#"{"describe": {}, "#, 1);
    assert!(
        malformed(&empty).contains("describe: checks nothing"),
        "{}",
        malformed(&empty)
    );
    let typo = empty.replace("{}", r#"{"host": ["x"]}"#);
    assert!(
        malformed(&typo).contains("describe: field `host`"),
        "{}",
        malformed(&typo)
    );
}

#[test]
fn a_reconcile_query_passes_on_the_same_query_and_names_the_first_field_that_differs() {
    let p = Answers::new();
    let same = r#"{"reconcile": {"kind": "query", "method": "GET",
        "url": "https://api.stripe.com/v1/charges/ch_1",
        "headers": [["accept", "application/json"]], "body": ""},
        "reconciliation": {"kind": "found", "operation_id": "ch_1"}}"#;
    assert_eq!(failures(&p, &write(same)), [None]);
    let url = same.replace("charges/ch_1", "charges/ch_2");
    assert_eq!(
        failures(&p, &write(&url)),
        [Some(
            r#"reconcile.url: expected "https://api.stripe.com/v1/charges/ch_2", got "https://api.stripe.com/v1/charges/ch_1""#
                .into()
        )]
    );
    let headers = same.replace(r#"[["accept", "application/json"]]"#, "[]");
    assert_eq!(
        failures(&p, &write(&headers)),
        [Some(
            r#"reconcile.headers: expected "", got "accept:application/json\n""#.into()
        )]
    );
}

#[test]
fn a_reconcile_of_another_kind_fails_naming_both_kinds() {
    let p = Answers::new();
    let resend = r#"{"reconcile": {"kind": "resend-same-key"}}"#;
    let resend = write(resend).replace(
        r#""response": {"status": 200, "body": "{\"id\":\"ch_1\"}"}, "#,
        "",
    );
    assert_eq!(
        failures(&p, &resend),
        [Some(
            "reconcile: expected resend-same-key, got query (GET https://api.stripe.com/v1/charges/ch_1)"
                .into()
        )]
    );
    let unsupported = Answers {
        plan: ReconcilePlan::Unsupported("no lookup".into()),
        ..Answers::new()
    };
    let text = resend.replace("resend-same-key", "unsupported");
    assert_eq!(failures(&unsupported, &text), [None]);
    let reason = text.replace(
        r#""kind": "unsupported""#,
        r#""kind": "unsupported", "reason": "other""#,
    );
    assert_eq!(
        failures(&unsupported, &reason),
        [Some(
            r#"reconcile.reason: expected "other", got "no lookup""#.into()
        )]
    );
}

#[test]
fn a_reconciliation_passes_on_the_same_answer_and_fails_on_another() {
    let p = Answers::new();
    let found = r#"{"reconciliation": {"kind": "found", "operation_id": "ch_1"}}"#;
    assert_eq!(failures(&p, &write(found)), [None]);
    assert_eq!(
        failures(&p, &write(&found.replace("ch_1", "ch_9"))),
        [Some(
            r#"reconciliation.operation_id: expected "ch_9", got "ch_1""#.into()
        )]
    );
    assert_eq!(
        failures(
            &p,
            &write(r#"{"reconciliation": {"kind": "found", "operation_id": null}}"#)
        ),
        [Some(
            r#"reconciliation.operation_id: expected null, got "ch_1""#.into()
        )]
    );
    assert_eq!(
        failures(&p, &write(r#"{"reconciliation": {"kind": "not-found"}}"#)),
        [Some(
            r#"reconciliation: expected not-found, got found ("ch_1")"#.into()
        )]
    );
    let unknown = Answers {
        reconciliation: Reconciliation::Unknown("search lags".into()),
        ..Answers::new()
    };
    let text = write(r#"{"reconciliation": {"kind": "unknown", "reason": "search lags"}}"#);
    assert_eq!(failures(&unknown, &text), [None]);
    assert_eq!(
        failures(&unknown, &text.replace("search lags", "gone")),
        [Some(
            r#"reconciliation.reason: expected "gone", got "search lags""#.into()
        )]
    );
}

#[test]
fn write_cases_that_check_nothing_or_cannot_be_run_are_malformed() {
    let no_response = |e: &str| {
        write(e).replace(
            r#""response": {"status": 200, "body": "{\"id\":\"ch_1\"}"}, "#,
            "",
        )
    };
    for (text, message) in [
        (
            write("{}"),
            "write 0 (\"a lost charge\"): expect: checks nothing",
        ),
        (
            no_response(r#"{"reconciliation": {"kind": "not-found"}}"#),
            "expect.reconciliation: needs \"response\"",
        ),
        (
            write(r#"{"reconcile": {"kind": "resend-same-key"}}"#),
            "response: nothing reads it",
        ),
        (
            no_response(r#"{"reconcile": {"kind": "query"}}"#),
            "expect.reconcile: a query checks nothing more than its kind",
        ),
        (
            no_response(r#"{"reconcile": {"kind": "retry"}}"#),
            "unknown variant `retry`",
        ),
        (
            no_response(r#"{"reconcile": {"kind": "unsupported", "url": "x"}}"#),
            "unknown field `url`",
        ),
        (
            no_response(r#"{"reconcile": {"kind": "resend-same-key", "reason": "x"}}"#),
            "unknown field `reason`",
        ),
        (
            write(r#"{"reconciliation": {"kind": "not-found", "operation_id": "x"}}"#),
            "unknown field `operation_id`",
        ),
    ] {
        let err = malformed(&text);
        assert!(err.contains(message), "{err}\nwanted: {message}");
    }
}

#[test]
fn a_file_with_neither_cases_nor_writes_is_malformed() {
    let err = malformed(r#"{"cases": [], "writes": []}"#);
    assert!(err.contains("at least one case"), "{err}");
}

/// A stretch of a stream is counted, not read: a case of one that expects a reading, an
/// offset on any other case, and a stretch without a response are malformed, each naming
/// its field; its usage is what `count-stream` answers (nothing here, the trait's default).
#[test]
fn a_stream_stretch_case_checks_counts_and_names_what_it_cannot_check() {
    let stretch = |fields: &str, expect: &str| {
        let case = ATTEMPT.replace("EXPECT", expect).replace(
            r#""name": "a declined card","#,
            &format!(r#""name": "a stretch", {fields}"#),
        );
        format!(r#"{{"cases": [{case}]}}"#)
    };
    let err = malformed(&stretch(
        r#""part": "stream-stretch","#,
        r#"{"verdict": "success"}"#,
    ));
    assert!(
        err.contains("expect.verdict") && err.contains("stream-stretch"),
        "{err}"
    );
    let err = malformed(&attempt(r#"{"usage": {}, "usage_exact": true}"#).replace(
        r#""name": "a declined card","#,
        r#""name": "a declined card", "at": 5,"#,
    ));
    assert!(err.contains("at: only a stream-stretch case"), "{err}");
    let err = malformed(&stretch(r#""part": "stream-strech","#, r#"{"usage": {}}"#));
    assert!(
        err.contains("\"stream-strech\"") && err.contains("stream-stretch"),
        "{err}"
    );
    let counted = stretch(
        r#""part": "stream-stretch", "at": 32768,"#,
        r#"{"usage": {}, "usage_exact": true}"#,
    );
    assert_eq!(failures(&Answers::new(), &counted), [None]);
    let counted = stretch(
        r#""part": "stream-stretch","#,
        r#"{"usage": {"output-tokens": 1}}"#,
    );
    assert_eq!(
        failures(&Answers::new(), &counted),
        [Some(
            r#"usage: no reported amount of "output-tokens" (reported: none)"#.into()
        )]
    );
}

#[test]
fn a_binary_body_is_given_in_base64_and_never_beside_text() {
    let case = |response: &str| {
        format!(
            r#"{{"cases":[{{"name":"binary","part":"stream-stretch",
            "request":{{"method":"POST","url":"https://x.test/model/m/converse-stream","class":"read"}},
            "response":{response},
            "expect":{{"usage":{{}},"usage_exact":true}}}}]}}"#
        )
    };
    let file = parse(
        Path::new("v.json"),
        &case(r#"{"status":200,"body_base64":"AAAAHw=="}"#),
    )
    .unwrap();
    match &file.cases[0].given {
        Given::Stretch { bytes, .. } => assert_eq!(bytes, &[0, 0, 0, 0x1f]),
        other => panic!("{other:?}"),
    }
    let both = parse(
        Path::new("v.json"),
        &case(r#"{"status":200,"body":"x","body_base64":"AAAAHw=="}"#),
    )
    .unwrap_err()
    .to_string();
    assert!(
        both.contains("response.body and response.body_base64: give one, not both"),
        "{both}"
    );
    let bad = parse(
        Path::new("v.json"),
        &case(r#"{"status":200,"body_base64":"not base64!"}"#),
    )
    .unwrap_err()
    .to_string();
    assert!(bad.contains("response.body_base64: not base64"), "{bad}");
}
