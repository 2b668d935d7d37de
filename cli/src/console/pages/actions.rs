//! Open actions and their reconciliation, event lookup, and the doctor's
//! checklist.

use std::fmt::Write;

use serde_json::Value;

use super::{select, text};
use crate::console::html::{esc, json_block, notice, table, token_field};

pub fn actions_list(status: &str, actions: &[Value], token: &str) -> String {
    let mut out = format!(
        "<form class=\"filters\" method=\"get\" action=\"/actions\"><label>status{}</label>\
         <button type=\"submit\">Show</button></form>",
        select(
            "status",
            status,
            &["UNCERTAIN", "FAILED", "PENDING", "IN_PROGRESS"]
        )
    );
    let rows: Vec<Vec<String>> = actions
        .iter()
        .map(|a| {
            let key = text(&a["key"]);
            let mut cells = vec![
                format!("<code>{}</code>", esc(&key)),
                esc(&text(&a["status"])),
                esc(&text(&a["attempts"])),
                esc(&text(&a["last_error_kind"])),
                esc(&text(&a["created_at"])),
            ];
            if text(&a["status"]) == "UNCERTAIN" {
                cells.push(format!(
                    "<form class=\"inline\" method=\"post\" action=\"/actions/reconcile\">{t}\
                     <input type=\"hidden\" name=\"key\" value=\"{k}\"><input type=\"hidden\" name=\"outcome\" value=\"found\">\
                     <input name=\"ref\" required placeholder=\"the CRM's id\" size=\"14\">\
                     <button type=\"submit\">Found: complete</button></form>\
                     <form class=\"inline\" method=\"post\" action=\"/actions/reconcile\">{t}\
                     <input type=\"hidden\" name=\"key\" value=\"{k}\"><input type=\"hidden\" name=\"outcome\" value=\"not_found\">\
                     <button type=\"submit\">Not found: perform again</button></form>",
                    t = token_field(token),
                    k = esc(&key),
                ));
            } else {
                cells.push(String::new());
            }
            cells
        })
        .collect();
    out.push_str(&table(
        "actions",
        &[
            "action key",
            "status",
            "attempts",
            "last error",
            "created",
            "reconcile",
        ],
        &rows,
    ));
    out
}

pub fn lookup(
    workspace: &str,
    provider: &str,
    key: &str,
    found: Option<Result<&Value, &str>>,
) -> String {
    let mut out = format!(
        "<form class=\"filters\" method=\"get\" action=\"/inbox\">\
         <label>workspace<input name=\"workspace\" required value=\"{}\"></label>\
         <label>provider<input name=\"provider\" required value=\"{}\"></label>\
         <label>event key<input name=\"key\" required value=\"{}\"></label>\
         <button type=\"submit\">Look up</button></form>",
        esc(workspace),
        esc(provider),
        esc(key)
    );
    match found {
        None => {}
        Some(Ok(record)) => out.push_str(&json_block("inbox-record", record)),
        Some(Err(why)) => out.push_str(&notice("lookup-error", false, why)),
    }
    out
}

pub fn doctor(checks: &Value) -> String {
    let mut out = String::from("<ul id=\"checks\">");
    for c in checks.as_array().into_iter().flatten() {
        let ok = c["ok"] == true;
        let _ = write!(
            out,
            "<li class=\"check {}\"><strong>{}</strong>: {}</li>",
            if ok { "ok" } else { "fail" },
            esc(&text(&c["check"])),
            esc(&text(&c["message"]))
        );
    }
    out + "</ul>"
}
