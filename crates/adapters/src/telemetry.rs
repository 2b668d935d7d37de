//! Logging as every function does it, and as the tests read it: one flat
//! JSON object per line with the keys of Powertools for AWS Lambda, which
//! Lambda's JSON log format passes on as written (docs/operations.md,
//! "Logs"). The same [`Lines`] layer writes production's stdout and the test
//! harness's buffer, so a test asserts the shape Lambda writes.
//!
//! A line is `timestamp`, `level`, `message`, `service`, `function_name`,
//! `function_request_id`, `xray_trace_id` (when the invocation has one),
//! `cold_start`, `correlation_id` (when the work has one), then `target` and
//! the fields of the line's spans, outermost first, then its own. The
//! invocation's keys come from the span the Lambda runtime opens around each
//! invocation (`requestId`, `xrayTraceId`); `correlation_id` from any span
//! or the line itself.

use std::{
    fmt::Debug,
    io::Write,
    sync::{Mutex, OnceLock},
};

use serde_json::Value;
use tracing::{
    Event, Subscriber,
    field::{Field, Visit},
    span::{Attributes, Id, Record},
};
use tracing_subscriber::{
    EnvFilter, Layer,
    filter::{FilterExt, filter_fn},
    fmt::MakeWriter,
    layer::{Context, Filter},
    prelude::*,
    registry::LookupSpan,
};

/// The keys every line starts with, in this order (Powertools for AWS
/// Lambda's); `xray_trace_id` and `correlation_id` only where there is one.
/// `target`, then the spans' and the line's own fields follow.
pub const COMMON_KEYS: [&str; 9] = [
    "timestamp",
    "level",
    "message",
    "service",
    "function_name",
    "function_request_id",
    "xray_trace_id",
    "cold_start",
    "correlation_id",
];

/// Installs the process-wide subscriber (the level from Lambda's
/// `AWS_LAMBDA_LOG_LEVEL`, else `RUST_LOG`, else `info`), names the
/// metrics' `service` (`HOOKGATE_SERVICE`, the stack's name) and counts the
/// cold start (`ColdStart`); call once, first thing in `main`.
pub fn init() {
    init_to(std::io::stdout);
}

/// [`init`], writing the lines to `writer` (the local runner also ships them
/// to the emulator's log groups).
pub fn init_to<W>(writer: W)
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    if let Ok(service) = std::env::var("HOOKGATE_SERVICE") {
        hookgate_core::metrics::set_service(&service);
    }
    // The template's MetricsPerWorkspace: off drops the workspace dimension.
    if let Ok(on) = std::env::var("HOOKGATE_METRICS_PER_WORKSPACE") {
        hookgate_core::metrics::set_per_workspace(on != "false");
    }
    let function_name = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_default();
    let directive = level_directive(
        std::env::var("AWS_LAMBDA_LOG_LEVEL").ok().as_deref(),
        std::env::var("RUST_LOG").ok().as_deref(),
    );
    tracing_subscriber::registry()
        .with(
            Lines::new(writer, hookgate_core::metrics::service(), &function_name)
                .with_filter(level_filter(&directive)),
        )
        .init();
    hookgate_core::metrics::emit(
        &[("function_name", non_empty(&function_name))],
        &[("ColdStart", 1.0)],
        hookgate_core::Timestamp::now(),
    );
}

fn non_empty(name: &str) -> &str {
    if name.is_empty() {
        hookgate_core::metrics::UNKNOWN
    } else {
        name
    }
}

/// The filter directive: Lambda's application log level when it sets one
/// (`TRACE` … `FATAL`, from the function's `LoggingConfig`), else
/// `RUST_LOG`, else `info`.
pub fn level_directive(lambda: Option<&str>, rust_log: Option<&str>) -> String {
    let lambda = lambda.map(|l| match l.to_ascii_uppercase().as_str() {
        "TRACE" => "trace",
        "DEBUG" => "debug",
        "WARN" => "warn",
        "ERROR" | "FATAL" => "error",
        _ => "info",
    });
    match (lambda, rust_log.filter(|r| !r.trim().is_empty())) {
        (Some(level), _) => level.to_owned(),
        (None, Some(rust_log)) => rust_log.to_owned(),
        (None, None) => "info".to_owned(),
    }
}

/// What a directive lets through: events at or above its level, and spans
/// at every level, since a line takes keys from the spans it is in (the
/// request id from the runtime's `info` span, a correlation id) whatever
/// its own level.
pub fn level_filter<S>(directive: &str) -> impl Filter<S> + Send + Sync + 'static
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let events = EnvFilter::try_new(directive).unwrap_or_else(|_| EnvFilter::new("info"));
    events.or(filter_fn(|meta| meta.is_span()))
}

/// The layer that writes each event as one flat JSON line to `W`.
#[derive(Debug)]
pub struct Lines<W> {
    writer: W,
    service: String,
    function_name: String,
    /// The first invocation's request id: its lines are the cold start's.
    first_request: OnceLock<String>,
    /// One line at a time, whole.
    write: Mutex<()>,
}

impl<W> Lines<W> {
    pub fn new(writer: W, service: &str, function_name: &str) -> Self {
        Self {
            writer,
            service: service.to_owned(),
            function_name: function_name.to_owned(),
            first_request: OnceLock::new(),
            write: Mutex::new(()),
        }
    }
}

/// A span's or an event's fields, in the order they were recorded.
#[derive(Debug, Default, Clone)]
struct Fields(Vec<(String, Value)>);

impl Fields {
    fn set(&mut self, name: &str, value: Value) {
        match self.0.iter_mut().find(|(k, _)| k == name) {
            Some((_, v)) => *v = value,
            None => self.0.push((name.to_owned(), value)),
        }
    }
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.set(field.name(), Value::from(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.set(field.name(), Value::from(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.set(field.name(), Value::from(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.set(field.name(), Value::from(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.set(field.name(), Value::from(value));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.set(field.name(), Value::from(format!("{value:?}")));
    }
}

/// The keys every line carries, read from the spans a line is in.
#[derive(Default)]
struct Common {
    request_id: Option<Value>,
    xray_trace_id: Option<Value>,
    correlation_id: Option<Value>,
}

impl Common {
    /// Takes a field the line's common keys come from; `false` for any other.
    fn take(&mut self, name: &str, value: &Value) -> bool {
        let slot = match name {
            "requestId" => &mut self.request_id,
            "xrayTraceId" => &mut self.xray_trace_id,
            "correlation_id" => &mut self.correlation_id,
            _ => return false,
        };
        *slot = Some(value.clone());
        true
    }
}

impl<S, W> Layer<S> for Lines<W>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + 'static,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        // The first invocation is known from its span, whether or not any
        // of its lines are written (at a level that drops them all).
        if let Some((_, Value::String(request))) = fields.0.iter().find(|(k, _)| k == "requestId") {
            let _ = self.first_request.set(request.clone());
        }
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<Fields>()
        {
            values.record(fields);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut common = Common::default();
        let mut own = Fields::default();
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                if let Some(fields) = span.extensions().get::<Fields>() {
                    for (name, value) in &fields.0 {
                        if !common.take(name, value) {
                            own.set(name, value.clone());
                        }
                    }
                }
            }
        }
        let mut fields = Fields::default();
        event.record(&mut fields);
        let mut message = Value::from("");
        for (name, value) in fields.0 {
            if name == "message" {
                message = value;
            } else if !common.take(&name, &value) {
                own.set(&name, value);
            }
        }
        let cold_start = match &common.request_id {
            Some(Value::String(id)) => self.first_request.get_or_init(|| id.clone()) == id,
            // Before the first invocation: the cold start's init.
            _ => self.first_request.get().is_none(),
        };
        let meta = event.metadata();
        let mut line: Vec<(&str, Value)> = vec![
            (
                "timestamp",
                Value::from(hookgate_core::Timestamp::now().utc_millis()),
            ),
            ("level", Value::from(meta.level().as_str())),
            ("message", message),
            ("service", Value::from(self.service.as_str())),
            ("function_name", Value::from(self.function_name.as_str())),
            (
                "function_request_id",
                common.request_id.unwrap_or(Value::Null),
            ),
        ];
        if let Some(trace) = common.xray_trace_id {
            line.push(("xray_trace_id", trace));
        }
        line.push(("cold_start", Value::from(cold_start)));
        if let Some(id) = common.correlation_id {
            line.push(("correlation_id", id));
        }
        line.push(("target", Value::from(meta.target())));
        // A field named like a common key is written under `field.{name}`,
        // never as a second copy of the key; the `log` crate's bridge
        // fields (`log.target`, `log.file`, …) are left out.
        let renamed: Vec<(String, Value)> = own
            .0
            .into_iter()
            .filter(|(k, _)| !k.starts_with("log."))
            .map(
                |(k, v)| match line.iter().any(|(common, _)| *common == k) || k == "message" {
                    true => (format!("field.{k}"), v),
                    false => (k, v),
                },
            )
            .collect();
        let mut text = String::from("{");
        let rest = renamed.iter().map(|(k, v)| (k.as_str(), v));
        for (n, (key, value)) in line.iter().map(|(k, v)| (*k, v)).chain(rest).enumerate() {
            if n > 0 {
                text.push(',');
            }
            text.push_str(&Value::from(key).to_string());
            text.push(':');
            text.push_str(&value.to_string());
        }
        text.push_str("}\n");
        let _whole = self.write.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self.writer.make_writer().write_all(text.as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    /// A buffer the layer writes to.
    #[derive(Clone, Default)]
    struct Buffer(Arc<std::sync::Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Buffer {
        type Writer = Buffer;

        fn make_writer(&'a self) -> Self::Writer {
            self.clone()
        }
    }

    /// The lines written under Lambda's level `lambda`.
    fn written_at(lambda: &str) -> Vec<serde_json::Value> {
        let buffer = Buffer::default();
        let subscriber = tracing_subscriber::registry().with(
            Lines::new(buffer.clone(), "svc", "fn-1")
                .with_filter(level_filter(&level_directive(Some(lambda), None))),
        );
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("letter", correlation_id = tracing::field::Empty);
            let _in = span.enter();
            span.record("correlation_id", "evt_1");
            tracing::debug!(step = 1, "a debug line");
            tracing::info!(step = 2, "an info line");
            tracing::warn!(step = 3, "a warn line");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    #[test]
    fn the_code_writes_nothing_below_lambdas_level() {
        let steps = |lines: Vec<serde_json::Value>| -> Vec<u64> {
            lines.iter().map(|l| l["step"].as_u64().unwrap()).collect()
        };
        assert_eq!(steps(written_at("DEBUG")), [1, 2, 3]);
        assert_eq!(steps(written_at("INFO")), [2, 3]);
        assert_eq!(steps(written_at("WARN")), [3]);
        let line = &written_at("WARN")[0];
        assert_eq!(
            (
                line["level"].as_str(),
                line["message"].as_str(),
                line["service"].as_str(),
                line["function_name"].as_str(),
                line["correlation_id"].as_str(),
                line["cold_start"].as_bool(),
            ),
            (
                Some("WARN"),
                Some("a warn line"),
                Some("svc"),
                Some("fn-1"),
                Some("evt_1"),
                Some(true)
            )
        );
    }

    /// The keys docs/operations.md ("Logs") says every line starts with,
    /// in its table's order.
    fn documented_keys() -> Vec<String> {
        let doc = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../docs/operations.md"
        ))
        .expect("docs/operations.md");
        let logs = &doc[doc.find("\n## Logs\n").expect("a Logs section")..];
        let table = &logs[logs.find("| key | value |").expect("the keys' table")..];
        table
            .lines()
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| l.split('`').nth(1).expect("a `key` cell").to_owned())
            .collect()
    }

    #[test]
    fn a_line_starts_with_the_documented_keys_in_their_order() {
        let buffer = Buffer::default();
        let subscriber = tracing_subscriber::registry()
            .with(Lines::new(buffer.clone(), "svc", "fn-1").with_filter(level_filter("info")));
        tracing::subscriber::with_default(subscriber, || {
            // As the Lambda runtime opens it around each invocation.
            let invoke = tracing::info_span!(
                "Lambda runtime invoke",
                requestId = "req-1",
                xrayTraceId = "Root=1-0-1"
            );
            let _invoke = invoke.enter();
            let message =
                tracing::info_span!("message", message_id = "m-1", correlation_id = "evt_1");
            let _message = message.enter();
            tracing::info!(step = 1, "a line");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let line: serde_json::Map<String, serde_json::Value> = serde_json::from_str(&text).unwrap();
        let mut keys: Vec<(usize, &String)> = line
            .keys()
            .map(|k| (text.find(&format!("\"{k}\":")).unwrap(), k))
            .collect();
        keys.sort();
        let keys: Vec<&str> = keys.iter().map(|(_, k)| k.as_str()).collect();
        let mut expected = documented_keys();
        assert_eq!(expected.len(), 9, "{expected:?}");
        expected.extend(["target", "message_id", "step"].map(String::from));
        assert_eq!(keys, expected);
        assert_eq!(
            (
                line["function_request_id"].as_str(),
                line["xray_trace_id"].as_str()
            ),
            (Some("req-1"), Some("Root=1-0-1"))
        );
    }

    #[test]
    fn a_second_invocation_is_warm_even_when_the_first_wrote_nothing() {
        let buffer = Buffer::default();
        let subscriber = tracing_subscriber::registry()
            .with(Lines::new(buffer.clone(), "svc", "fn-1").with_filter(level_filter("warn")));
        tracing::subscriber::with_default(subscriber, || {
            for request in ["req-1", "req-2"] {
                let invoke = tracing::info_span!("Lambda runtime invoke", requestId = request);
                let _invoke = invoke.enter();
                tracing::info!("dropped at warn");
                if request == "req-2" {
                    tracing::warn!("written");
                }
            }
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        let line: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(
            (
                line["function_request_id"].as_str(),
                line["cold_start"].as_bool()
            ),
            (Some("req-2"), Some(false))
        );
    }

    #[test]
    fn a_field_named_like_a_common_key_never_repeats_it() {
        let buffer = Buffer::default();
        let subscriber = tracing_subscriber::registry()
            .with(Lines::new(buffer.clone(), "svc", "fn-1").with_filter(level_filter("info")));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("outer", service = "other", message = "span's");
            let _in = span.enter();
            tracing::info!(level = "custom", target = "mine", "the message");
        });
        let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
        for key in ["service", "level", "target", "message"] {
            assert_eq!(
                text.matches(&format!("\"{key}\":")).count(),
                1,
                "{key}: {text}"
            );
        }
        let line: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
        assert_eq!(
            (
                line["service"].as_str(),
                line["field.service"].as_str(),
                line["level"].as_str(),
                line["field.level"].as_str(),
                line["message"].as_str(),
                line["field.message"].as_str(),
            ),
            (
                Some("svc"),
                Some("other"),
                Some("INFO"),
                Some("custom"),
                Some("the message"),
                Some("span's")
            )
        );
    }

    #[test]
    fn lambdas_level_wins_then_rust_log_then_info() {
        assert_eq!(level_directive(Some("WARN"), Some("debug")), "warn");
        assert_eq!(level_directive(Some("fatal"), None), "error");
        assert_eq!(level_directive(Some("TRACE"), None), "trace");
        assert_eq!(
            level_directive(None, Some("hookgate=debug")),
            "hookgate=debug"
        );
        assert_eq!(level_directive(None, Some(" ")), "info");
        assert_eq!(level_directive(None, None), "info");
    }
}
