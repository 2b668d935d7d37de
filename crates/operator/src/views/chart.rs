//! The overview's chart, drawn as inline SVG on the server: deliveries
//! against completed actions per hour. No script and no chart library, so the
//! page works offline and under a policy that forbids scripts.

use std::fmt::Write;

use maud::{Markup, PreEscaped};

use crate::activity::Hour;

const WIDTH: f64 = 760.0;
const HEIGHT: f64 = 220.0;
const LEFT: f64 = 40.0;
const BOTTOM: f64 = 24.0;
const TOP: f64 = 10.0;
const DELIVERIES: &str = "#7aa2ff";
const COMPLETED: &str = "#1f8a3b";

/// Two bars per hour, the hour's `HH` under every third pair, the axis
/// scaled to the largest bar, a legend with the totals. Written as text:
/// every value in it is a number this function formats, or a constant.
pub fn activity(hours: &[Hour]) -> Markup {
    PreEscaped(svg(hours))
}

fn svg(hours: &[Hour]) -> String {
    let max = hours
        .iter()
        .map(|h| h.deliveries.max(h.completed))
        .max()
        .unwrap_or(0)
        .max(1);
    let plot_h = HEIGHT - BOTTOM - TOP;
    let slot = (WIDTH - LEFT) / hours.len().max(1) as f64;
    let bar = (slot * 0.4).max(1.0);
    let mut svg = format!(
        "<svg class=\"chart\" id=\"activity-chart\" viewBox=\"0 0 {WIDTH} {h}\" width=\"{WIDTH}\" height=\"{h}\" role=\"img\" \
         aria-label=\"deliveries and completed actions per hour\">",
        h = HEIGHT + 20.0
    );
    let _ = write!(
        svg,
        "<line x1=\"{LEFT}\" y1=\"{y}\" x2=\"{WIDTH}\" y2=\"{y}\" stroke=\"#8892a6\"/>\
         <text x=\"{tx}\" y=\"{ty}\" text-anchor=\"end\">{max}</text>\
         <text x=\"{tx}\" y=\"{y}\" text-anchor=\"end\">0</text>",
        y = TOP + plot_h,
        tx = LEFT - 6.0,
        ty = TOP + 10.0,
    );
    for (i, h) in hours.iter().enumerate() {
        let x = LEFT + slot * i as f64 + slot * 0.1;
        for (j, (value, color, what)) in [
            (h.deliveries, DELIVERIES, "deliveries"),
            (h.completed, COMPLETED, "completed"),
        ]
        .into_iter()
        .enumerate()
        {
            let height = plot_h * value as f64 / max as f64;
            let _ = write!(
                svg,
                "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{bar:.1}\" height=\"{height:.1}\" fill=\"{color}\">\
                 <title>{value} {what}</title></rect>",
                x = x + bar * j as f64,
                y = TOP + plot_h - height,
            );
        }
        if i % 3 == 0 {
            let hour = hookgate_core::Timestamp::from_millis(h.start).utc();
            let _ = write!(
                svg,
                "<text x=\"{x:.1}\" y=\"{y}\">{}</text>",
                &hour[11..13],
                y = HEIGHT - 6.0,
            );
        }
    }
    let (deliveries, completed) = hours
        .iter()
        .fold((0, 0), |(d, c), h| (d + h.deliveries, c + h.completed));
    let _ = write!(
        svg,
        "<rect x=\"{LEFT}\" y=\"{y}\" width=\"10\" height=\"10\" fill=\"{DELIVERIES}\"/>\
         <text x=\"{t1}\" y=\"{ty}\">deliveries ({deliveries})</text>\
         <rect x=\"{x2}\" y=\"{y}\" width=\"10\" height=\"10\" fill=\"{COMPLETED}\"/>\
         <text x=\"{t2}\" y=\"{ty}\">completed actions ({completed})</text></svg>",
        y = HEIGHT + 6.0,
        ty = HEIGHT + 15.0,
        t1 = LEFT + 14.0,
        x2 = LEFT + 170.0,
        t2 = LEFT + 184.0,
    );
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bars_are_scaled_to_the_largest_and_the_legend_totals() {
        let hours = [
            Hour {
                start: 0,
                deliveries: 4,
                completed: 2,
            },
            Hour {
                start: 3_600_000,
                deliveries: 0,
                completed: 0,
            },
        ];
        let svg = activity(&hours).into_string();
        // the plot is HEIGHT - BOTTOM - TOP = 186 high: 4 of 4 fills it, 2 of 4 half.
        assert!(
            svg.contains("height=\"186.0\" fill=\"#7aa2ff\"><title>4 deliveries</title>"),
            "{svg}"
        );
        assert!(
            svg.contains("height=\"93.0\" fill=\"#1f8a3b\"><title>2 completed</title>"),
            "{svg}"
        );
        assert!(
            svg.contains(">deliveries (4)</text>") && svg.contains(">completed actions (2)</text>")
        );
        assert!(
            svg.contains(">00</text>"),
            "the first hour is labelled: {svg}"
        );
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    }

    #[test]
    fn an_idle_day_draws_flat_bars_without_dividing_by_zero() {
        let svg = activity(&[Hour::default()]).into_string();
        assert!(svg.contains("height=\"0.0\""), "{svg}");
        assert!(!svg.contains("NaN"));
    }
}
