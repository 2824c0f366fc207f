//! A small SVG line chart on log-log axes: enough for scaling curves, no plotting dependency.

use std::fmt::Write as _;

/// One named series of (x, y) points, x and y positive.
pub struct Series {
    /// Its legend.
    pub name: String,
    /// Its points, in increasing x.
    pub points: Vec<(f64, f64)>,
}

const W: f64 = 720.0;
const H: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 110.0;
const COLORS: [&str; 6] = [
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b",
];

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The chart as an SVG document, with a dashed linear reference through each series' first
/// point (a slope-1 line on log-log axes): a curve bending above it grows super-linearly.
pub fn chart(title: &str, x_label: &str, y_label: &str, series: &[Series]) -> String {
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        (x0, x1, y0, y1) = (1.0, 10.0, 1.0, 10.0);
    }
    let (lx0, lx1) = (
        x0.log10().floor(),
        x1.log10().ceil().max(x0.log10().floor() + 1.0),
    );
    let (ly0, ly1) = (
        y0.log10().floor(),
        y1.log10().ceil().max(y0.log10().floor() + 1.0),
    );
    let px = |x: f64| LEFT + (x.log10() - lx0) / (lx1 - lx0) * (W - LEFT - RIGHT);
    let py = |y: f64| H - BOTTOM - (y.log10() - ly0) / (ly1 - ly0) * (H - TOP - BOTTOM);

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let _ = writeln!(
        s,
        r#"<text x="{}" y="22" text-anchor="middle" font-size="14">{}</text>"#,
        W / 2.0,
        escape(title)
    );
    // Grid and ticks at powers of ten.
    for e in lx0 as i32..=lx1 as i32 {
        let x = px(10f64.powi(e));
        let _ = writeln!(
            s,
            r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{}" stroke="#ddd"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            H - BOTTOM,
            H - BOTTOM + 16.0,
            tick(e)
        );
    }
    for e in ly0 as i32..=ly1 as i32 {
        let y = py(10f64.powi(e));
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{y:.1}" x2="{}" y2="{y:.1}" stroke="#ddd"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            tick(e)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">{}</text>"#,
        (LEFT + W - RIGHT) / 2.0,
        H - BOTTOM + 34.0,
        escape(x_label)
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle">{}</text>"#,
        (TOP + H - BOTTOM) / 2.0,
        escape(y_label)
    );
    for (i, serie) in series.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        if let (Some(&(fx, fy)), Some(&(lx, _))) = (serie.points.first(), serie.points.last()) {
            let ly = fy * lx / fx;
            let _ = writeln!(
                s,
                r#"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="{color}" stroke-dasharray="4 4" opacity="0.5"/>"#,
                px(fx),
                py(fy),
                px(lx),
                py(ly)
            );
        }
        let points: Vec<String> = serie
            .points
            .iter()
            .map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
            points.join(" ")
        );
        for &(x, y) in &serie.points {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"/>"#,
                px(x),
                py(y)
            );
        }
        let ly = H - BOTTOM + 56.0 + 16.0 * i as f64;
        let _ = writeln!(
            s,
            r#"<line x1="{LEFT}" y1="{:.1}" x2="{}" y2="{:.1}" stroke="{color}" stroke-width="2"/><text x="{}" y="{:.1}">{}</text>"#,
            ly - 4.0,
            LEFT + 24.0,
            ly - 4.0,
            LEFT + 30.0,
            ly,
            escape(&serie.name)
        );
    }
    s.push_str("</svg>\n");
    s
}

fn tick(e: i32) -> String {
    let v = 10f64.powi(e);
    if (0..=6).contains(&e) {
        format!("{v}")
    } else if (-3..0).contains(&e) {
        format!("{v:.*}", (-e) as usize)
    } else {
        format!("1e{e}")
    }
}
