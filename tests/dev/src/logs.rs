//! The local runner's stand-in for Lambda's log agent: each function's lines
//! go to that function's log group on the emulator, as Lambda writes them to
//! CloudWatch Logs, so `hookgate logs` reads a local stack as it reads a
//! deployed one.
//!
//! The functions share one process here, so a line's function is the tokio
//! task it is written from: each function's work runs inside
//! [`as_function`], and a line written outside any (the runner's own) goes
//! to standard output only. The shipping calls are tagged `hookgate-local`,
//! not as a function: on AWS, Lambda writes the logs, not the code.

use std::{collections::BTreeMap, future::Future, io::Write, time::Duration};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};
use tracing_subscriber::fmt::MakeWriter;

tokio::task_local! {
    static FUNCTION: &'static str;
}

/// Runs `work` as `function`'s: the lines it writes go to its log group.
pub fn as_function<F: Future>(function: &'static str, work: F) -> impl Future<Output = F::Output> {
    FUNCTION.scope(function, work)
}

/// One line, by function.
#[derive(Debug)]
pub struct Shipped {
    function: &'static str,
    at_ms: i64,
    line: String,
}

/// A `MakeWriter` that hands each line written inside [`as_function`] to
/// the shipping task.
#[derive(Debug, Clone)]
pub struct Ship(UnboundedSender<Shipped>);

/// One line's writer.
#[derive(Debug)]
pub struct LineWriter {
    function: Option<&'static str>,
    buffer: Vec<u8>,
    to: UnboundedSender<Shipped>,
}

impl Write for LineWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.function.is_some() {
            self.buffer.extend_from_slice(buf);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        if let Some(function) = self.function
            && !self.buffer.is_empty()
        {
            let line = String::from_utf8_lossy(&self.buffer).trim_end().to_owned();
            // One process hosts every function, so the layer knows no
            // function name; the line in its log group names its function,
            // as Lambda's would.
            let line = line.replacen(
                "\"function_name\":\"\"",
                &format!("\"function_name\":\"{function}\""),
                1,
            );
            let at_ms = hookgate_core::Timestamp::now().as_millis();
            let _ = self.to.send(Shipped {
                function,
                at_ms,
                line,
            });
        }
    }
}

impl<'a> MakeWriter<'a> for Ship {
    type Writer = LineWriter;

    fn make_writer(&'a self) -> LineWriter {
        LineWriter {
            function: FUNCTION.try_with(|f| *f).ok(),
            buffer: Vec::new(),
            to: self.0.clone(),
        }
    }
}

/// The writer for the subscriber, and the lines it collects; start
/// shipping them with [`ship`] once the log groups are known.
pub fn channel() -> (Ship, UnboundedReceiver<Shipped>) {
    let (to, from) = unbounded_channel();
    (Ship(to), from)
}

/// Writes the collected lines to `groups` (function → log group), a batch
/// every 200 ms, until the process ends. A line of a function without a log
/// group is dropped; a failed write is reported on stderr (never through
/// tracing, which would write it here again).
pub async fn ship(
    logs: aws_sdk_cloudwatchlogs::Client,
    groups: BTreeMap<String, String>,
    mut lines: UnboundedReceiver<Shipped>,
) {
    let stream = format!(
        "{}/[$LATEST]local-{}",
        hookgate_core::Timestamp::now()
            .utc()
            .get(..10)
            .unwrap_or("today")
            .replace('-', "/"),
        std::process::id()
    );
    let mut created = std::collections::BTreeSet::new();
    while let Some(first) = lines.recv().await {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let mut batch: BTreeMap<&str, Vec<Shipped>> = BTreeMap::new();
        let mut next = Some(first);
        while let Some(line) = next {
            if let Some(group) = groups.get(line.function) {
                batch.entry(group.as_str()).or_default().push(line);
            }
            next = lines.try_recv().ok();
        }
        for (group, mut lines) in batch {
            if created.insert(group.to_owned()) {
                let made = logs
                    .create_log_stream()
                    .log_group_name(group)
                    .log_stream_name(&stream)
                    .send()
                    .await;
                if let Err(e) = made {
                    let e = aws_sdk_cloudwatchlogs::error::DisplayErrorContext(e).to_string();
                    if !e.contains("ResourceAlreadyExists") {
                        eprintln!("local logs: cannot create a stream in {group}: {e}");
                        created.remove(group);
                        continue;
                    }
                }
            }
            lines.sort_by_key(|l| l.at_ms);
            let events = lines.into_iter().filter_map(|l| {
                aws_sdk_cloudwatchlogs::types::InputLogEvent::builder()
                    .timestamp(l.at_ms)
                    .message(l.line)
                    .build()
                    .ok()
            });
            let put = logs
                .put_log_events()
                .log_group_name(group)
                .log_stream_name(&stream)
                .set_log_events(Some(events.collect()))
                .send()
                .await;
            if let Err(e) = put {
                eprintln!(
                    "local logs: cannot write to {group}: {}",
                    aws_sdk_cloudwatchlogs::error::DisplayErrorContext(e)
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_line_goes_to_the_function_it_is_written_in_and_no_other() {
        let (ship, mut lines) = channel();
        as_function("action", async {
            let mut w = ship.make_writer();
            w.write_all(b"{\"message\":\"one\",\"function_name\":\"\"}\n")
                .unwrap();
        })
        .await;
        // Outside any function: standard output only.
        ship.make_writer()
            .write_all(b"{\"message\":\"runner\"}\n")
            .unwrap();
        let shipped = lines.try_recv().unwrap();
        assert_eq!(
            (shipped.function, shipped.line.as_str()),
            (
                "action",
                "{\"message\":\"one\",\"function_name\":\"action\"}"
            )
        );
        assert!(lines.try_recv().is_err());
    }
}
