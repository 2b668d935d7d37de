//! The console's HTML: escaping, the page frame, tables and forms. Every
//! string that came from a table is escaped here: payloads, event types and
//! reasons are written by webhook senders and operators, and a payload that
//! carried markup must show as text, never run as the operator.

use std::fmt::Write;

/// `text` safe in an element or a double-quoted attribute.
pub fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `text` as one query-string value.
pub fn url(text: &str) -> String {
    form_urlencoded::byte_serialize(text.as_bytes()).collect()
}

/// The pages in the navigation bar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Nav {
    Overview,
    Triage,
    Actions,
    Lookup,
    Doctor,
}

const NAV: &[(Nav, &str, &str)] = &[
    (Nav::Overview, "/", "Overview"),
    (Nav::Triage, "/triage", "Triage"),
    (Nav::Actions, "/actions", "Actions"),
    (Nav::Lookup, "/inbox", "Event lookup"),
    (Nav::Doctor, "/doctor", "Doctor"),
];

/// A whole page: `body` is HTML, `title` text; `refresh` reloads it every
/// so many seconds (a job in progress).
pub fn page(title: &str, active: Nav, identity: &str, refresh: Option<u32>, body: &str) -> String {
    let refresh = refresh
        .map(|s| format!("<meta http-equiv=\"refresh\" content=\"{s}\">"))
        .unwrap_or_default();
    let mut nav = String::new();
    for (item, href, label) in NAV {
        let class = if *item == active {
            " class=\"active\""
        } else {
            ""
        };
        let _ = write!(nav, "<a href=\"{href}\"{class}>{label}</a>");
    }
    format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         {refresh}<title>{title} · hookgate</title><link rel=\"stylesheet\" href=\"/console.css\"></head>\
         <body><header><strong>hookgate</strong><nav>{nav}</nav>\
         <span class=\"who\" title=\"decisions are recorded as this identity\">{identity}</span></header>\
         <main><h1>{title}</h1>\n{body}\n</main></body></html>\n",
        title = esc(title),
        identity = esc(identity),
    )
}

/// A table; `rows` are HTML already (escape their text with [`esc`]).
pub fn table(id: &str, headers: &[&str], rows: &[Vec<String>]) -> String {
    if rows.is_empty() {
        return format!("<p class=\"empty\" id=\"{id}\">Nothing here.</p>");
    }
    let mut out = format!("<table id=\"{id}\">");
    if headers.iter().any(|h| !h.is_empty()) {
        out.push_str("<thead><tr>");
        for h in headers {
            let _ = write!(out, "<th>{}</th>", esc(h));
        }
        out.push_str("</tr></thead>");
    }
    out.push_str("<tbody>");
    for row in rows {
        out.push_str("<tr>");
        for cell in row {
            let _ = write!(out, "<td>{cell}</td>");
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// The hidden field every state-changing form carries.
pub fn token_field(token: &str) -> String {
    format!(
        "<input type=\"hidden\" name=\"csrf\" value=\"{}\">",
        esc(token)
    )
}

/// A notice: `ok` green, otherwise red.
pub fn notice(id: &str, ok: bool, text: &str) -> String {
    let class = if ok { "ok" } else { "bad" };
    format!("<p class=\"notice {class}\" id=\"{id}\">{}</p>", esc(text))
}

/// JSON, pretty-printed, as escaped preformatted text.
pub fn json_block(id: &str, value: &serde_json::Value) -> String {
    format!(
        "<pre id=\"{id}\">{}</pre>",
        esc(&serde_json::to_string_pretty(value).unwrap_or_default())
    )
}

/// The console's style sheet (served as `/console.css`: the pages carry no
/// inline style, so the content security policy can forbid it).
pub const CSS: &str = r#"
body { font: 14px/1.45 system-ui, sans-serif; margin: 0; color: #1d2330; background: #f6f7f9; }
header { display: flex; gap: 1.5em; align-items: center; padding: .7em 1.2em; background: #1d2330; color: #fff; }
header nav a { color: #c9d1e3; margin-right: 1em; text-decoration: none; }
header nav a.active { color: #fff; border-bottom: 2px solid #7aa2ff; }
header .who { margin-left: auto; font-size: 12px; color: #c9d1e3; }
main { padding: 1em 1.5em; max-width: 1200px; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 1.6em; }
table { border-collapse: collapse; background: #fff; margin: .5em 0; }
th, td { text-align: left; padding: .35em .8em; border-bottom: 1px solid #e3e6ec; vertical-align: top; }
th { background: #eef1f6; font-weight: 600; }
pre { background: #fff; border: 1px solid #e3e6ec; padding: .8em; overflow-x: auto; max-height: 24em; }
.cards { display: flex; gap: 1em; flex-wrap: wrap; }
.card { background: #fff; border: 1px solid #e3e6ec; border-radius: 6px; padding: .8em 1.2em; min-width: 11em; }
.card .figure { font-size: 24px; font-weight: 600; }
.card .label { color: #5b6475; font-size: 12px; }
.notice { padding: .6em 1em; border-radius: 4px; }
.notice.ok { background: #e5f6ea; border: 1px solid #7cc592; }
.notice.bad { background: #fdeaea; border: 1px solid #e38b8b; }
.empty { color: #5b6475; }
form.inline { display: inline-flex; gap: .5em; align-items: center; margin: .3em 0; }
form.filters { display: flex; gap: .8em; align-items: end; flex-wrap: wrap; margin-bottom: 1em; }
label { display: flex; flex-direction: column; font-size: 12px; color: #5b6475; }
input, select, button { font: inherit; padding: .3em .5em; }
button { cursor: pointer; border: 1px solid #8892a6; border-radius: 4px; background: #fff; }
button.primary { background: #2456d6; color: #fff; border-color: #2456d6; }
button.danger { background: #b42318; color: #fff; border-color: #b42318; }
.check.ok::before { content: "✔ "; color: #1f8a3b; } .check.fail::before { content: "✘ "; color: #b42318; }
.chart text { font-size: 11px; fill: #5b6475; }
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_from_a_payload_shows_as_text() {
        assert_eq!(
            esc(r#"<script>alert("x")</script> & 'y'"#),
            "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &#39;y&#39;"
        );
        let page = page("<b>", Nav::Triage, "arn:<me>", Some(1), "<p>body</p>");
        assert!(page.contains("<meta http-equiv=\"refresh\" content=\"1\">"));
        assert!(
            page.contains("<title>&lt;b&gt; · hookgate</title>"),
            "{page}"
        );
        assert!(page.contains(">arn:&lt;me&gt;</span>"), "{page}");
        assert!(page.contains("<a href=\"/triage\" class=\"active\">Triage</a>"));
        assert!(
            json_block("j", &serde_json::json!({"k": "</pre><script>"}))
                .contains("&lt;/pre&gt;&lt;script&gt;")
        );
        assert_eq!(url("a b&c=d#e"), "a+b%26c%3Dd%23e");
    }

    #[test]
    fn an_empty_table_says_so_and_rows_keep_their_cells() {
        assert_eq!(
            table("t", &["a"], &[]),
            "<p class=\"empty\" id=\"t\">Nothing here.</p>"
        );
        assert_eq!(
            table("t", &["a", "b"], &[vec!["1".into(), "2".into()]]),
            "<table id=\"t\"><thead><tr><th>a</th><th>b</th></tr></thead>\
             <tbody><tr><td>1</td><td>2</td></tr></tbody></table>"
        );
    }
}
