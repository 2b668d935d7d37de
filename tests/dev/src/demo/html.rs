//! The demo report as one self-contained HTML page: figures, invariants, and
//! two inline SVG charts (deliveries vs CRM effects over time with the outage
//! shaded; triage items by class). No scripts, no external resources.

use std::fmt::Write;

use super::report::Report;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Deliveries accepted, unique events and CRM tasks created, cumulative per
/// second, each line labelled with its final value.
fn timeline_svg(r: &Report) -> String {
    let (w, h, pad) = (720.0, 280.0, 44.0);
    let last = r.timeline.last().map_or(1, |t| t.0.max(1)) as f64;
    let top = r
        .timeline
        .iter()
        .map(|t| t.1.max(t.2).max(t.3))
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let x = |s: f64| pad + s / last * (w - 2.0 * pad);
    let y = |v: f64| h - pad - v / top * (h - 2.0 * pad);
    let line = |pick: fn(&(u64, u64, u64, u64)) -> u64| {
        r.timeline
            .iter()
            .map(|t| format!("{:.1},{:.1}", x(t.0 as f64), y(pick(t) as f64)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let (o0, o1) = r.outage_secs;
    let mut svg = format!(
        r##"<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="deliveries vs effects">
<rect x="{ox:.1}" y="{pad}" width="{ow:.1}" height="{oh:.1}" fill="#fde2e2"/>
<text x="{ox:.1}" y="{ty:.1}" font-size="11" fill="#b91c1c">CRM outage</text>
<line x1="{pad}" y1="{base:.1}" x2="{right:.1}" y2="{base:.1}" stroke="#999"/>
<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{base:.1}" stroke="#999"/>
<polyline fill="none" stroke="#2563eb" stroke-width="2" points="{d}"/>
<polyline fill="none" stroke="#7c3aed" stroke-width="2" points="{u}"/>
<polyline fill="none" stroke="#16a34a" stroke-width="2" points="{t}"/>
<text x="{pad}" y="{lx:.1}" font-size="11">0</text>
<text x="{right:.1}" y="{lx:.1}" font-size="11" text-anchor="end">{last}s</text>
<text x="{lbl:.1}" y="{pad}" font-size="11" text-anchor="end">{top}</text>
<text x="{legend:.1}" y="20" font-size="12" fill="#2563eb">deliveries accepted</text>
<text x="{legend2:.1}" y="20" font-size="12" fill="#7c3aed">unique events</text>
<text x="{legend3:.1}" y="20" font-size="12" fill="#16a34a">CRM tasks created (one per action)</text>
"##,
        ox = x(o0),
        ow = (x(o1.min(last)) - x(o0)).max(0.0),
        oh = h - 2.0 * pad,
        ty = pad - 4.0,
        base = h - pad,
        right = w - pad,
        d = line(|t| t.1),
        u = line(|t| t.2),
        t = line(|t| t.3),
        lx = h - pad + 16.0,
        lbl = pad - 4.0,
        legend = pad,
        legend2 = pad + 150.0,
        legend3 = pad + 260.0,
    );
    if let Some(end) = r.timeline.last() {
        for (value, color) in [(end.1, "#2563eb"), (end.2, "#7c3aed"), (end.3, "#16a34a")] {
            let _ = write!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" font-size="11" fill="{color}">{value}</text>"#,
                w - pad + 4.0,
                y(value as f64) + 4.0
            );
        }
    }
    svg.push_str("</svg>");
    svg
}

/// Triage items by class, as horizontal bars.
fn classes_svg(r: &Report) -> String {
    let classes: Vec<(String, u64)> = r.triage["by_class"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    let top = classes.iter().map(|c| c.1).max().unwrap_or(1).max(1) as f64;
    let (w, row) = (720.0, 28.0);
    let h = row * classes.len().max(1) as f64 + 10.0;
    let mut svg = format!(
        r#"<svg viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" aria-label="triage by class">"#
    );
    for (i, (class, n)) in classes.iter().enumerate() {
        let y = i as f64 * row + 4.0;
        let bar = (*n as f64 / top) * (w - 260.0);
        let _ = write!(
            svg,
            r##"<text x="0" y="{ty:.1}" font-size="12">{class}</text><rect x="170" y="{y:.1}" width="{bar:.1}" height="18" fill="#f59e0b"/><text x="{nx:.1}" y="{ty:.1}" font-size="12">{n}</text>"##,
            ty = y + 14.0,
            class = escape(class),
            nx = 176.0 + bar,
        );
    }
    svg.push_str("</svg>");
    svg
}

pub fn render(r: &Report) -> String {
    let mut rows = String::new();
    for i in &r.invariants {
        let _ = write!(
            rows,
            "<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td></tr>",
            if i.ok { "ok" } else { "fail" },
            if i.ok { "ok" } else { "FAIL" },
            escape(i.name),
            escape(&i.detail)
        );
    }
    let json = escape(&serde_json::to_string_pretty(r).unwrap_or_default());
    format!(
        r#"<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>hookgate demo report</title>
<style>
body {{ font-family: system-ui, sans-serif; margin: 2rem; max-width: 60rem; color: #111; }}
h1 {{ margin-bottom: 0; }} .verdict {{ font-size: 1.2rem; font-weight: 600; }}
.pass {{ color: #15803d; }} .failed {{ color: #b91c1c; }}
table {{ border-collapse: collapse; }} td {{ padding: .2rem .6rem; border-bottom: 1px solid #eee; }}
tr.fail td {{ background: #fee2e2; }} pre {{ background: #f6f6f6; padding: 1rem; overflow: auto; font-size: .8rem; }}
</style></head><body>
<h1>hookgate — a day of webhooks</h1>
<p class="verdict {verdict_class}">{verdict}</p>
<pre>{summary}</pre>
<h2>Deliveries vs effects</h2>
{timeline}
<p>Every delivery (repeats included) is acknowledged at once; repeats collapse into unique events; CRM tasks follow once per business action (not every event asks for one). The shaded window is the simulated CRM outage: deliveries keep being accepted, effects wait in the DLQ for triage and approval.</p>
<h2>Triage items by class</h2>
{classes}
<h2>Invariants</h2>
<table>{rows}</table>
<h2>Report (JSON)</h2>
<details><summary>show</summary><pre>{json}</pre></details>
</body></html>
"#,
        verdict_class = if r.ok { "pass" } else { "failed" },
        verdict = if r.ok {
            "Every invariant holds: no duplicate effect, no lost event."
        } else {
            "An invariant failed (see below)."
        },
        summary = escape(&super::report::summary(r)),
        timeline = timeline_svg(r),
        classes = classes_svg(r),
    )
}
