//! The chart of `warpfit bench throttle` (the paper's Figure 9): per
//! matrix, one bar per variant, its speed-up over the reference on a log
//! scale, bars rising from 1× for a gain and falling for a loss. SVG only,
//! through plotters' SVG backend, whose text needs no system fonts.

use crate::throttle::{Outcome, ThrottleBenchReport, VariantKind};
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use warpfit::{Error, Result};

/// Tableau 10: distinguishable, and readable in grey.
const PALETTE: [RGBColor; 10] = [
    RGBColor(78, 121, 167),
    RGBColor(242, 142, 43),
    RGBColor(225, 87, 89),
    RGBColor(118, 183, 178),
    RGBColor(89, 161, 79),
    RGBColor(237, 201, 72),
    RGBColor(176, 122, 161),
    RGBColor(255, 157, 167),
    RGBColor(156, 117, 95),
    RGBColor(186, 176, 172),
];

/// Pixels per bar and between matrices.
const BAR_PX: u32 = 14;
const GAP_PX: u32 = 40;

fn plot_err<E: std::fmt::Display>(e: E) -> Error {
    Error::invalid(format!("drawing the chart: {e}"))
}

/// The series: every variant kind that occurs, in run order, but the
/// reference's.
fn series(report: &ThrottleBenchReport) -> Vec<VariantKind> {
    let reference = |k: VariantKind| match report.cpu {
        true => k == VariantKind::Policy(warpfit::ThrottlePolicy::Org),
        false => k == VariantKind::Baseline,
    };
    let mut kinds: Vec<VariantKind> = Vec::new();
    for m in &report.matrices {
        for v in &m.variants {
            if !reference(v.kind) && !kinds.contains(&v.kind) {
                kinds.push(v.kind);
            }
        }
    }
    kinds
}

/// Renders the report's chart as an SVG document.
pub(super) fn render(report: &ThrottleBenchReport) -> Result<String> {
    let kinds = series(report);
    let groups = report.matrices.len().max(1);
    // speedups[g][s]: Some(speed-up), or None (not timed).
    let speedups: Vec<Vec<Option<f64>>> = report
        .matrices
        .iter()
        .map(|m| {
            kinds
                .iter()
                .map(|&k| {
                    let v = m.variants.iter().find(|v| v.kind == k)?;
                    m.speedup(v, report.cpu)
                        .filter(|s| s.is_finite() && *s > 0.0)
                })
                .collect()
        })
        .collect();
    // The y axis is log2 of the speed-up, so that its labels fall on
    // halvings and doublings (0.50×, 0.71×, 1.00×, 1.41×, 2.00×, ...).
    let all = speedups.iter().flatten().flatten().map(|s| s.log2());
    let (lo, hi) = all.fold((-1f64, 1f64), |(lo, hi), s| (lo.min(s), hi.max(s)));
    let (lo, hi) = (lo - 0.3, hi + 0.3);

    let per_group = kinds.len().max(1) as u32 * BAR_PX + GAP_PX;
    let width = (130 + groups as u32 * per_group + 170).max(640);
    let height = 460;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(plot_err)?;
        let reference = if report.cpu { "org" } else { "cuSPARSE" };
        let title = format!(
            "SpMV speed-up over {reference} per matrix and variant ({}, log scale)",
            if report.cpu { "CPU" } else { "GPU" }
        );
        let (plot, legend) = root.split_horizontally(width - 170);
        let mut chart = ChartBuilder::on(&plot)
            .caption(title, ("sans-serif", 17))
            .margin(12)
            .x_label_area_size(58)
            .y_label_area_size(56)
            .build_cartesian_2d(0f64..groups as f64, lo..hi)
            .map_err(plot_err)?;
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(0)
            .y_labels(12)
            .y_desc(format!("speed-up over {reference}"))
            .y_label_formatter(&|v| format!("{:.2}×", v.exp2()))
            .draw()
            .map_err(plot_err)?;

        let n = kinds.len().max(1) as f64;
        let slot = 0.8 / n;
        let x_of = |g: usize, s: usize| g as f64 + 0.1 + slot * s as f64;
        for s in 0..kinds.len() {
            let color = PALETTE[s % PALETTE.len()];
            let bars = speedups.iter().enumerate().filter_map(|(g, row)| {
                let v = row[s]?.log2();
                let x0 = x_of(g, s);
                Some(Rectangle::new(
                    [(x0, v.min(0.0)), (x0 + slot * 0.85, v.max(0.0))],
                    color.filled(),
                ))
            });
            chart.draw_series(bars).map_err(plot_err)?;
        }
        // Variants without a time (not launched, failed): a grey cross at 1×.
        let crosses = report.matrices.iter().enumerate().flat_map(|(g, m)| {
            kinds.iter().enumerate().filter_map(move |(s, &k)| {
                let v = m.variants.iter().find(|v| v.kind == k)?;
                matches!(v.outcome, Outcome::NotLaunched(_) | Outcome::Failed(_))
                    .then(|| Cross::new((x_of(g, s) + slot * 0.42, 0.0), 4, BLACK.mix(0.55)))
            })
        });
        chart.draw_series(crosses).map_err(plot_err)?;
        // The reference line.
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(0.0, 0.0), (groups as f64, 0.0)],
                BLACK.stroke_width(1),
            )))
            .map_err(plot_err)?;
        // Matrix labels under their groups.
        let label_style =
            TextStyle::from(("sans-serif", 13).into_font()).pos(Pos::new(HPos::Center, VPos::Top));
        for (g, m) in report.matrices.iter().enumerate() {
            let (px, py) = chart.backend_coord(&(g as f64 + 0.5, lo));
            plot.draw(&Text::new(
                m.label.clone(),
                (px, py + 8),
                label_style.clone(),
            ))
            .map_err(plot_err)?;
        }
        // The legend beside the plot.
        legend
            .draw(&Text::new(
                "× not launched",
                (10, 40),
                ("sans-serif", 13).into_font(),
            ))
            .map_err(plot_err)?;
        for (s, &kind) in kinds.iter().enumerate() {
            let y = 70 + 20 * s as i32;
            let color = PALETTE[s % PALETTE.len()];
            legend
                .draw(&Rectangle::new([(10, y - 6), (22, y + 6)], color.filled()))
                .map_err(plot_err)?;
            legend
                .draw(&Text::new(
                    kind.name(report.cpu),
                    (28, y - 7),
                    ("sans-serif", 13).into_font(),
                ))
                .map_err(plot_err)?;
        }
        root.present().map_err(plot_err)?;
    }
    Ok(svg)
}
