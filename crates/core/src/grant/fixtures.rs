//! Each grant's token request held to what the vendors' own SDKs send for
//! it: `tests/fixtures/destinations/grants/`, recorded by
//! `make destination-fixtures` (jsforce, @azure/msal-node, openid-client,
//! jsonwebtoken, pinned there). What an SDK adds of its own (telemetry,
//! correlation ids) is listed in each fixture's `sdk_only`, with why.

use std::{collections::BTreeMap, path::Path};

use base64::{Engine, engine::general_purpose::URL_SAFE_NO_PAD};
use serde_json::{Value, json};

use super::{
    GrantConfig, RawGrant,
    token::{self, FORM_CONTENT_TYPE, Inputs},
};
use crate::{Timestamp, secret::Secret};

const NOW: Timestamp = Timestamp::from_secs(1_700_000_000);

/// hookgate's grant for a fixture's input (secrets named, not held).
fn config(grant: &str, input: &Value) -> GrantConfig {
    let text = |k: &str| input[k].as_str().map(str::to_owned);
    let path = text("token_path").unwrap();
    let raw = RawGrant {
        kind: grant.to_owned(),
        token_url: format!("https://login.example{path}"),
        client_id: text("client_id").unwrap(),
        client_secret: text("client_secret").map(|_| "env:CLIENT_SECRET".into()),
        refresh_token: text("refresh_token").map(|_| "secretsmanager:hookgate/t/grants/rt".into()),
        rotates: None,
        reuse_interval_secs: None,
        private_key: text("private_key").map(|_| "env:KEY".into()),
        subject: text("subject"),
        audience: text("audience"),
        scope: text("scope"),
        base_url_from: None,
        token_lifetime_secs: None,
    };
    GrantConfig::parse(raw).unwrap()
}

/// The fixture's `kind` entries (`form`, `query`, `headers`) the SDK sent
/// of its own accord.
fn sdk_only<'a>(fixture: &'a Value, kind: &str) -> Vec<&'a str> {
    fixture["sdk_only"]
        .as_object()
        .map(|m| {
            m.keys()
                .filter_map(|k| k.strip_prefix(kind)?.strip_prefix('.'))
                .collect()
        })
        .unwrap_or_default()
}

fn decoded(part: &str) -> Value {
    serde_json::from_slice(&URL_SAFE_NO_PAD.decode(part).unwrap()).unwrap()
}

/// One fixture held to hookgate's request for its input; its case.
fn compare(fixture: &Value) -> String {
    let case = fixture["case"].as_str().unwrap();
    let input = &fixture["input"];
    let sent = &fixture["request"];
    let config = config(fixture["grant"].as_str().unwrap(), input);
    let secret = |k: &str| input[k].as_str().map(Secret::new);
    let inputs = Inputs {
        client_secret: secret("client_secret"),
        refresh_token: secret("refresh_token"),
        private_key: None,
    };
    // The JWT bearer assertion: its header and claims as signed.
    let assertion = sent.get("assertion").map(|wanted| {
        let input = token::signing_input(&config, NOW);
        let (header, claims) = input.split_once('.').unwrap();
        assert_eq!(decoded(header), wanted["header"], "{case}: header");
        let mut claims = decoded(claims);
        let exp = claims["exp"].as_i64().unwrap() - NOW.as_secs();
        claims["exp"] = json!(format!("+{exp}"));
        assert_eq!(claims, wanted["claims"], "{case}: claims");
        token::assertion(&input, b"signature")
    });
    let form = token::form(&config, &inputs, assertion);
    let ours: BTreeMap<&str, &str> = form.0.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut theirs: BTreeMap<String, String> =
        serde_json::from_value(sent["form"].clone()).unwrap();
    for field in sdk_only(fixture, "form") {
        theirs.remove(field);
    }
    if let Some(a) = theirs.get_mut("assertion") {
        assert_eq!(a, "<assertion>", "{case}");
        *a = ours["assertion"].to_owned();
    }
    let theirs: BTreeMap<&str, &str> = theirs
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    assert_eq!(ours, theirs, "{case}: form");
    assert_eq!(sent["method"], "POST", "{case}");
    assert_eq!(
        config.token_url.strip_prefix("https://login.example"),
        sent["path"].as_str(),
        "{case}: path"
    );
    // No query of its own: what an SDK adds is its own.
    let query = sent["query"].as_object().unwrap();
    let extra: Vec<_> = query
        .keys()
        .filter(|k| !sdk_only(fixture, "query").contains(&k.as_str()))
        .collect();
    assert!(extra.is_empty(), "{case}: query {extra:?}");
    // The client authenticates in the form: no Authorization header.
    assert!(sent["headers"].get("authorization").is_none(), "{case}");
    let media = sent["headers"]["content-type"].as_str().unwrap();
    let media = media.split(';').next().unwrap();
    assert_eq!(media, FORM_CONTENT_TYPE, "{case}: content-type");
    case.to_owned()
}

#[test]
fn every_grants_token_request_is_what_its_sdk_sends() {
    let dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/destinations/grants");
    let mut cases = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let fixture: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
            cases.push(compare(&fixture));
        }
    }
    cases.sort();
    assert_eq!(
        cases,
        [
            "dynamics-client-credentials",
            "generic-client-credentials",
            "salesforce-jwt-bearer",
            "salesforce-refresh-token"
        ]
    );
}
