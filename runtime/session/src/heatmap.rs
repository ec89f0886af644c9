//! `tilebook.heatmap(t, title="", values=False)`: a tensor of one or two
//! dimensions drawn as a grid of cells coloured by value (SVG), with a
//! character-shaded text version for terminals. Notebooks use it to show
//! what a kernel computed at a glance: which random numbers each program
//! drew, which block of a schedule a program visits, which lock a row took.

use crate::value::{Args, Exc, Val, R};
use crate::Engine;
use std::fmt::Write;

const MAX_CELLS: usize = 1 << 16;

pub(crate) fn heatmap(s: &mut Engine, a: &Args) -> R<Val> {
    let Val::Tensor(t) = a.req(0, "tensor")? else {
        return Err(Exc::type_error("tilebook.heatmap(tensor): pass a tensor"));
    };
    let title = match a.get(1, "title") {
        None | Some(Val::None) => String::new(),
        Some(Val::Str(x)) => x.to_string(),
        Some(v) => {
            return Err(Exc::type_error(format!(
                "title must be a str, not {}",
                v.type_name()
            )))
        }
    };
    let values = matches!(a.get(2, "values"), Some(Val::Bool(true)));
    let (rows, cols) = match t.shape.as_slice() {
        [n] => (1, *n),
        [m, n] => (*m, *n),
        _ => {
            return Err(Exc::value_error(format!(
                "tilebook.heatmap draws tensors of one or two dimensions, not {:?}",
                t.shape
            )))
        }
    };
    if rows * cols == 0 || rows * cols > MAX_CELLS {
        return Err(Exc::value_error(format!(
            "tilebook.heatmap draws 1 to {MAX_CELLS} cells; this tensor has {}",
            rows * cols
        )));
    }
    let v: Vec<f64> = t.values_f64();
    let finite: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    let lo = finite.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = finite.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    // The scale's ends as shown in the legends (a tensor without finite
    // values has none).
    let (lo_text, hi_text) = if lo.is_finite() {
        (number(lo), number(hi))
    } else {
        ("no finite value".to_string(), "no finite value".to_string())
    };
    let level = |x: f64| -> f64 {
        if !x.is_finite() {
            return if x == f64::INFINITY { 1.0 } else { 0.0 };
        }
        if !lo.is_finite() || hi <= lo {
            // One value throughout: the middle of the scale.
            return 0.5;
        }
        ((x - lo) / (hi - lo)).clamp(0.0, 1.0)
    };
    let cell = (480.0 / cols as f64).clamp(2.0, 40.0);
    let (w, h) = (cols as f64 * cell, rows as f64 * cell);
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0}\" height=\"{:.0}\" font-family=\"sans-serif\">",
        w + 2.0,
        h + 44.0
    );
    let _ = writeln!(
        svg,
        "<text x=\"1\" y=\"14\" font-size=\"13\">{}</text>",
        escape(&title)
    );
    for r in 0..rows {
        for c in 0..cols {
            let x = v[r * cols + c];
            let (px, py) = (1.0 + c as f64 * cell, 20.0 + r as f64 * cell);
            let _ = writeln!(
                svg,
                "<rect x=\"{px:.1}\" y=\"{py:.1}\" width=\"{cell:.1}\" height=\"{cell:.1}\" fill=\"{}\"><title>[{r}, {c}] = {}</title></rect>",
                colour(level(x), x.is_nan()),
                number(x)
            );
            if values && cell >= 16.0 {
                let ink = if level(x) > 0.55 { "#fff" } else { "#000" };
                let _ = writeln!(
                    svg,
                    "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"{:.1}\" text-anchor=\"middle\" dominant-baseline=\"central\" fill=\"{ink}\">{}</text>",
                    px + cell / 2.0,
                    py + cell / 2.0,
                    (cell * 0.38).min(12.0),
                    number(x)
                );
            }
        }
    }
    let _ = writeln!(
        svg,
        "<text x=\"1\" y=\"{:.0}\" font-size=\"11\">{} x {}; light = {}, dark = {}</text>\n</svg>",
        h + 36.0,
        rows,
        cols,
        lo_text,
        hi_text
    );
    // Text: one character per cell for grids that fit a terminal.
    let mut text = format!("{title}\n");
    if cols <= 120 && rows <= 64 {
        const SHADES: &[char] = &[' ', '.', ':', '-', '=', '+', '*', '#', '%', '@'];
        for r in 0..rows {
            for c in 0..cols {
                let x = v[r * cols + c];
                let i = (level(x) * (SHADES.len() - 1) as f64).round() as usize;
                text.push(if x.is_nan() { '?' } else { SHADES[i] });
            }
            text.push('\n');
        }
    }
    let _ = write!(text, "{rows} x {cols}; ' ' = {lo_text}, '@' = {hi_text}");
    s.display(vec![
        ("image/svg+xml".into(), svg),
        ("text/plain".into(), text),
    ]);
    Ok(Val::None)
}

/// Light yellow (0) to dark blue (1); grey for NaN.
fn colour(t: f64, nan: bool) -> String {
    if nan {
        return "#bbbbbb".into();
    }
    crate::pictures::ramp_colour(t)
}

fn number(x: f64) -> String {
    if x.is_finite() && x.fract() == 0.0 && x.abs() < 1e9 {
        format!("{}", x as i64)
    } else if x.is_finite() {
        format!("{x:.3}")
    } else {
        format!("{x}")
    }
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
