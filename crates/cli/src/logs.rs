//! `hookgate logs`: the functions' lines from CloudWatch Logs, merged in time
//! order across their log groups: one event's lines from the webhook to the
//! CRM (`--correlation`, the event key every line of it carries), or the
//! latest; `--tail` follows, as `sam logs --tail` does.
//!
//! FilterLogEvents, not StartLiveTail: the SDK forces a host prefix on live
//! tail, so it cannot reach a local endpoint. The service's filter takes the
//! id as a quoted term, and each line is then checked here as JSON, because a
//! JSON filter pattern is not honoured by the local emulator (it matches
//! every line), and a test must be able to fail.

use std::collections::HashMap;

use serde_json::Value;

/// Pages read per log group and poll, at most.
const MAX_PAGES: usize = 100;

/// How far back each poll of `--tail` reads again: a line written late (a
/// slower function, a delayed ingestion) with an earlier time is still found
/// (the event id keeps it from printing twice).
const OVERLAP_MS: i64 = 30_000;

/// The keys every line carries (the formatter's, then `target`); the rest
/// are the line's own fields.
fn is_common(key: &str) -> bool {
    key == "target" || hookgate_adapters::telemetry::COMMON_KEYS.contains(&key)
}

/// `hookgate logs`' flags.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Only this function's lines (default: every function of the stack).
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(crate::stack::function_names()), value_name = "FUNCTION")]
    function: Option<String>,
    /// Only one event's lines: its correlation id, which is its event key
    /// (what `send` and the ingress's answer print).
    #[arg(long, visible_alias = "event-key", value_name = "ID")]
    correlation: Option<String>,
    /// How far back to start (s, m, h, d).
    #[arg(long, default_value = "1h", value_parser = crate::ops::parse_age, value_name = "AGE")]
    since: std::time::Duration,
    /// At most this many lines (the latest), unless --tail.
    #[arg(long, default_value_t = 200, value_name = "N")]
    limit: usize,
    /// Keep following new lines (every 2 s) until Ctrl-C.
    #[arg(long)]
    tail: bool,
}

impl Args {
    pub fn function(&self) -> Option<&str> {
        self.function.as_deref()
    }

    pub fn tail(&self) -> bool {
        self.tail
    }
}

/// One log line, from one function's log group.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub function: String,
    pub timestamp_ms: i64,
    pub event_id: String,
    pub message: String,
}

/// Whether `message` is a JSON line of the event `id`: its correlation id
/// or its `event_key` is exactly `id`.
pub fn is_of(message: &str, id: &str) -> bool {
    let Ok(line) = serde_json::from_str::<Value>(message) else {
        return false;
    };
    ["correlation_id", "event_key"]
        .iter()
        .any(|key| line[key].as_str() == Some(id))
}

/// The service-side filter for `id`: a quoted term (a `"` inside cannot be
/// quoted, so such an id is refused).
pub fn filter_pattern(id: &str) -> anyhow::Result<String> {
    anyhow::ensure!(
        !id.contains('"'),
        "--correlation {id:?}: an id with a double quote cannot be searched for"
    );
    Ok(format!("\"{id}\""))
}

/// `text` safe for a terminal: every control character (C0, DEL, C1: ESC
/// sequences, carriage returns, newlines, bells) and every bidirectional
/// override is written as its escape (`\u{1b}`, `\r`, `\n`), never raw. A
/// line's strings are what senders and CRMs wrote (an error excerpt), and
/// printed raw they could rewrite the operator's screen or hide text.
pub fn escape(text: &str) -> String {
    let bidi = |c: char| matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() || bidi(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// A line as text: time, function, level, message, then its own fields,
/// every string of it [`escape`]d.
pub fn render(line: &Line) -> String {
    let time = hookgate_core::Timestamp::from_millis(line.timestamp_ms).utc();
    let Ok(Value::Object(fields)) = serde_json::from_str::<Value>(&line.message) else {
        return format!(
            "{time} {:<10} {}",
            escape(&line.function),
            escape(line.message.trim_end())
        );
    };
    let text = |key: &str| escape(fields.get(key).and_then(Value::as_str).unwrap_or(""));
    let mut out = format!(
        "{time} {:<10} {:<5} {}",
        escape(&line.function),
        text("level"),
        text("message")
    );
    if !text("correlation_id").is_empty() {
        out.push_str(&format!(" correlation_id={}", text("correlation_id")));
    }
    for (key, value) in fields.iter().filter(|(k, _)| !is_common(k)) {
        let key = escape(key);
        match value {
            Value::String(s) => out.push_str(&format!(" {key}={}", escape(s))),
            // JSON text escapes C0 in its strings, not DEL, C1 or bidi.
            other => out.push_str(&format!(" {key}={}", escape(&other.to_string()))),
        }
    }
    out
}

/// Reads the log groups and hands every new matching line to `print`, in
/// time order; with `--tail`, until `stop` resolves.
pub async fn run(
    logs: &aws_sdk_cloudwatchlogs::Client,
    groups: &[(&str, &str)],
    args: &Args,
    now_ms: i64,
    mut print: impl FnMut(&Line),
    stop: impl std::future::Future<Output = ()>,
) -> anyhow::Result<usize> {
    let pattern = args
        .correlation
        .as_deref()
        .map(filter_pattern)
        .transpose()?;
    let since_ms = i64::try_from(args.since.as_millis()).unwrap_or(i64::MAX);
    let first = now_ms.saturating_sub(since_ms);
    // Each group's newest line seen: a slow group is not skipped past.
    let mut newest: Vec<i64> = vec![first; groups.len()];
    let mut seen: HashMap<String, i64> = HashMap::new();
    let mut printed = 0;
    tokio::pin!(stop);
    loop {
        let mut lines = Vec::new();
        for (i, (function, group)) in groups.iter().enumerate() {
            let start = first.max(newest[i].saturating_sub(OVERLAP_MS));
            let read = read(logs, function, group, start, pattern.as_deref()).await?;
            newest[i] = read
                .iter()
                .map(|l| l.timestamp_ms)
                .fold(newest[i], i64::max);
            lines.extend(read);
        }
        lines.retain(|l| {
            args.correlation
                .as_deref()
                .is_none_or(|id| is_of(&l.message, id))
                && !seen.contains_key(&l.event_id)
        });
        lines.sort_by(|a, b| (a.timestamp_ms, &a.event_id).cmp(&(b.timestamp_ms, &b.event_id)));
        if !args.tail && lines.len() > args.limit {
            lines.drain(..lines.len() - args.limit);
        }
        for line in &lines {
            seen.insert(line.event_id.clone(), line.timestamp_ms);
            print(line);
            printed += 1;
        }
        // What no later poll reads again need not be remembered.
        let oldest = newest.iter().min().copied().unwrap_or(first) - OVERLAP_MS;
        seen.retain(|_, at| *at >= oldest);
        if !args.tail {
            return Ok(printed);
        }
        tokio::select! {
            () = &mut stop => return Ok(printed),
            () = tokio::time::sleep(std::time::Duration::from_secs(2)) => {}
        }
    }
}

/// Every line of `group` from `start_ms` on (all pages), filtered by the
/// service with `pattern`.
async fn read(
    logs: &aws_sdk_cloudwatchlogs::Client,
    function: &str,
    group: &str,
    start_ms: i64,
    pattern: Option<&str>,
) -> anyhow::Result<Vec<Line>> {
    let mut lines = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = logs
            .filter_log_events()
            .log_group_name(group)
            .start_time(start_ms)
            .set_filter_pattern(pattern.map(str::to_owned))
            .set_next_token(token.clone())
            .send()
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "cannot read log group {group} (logs:FilterLogEvents): {}",
                    aws_sdk_cloudwatchlogs::error::DisplayErrorContext(e)
                )
            })?;
        for event in page.events() {
            lines.push(Line {
                function: function.to_owned(),
                timestamp_ms: event.timestamp().unwrap_or_default(),
                event_id: event.event_id().unwrap_or_default().to_owned(),
                message: event.message().unwrap_or_default().to_owned(),
            });
        }
        // An empty page may still have a token: the service reads its
        // partitions in turn. Follow the token to its end, within a bound.
        match page.next_token() {
            Some(next) if token.as_deref() != Some(next) && pages < MAX_PAGES => {
                token = Some(next.to_owned());
                pages += 1;
            }
            Some(_) if pages >= MAX_PAGES => {
                // Said, not hidden: the rest of this window is not read.
                eprintln!(
                    "warning: {group}: stopped after {MAX_PAGES} pages; narrow --since or --function"
                );
                return Ok(lines);
            }
            _ => return Ok(lines),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_is_of_an_event_by_its_correlation_id_or_event_key_only() {
        let id = "call_analyzed:c-1";
        assert!(is_of(
            r#"{"message":"stored","correlation_id":"call_analyzed:c-1"}"#,
            id
        ));
        assert!(is_of(
            r#"{"message":"refused","event_key":"call_analyzed:c-1"}"#,
            id
        ));
        // The service's term filter also matches these; the JSON check does not.
        assert!(!is_of(
            r#"{"message":"x","correlation_id":"call_analyzed:c-10"}"#,
            id
        ));
        assert!(!is_of(r#"{"message":"about call_analyzed:c-1"}"#, id));
        assert!(!is_of("START RequestId: call_analyzed:c-1", id));
    }

    #[test]
    fn the_id_is_searched_as_a_quoted_term() {
        assert_eq!(filter_pattern("a:b").unwrap(), "\"a:b\"");
        assert!(filter_pattern("a\"b").is_err());
    }

    #[test]
    fn control_characters_of_a_line_are_printed_escaped_never_raw() {
        // Issue 40: a CRM's error excerpt carried ESC sequences (and a
        // newline, a carriage return, a bidi override) that rewrote the
        // operator's terminal.
        let line = Line {
            function: "action".into(),
            timestamp_ms: 1_796_000_000_000,
            event_id: "1".into(),
            message: r#"{"level":"WARN\u001b[2J","message":"crm said\r\u001b]0;pwned\u0007","correlation_id":"k\n","error":"HTTP 422: \u001b[31mred\u202e","k\u001bey":1,"nested":["\u009b2J"]}"#.into(),
        };
        let text = render(&line);
        assert_eq!(
            text,
            "2026-11-30T00:53:20Z action     WARN\\u{1b}[2J crm said\\r\\u{1b}]0;pwned\\u{7} \
             correlation_id=k\\n error=HTTP 422: \\u{1b}[31mred\\u{202e} k\\u{1b}ey=1 \
             nested=[\"\\u{9b}2J\"]"
        );
        assert!(!text.chars().any(|c| c.is_control()), "{text:?}");
        let raw = Line {
            message: "START \u{1b}[2J\u{9b}31m done\n".into(),
            ..line
        };
        assert_eq!(
            render(&raw),
            "2026-11-30T00:53:20Z action     START \\u{1b}[2J\\u{9b}31m done"
        );
    }

    #[test]
    fn a_line_reads_time_function_level_message_then_its_own_fields() {
        let line = Line {
            function: "ingress".into(),
            timestamp_ms: 1_796_000_000_000,
            event_id: "1".into(),
            message: r#"{"timestamp":"t","level":"INFO","message":"delivery","service":"s","correlation_id":"k","verdict":"new","attempt":1}"#.into(),
        };
        assert_eq!(
            render(&line),
            "2026-11-30T00:53:20Z ingress    INFO  delivery correlation_id=k attempt=1 verdict=new"
        );
    }
}
