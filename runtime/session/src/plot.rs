//! Line plots of `perf_report` tables: SVG through `plotters` (its SVG
//! backend with the built-in text estimate, so no system fonts are needed),
//! and a braille rendering for terminals (a 2x4-dot cell per character; the
//! few lines it takes did not justify another dependency).

use crate::table::Table;
use plotters::prelude::*;

/// Line colours, in order (matplotlib's default cycle).
const COLOURS: [RGBColor; 6] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
];

/// Lines as (name, points), skipping non-finite values (and non-positive
/// ones on log axes).
fn lines(t: &Table) -> Vec<(String, Vec<(f64, f64)>)> {
    let ok = |x: f64, y: f64| {
        x.is_finite() && y.is_finite() && (!t.x_log || x > 0.0) && (!t.y_log || y > 0.0)
    };
    t.line_names
        .iter()
        .enumerate()
        .map(|(j, n)| {
            let pts = (0..t.rows.len())
                .map(|r| (t.x(r), t.rows[r].1[j].0))
                .filter(|&(x, y)| ok(x, y))
                .collect();
            (n.clone(), pts)
        })
        .collect()
}

/// x range, and y range from 0 (from the smallest value on a log axis).
fn bounds(t: &Table, ls: &[(String, Vec<(f64, f64)>)]) -> (f64, f64, f64, f64) {
    let pts = ls.iter().flat_map(|(_, p)| p.iter());
    let (mut x0, mut x1, mut y0, mut y1) = (f64::MAX, f64::MIN, f64::MAX, f64::MIN);
    for &(x, y) in pts {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y0 = y0.min(y);
        y1 = y1.max(y);
    }
    if x0 > x1 {
        return (0.0, 1.0, 0.0, 1.0);
    }
    if x0 == x1 {
        x1 = x0 + 1.0;
    }
    if !t.y_log {
        y0 = y0.min(0.0);
    }
    if y0 == y1 {
        y1 = y0 + 1.0;
    }
    (x0, x1, y0, y1 * 1.05)
}

/// The plot as an SVG document.
pub fn svg(t: &Table) -> Result<String, String> {
    let ls = lines(t);
    let (x0, x1, y0, y1) = bounds(t, &ls);
    let mut out = String::new();
    {
        let root = SVGBackend::with_string(&mut out, (720, 450)).into_drawing_area();
        let e = |e: DrawingAreaErrorKind<_>| e.to_string();
        root.fill(&WHITE).map_err(e)?;
        let mut b = ChartBuilder::on(&root);
        b.caption(&t.name, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60);
        // The four axis combinations are different types in plotters.
        macro_rules! draw {
            ($xr:expr, $yr:expr) => {{
                let mut c = b.build_cartesian_2d($xr, $yr).map_err(e)?;
                c.configure_mesh()
                    .x_desc(&t.xlabel)
                    .y_desc(&t.ylabel)
                    .draw()
                    .map_err(e)?;
                for (j, (name, pts)) in ls.iter().enumerate() {
                    let colour = COLOURS[j % COLOURS.len()];
                    c.draw_series(LineSeries::new(pts.iter().copied(), colour.stroke_width(2)))
                        .map_err(e)?
                        .label(name.as_str())
                        .legend(move |(x, y)| {
                            PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                        });
                    c.draw_series(pts.iter().map(|&p| Circle::new(p, 3, colour.filled())))
                        .map_err(e)?;
                }
                c.configure_series_labels()
                    .background_style(WHITE.mix(0.8))
                    .border_style(BLACK)
                    .position(SeriesLabelPosition::UpperLeft)
                    .draw()
                    .map_err(e)?;
            }};
        }
        let (lx0, ly0) = (x0.max(f64::MIN_POSITIVE), y0.max(f64::MIN_POSITIVE));
        match (t.x_log, t.y_log) {
            (false, false) => draw!(x0..x1, y0..y1),
            (true, false) => draw!((lx0..x1).log_scale(), y0..y1),
            (false, true) => draw!(x0..x1, (ly0..y1).log_scale()),
            (true, true) => draw!((lx0..x1).log_scale(), (ly0..y1).log_scale()),
        }
        root.present().map_err(e)?;
    }
    Ok(out)
}

/// The plot in braille characters, `COLS x ROWS` cells, with the y range,
/// x range and a legend of one marker letter per line (each line's data
/// points show as its letter).
pub fn braille(t: &Table) -> String {
    const COLS: usize = 60;
    const ROWS: usize = 15;
    let ls = lines(t);
    let (x0, x1, y0, y1) = bounds(t, &ls);
    let (w, h) = (COLS * 2, ROWS * 4);
    let mut dots = vec![vec![false; w]; h];
    let px = |x: f64| (((x - x0) / (x1 - x0)) * (w - 1) as f64).round() as i64;
    let py = |y: f64| ((h - 1) as f64 - ((y - y0) / (y1 - y0)) * (h - 1) as f64).round() as i64;
    let mut plot = |x: i64, y: i64| {
        if (0..w as i64).contains(&x) && (0..h as i64).contains(&y) {
            dots[y as usize][x as usize] = true;
        }
    };
    // Each line's data points carry its marker letter, so lines that cross
    // can be told apart without colour.
    let mut marks: Vec<Vec<Option<char>>> = vec![vec![None; COLS]; ROWS];
    for (i, (_, pts)) in ls.iter().enumerate() {
        for p in pts {
            let (x, y) = (px(p.0), py(p.1));
            if (0..w as i64).contains(&x) && (0..h as i64).contains(&y) {
                marks[y as usize / 4][x as usize / 2] = Some(marker(i));
            }
        }
    }
    for (_, pts) in &ls {
        for seg in pts.windows(2) {
            let (a, b) = ((px(seg[0].0), py(seg[0].1)), (px(seg[1].0), py(seg[1].1)));
            let n = (b.0 - a.0).abs().max((b.1 - a.1).abs()).max(1);
            for i in 0..=n {
                plot(a.0 + (b.0 - a.0) * i / n, a.1 + (b.1 - a.1) * i / n);
            }
        }
        if let [p] = pts.as_slice() {
            plot(px(p.0), py(p.1));
        }
    }
    // Dot bits of a braille cell, by (row, column) within the 4x2 cell.
    const BITS: [[u32; 2]; 4] = [[0x01, 0x08], [0x02, 0x10], [0x04, 0x20], [0x40, 0x80]];
    let mut out = format!("{} ({})\n", t.name, t.ylabel);
    for r in 0..ROWS {
        let label = match r {
            0 => format!("{y1:>10.3} ┤"),
            _ if r == ROWS - 1 => format!("{y0:>10.3} ┤"),
            _ => format!("{:>10} │", ""),
        };
        out.push_str(&label);
        for c in 0..COLS {
            if let Some(m) = marks[r][c] {
                out.push(m);
                continue;
            }
            let mut bits = 0;
            for (dy, row) in BITS.iter().enumerate() {
                for (dx, bit) in row.iter().enumerate() {
                    if dots[r * 4 + dy][c * 2 + dx] {
                        bits |= bit;
                    }
                }
            }
            out.push(char::from_u32(0x2800 + bits).unwrap_or(' '));
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "{:>10} └{}\n{:>12}{:<w$}{:>10}\n",
        "",
        "─".repeat(COLS),
        "",
        format!("{x0}"),
        format!("{x1}"),
        w = COLS - 10
    ));
    out.push_str(&format!("{:>12}{}: ", "", t.xlabel));
    let names: Vec<String> = ls
        .iter()
        .enumerate()
        .map(|(i, (n, _))| format!("{} {n}", marker(i)))
        .collect();
    out.push_str(&format!("lines {}", names.join(", ")));
    out
}

/// The letter marking line `i`'s points in a braille plot.
fn marker(i: usize) -> char {
    (b'A' + (i % 26) as u8) as char
}
