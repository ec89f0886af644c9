//! `triton.testing.Benchmark`, `@triton.testing.perf_report` and
//! `Mark.run(show_plots, print_data, save_path)`.
//!
//! `run` calls the benchmark function for every x value and line, as Triton
//! does, and shows the results as values: the table as a MIME bundle (aligned
//! text in the pandas layout, and HTML), the plot as SVG drawn by `plotters`
//! (no system fonts) with a braille line plot as its `text/plain` for
//! terminals. `save_path` writes `<plot_name>.csv` and `<plot_name>.svg`.
//! Sweeps longer than a second report progress on stderr; the points run
//! one after another or spread over GPUs (`sweep.rs`).

use crate::table::Table;
use crate::value::R;
use crate::value::{to_f64, Args};
use crate::value::{Exc, Object, Val};
use crate::Engine;

/// `triton.testing.Benchmark(x_names, x_vals, line_arg, line_vals, ...)`.
pub fn benchmark(a: &Args) -> R<Val> {
    let req = ["x_names", "x_vals", "line_arg", "line_vals"];
    let opt = [
        "line_names",
        "plot_name",
        "args",
        "xlabel",
        "ylabel",
        "x_log",
        "y_log",
        "styles",
        "color",
        "ylim",
        "x_vals_label",
    ];
    let mut attrs = vec![];
    for (i, n) in req.iter().enumerate() {
        attrs.push((*n, a.req(i, n)?));
    }
    for (i, n) in opt.iter().enumerate() {
        let v = a.get(i + req.len(), n).unwrap_or(Val::None);
        attrs.push((*n, v));
    }
    Ok(Val::object("Benchmark", attrs))
}

/// `triton.testing.perf_report(benchmarks)`: a decorator.
pub fn perf_report(a: &Args) -> R<Val> {
    let obj = Val::object(
        "triton.testing.perf_report",
        vec![("benchmarks", a.req(0, "benchmarks")?)],
    );
    Ok(Val::Method(
        Box::new(obj),
        std::rc::Rc::from("__decorate__"),
    ))
}

/// The decorator applied: a `Mark` holding the function and benchmarks.
pub fn decorate(o: &Object, f: Val) -> R<Val> {
    Ok(Val::object(
        "Mark",
        vec![("fn", f), ("benchmarks", attr(o, "benchmarks"))],
    ))
}

fn attr(o: &Object, n: &str) -> Val {
    crate::value::attr_of(o, n).unwrap_or(Val::None)
}

/// `Mark.run(show_plots=False, print_data=False, save_path='', **kwargs)`.
pub fn run(s: &mut Engine, mark: &Object, a: &Args) -> R<Val> {
    let flag = |n: &str| a.kw(n).is_some_and(|v| v.truth().unwrap_or(false));
    let (show, print) = (flag("show_plots"), flag("print_data"));
    let want_df = flag("return_df");
    let mut frames = vec![];
    let save = a
        .kw("save_path")
        .map(|v| v.to_str().to_string())
        .unwrap_or_default();
    let extra: Vec<(String, Val)> =
        a.kw.iter()
            .filter(|(k, _)| {
                !matches!(
                    k.as_str(),
                    "show_plots" | "print_data" | "save_path" | "return_df"
                )
            })
            .cloned()
            .collect();
    let f = attr(mark, "fn");
    let benches = match attr(mark, "benchmarks") {
        b @ Val::Object(_) => vec![b],
        other => s.iterate(&other)?,
    };
    for b in benches {
        let Val::Object(b) = b else {
            return Err(Exc::type_error(
                "perf_report expects triton.testing.Benchmark objects",
            ));
        };
        let table = sweep(s, &f, &b, &extra)?;
        if want_df {
            frames.push(table.columns());
        }
        if print {
            let text = format!("{}:\n{}", table.name, table.text());
            s.display(vec![
                ("text/plain".into(), text),
                ("text/html".into(), table.html()),
            ]);
        }
        let svg = crate::plot::svg(&table).map_err(|e| Exc::new("RuntimeError", e))?;
        let mut saved = None;
        if !save.is_empty() {
            let dir = std::path::Path::new(&save);
            std::fs::create_dir_all(dir)
                .and_then(|_| std::fs::write(dir.join(format!("{}.csv", table.name)), table.csv()))
                .and_then(|_| {
                    let p = dir.join(format!("{}.svg", table.name));
                    std::fs::write(&p, &svg)?;
                    saved = Some(p);
                    Ok(())
                })
                .map_err(|e| Exc::new("OSError", format!("save_path '{save}': {e}")))?;
        }
        if show {
            // Terminals get the braille plot and the SVG in a file.
            let path = match saved {
                Some(p) => p,
                None => {
                    let dir = std::env::temp_dir().join("tilebook-plots");
                    let p = dir.join(format!("{}.svg", table.name));
                    let _ = std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&p, &svg));
                    p
                }
            };
            let text = format!(
                "{}\n(plot: {})",
                crate::plot::braille(&table),
                path.display()
            );
            s.display(vec![
                ("image/svg+xml".into(), svg),
                ("text/plain".into(), text),
            ]);
        }
    }
    // `return_df=True`: pandas is not available, so each table comes back as
    // a dict of columns (`df['name']` and iterating a column work alike).
    Ok(match (want_df, frames.len()) {
        (false, _) => Val::None,
        (true, 1) => frames.pop().expect("one table"),
        (true, _) => Val::list(frames),
    })
}

fn strings(s: &mut Engine, v: &Val) -> R<Vec<String>> {
    Ok(s.iterate(v)?
        .iter()
        .map(|x| x.to_str().to_string())
        .collect())
}

/// `TILEBOOK_SWEEP_CUT=N` keeps the first `N` points of every sweep (a
/// tutorial's sizes shrink without editing the file, e.g. on the CPU
/// backend); the cut is said on stderr. A value that is not a whole number
/// of at least 1 is an error naming the variable, not a silent full sweep
/// or an empty table.
fn cut(mut x_vals: Vec<Val>) -> R<Vec<Val>> {
    let Ok(raw) = std::env::var("TILEBOOK_SWEEP_CUT") else {
        return Ok(x_vals);
    };
    let n = match raw.trim().parse::<usize>() {
        Ok(n) if n >= 1 => n,
        _ => {
            return Err(Exc::value_error(format!(
            "TILEBOOK_SWEEP_CUT={raw:?}: expected the number of sweep points to keep (1 or more)"
        )))
        }
    };
    if n < x_vals.len() {
        eprintln!(
            "TILEBOOK_SWEEP_CUT={n}: the sweep keeps its first {n} of {} points",
            x_vals.len()
        );
        x_vals.truncate(n);
    }
    Ok(x_vals)
}

/// Call the benchmark function over the sweep.
fn sweep(s: &mut Engine, f: &Val, b: &Object, extra: &[(String, Val)]) -> R<Table> {
    let x_names = strings(s, &attr(b, "x_names"))?;
    let x_vals = cut(s.iterate(&attr(b, "x_vals"))?)?;
    let line_arg = attr(b, "line_arg").to_str().to_string();
    let line_vals = s.iterate(&attr(b, "line_vals"))?;
    let line_names = match attr(b, "line_names") {
        Val::None => line_vals.iter().map(|v| v.to_str().to_string()).collect(),
        v => strings(s, &v)?,
    };
    let fixed: Vec<(String, Val)> = match attr(b, "args") {
        Val::Dict(d) => d
            .borrow()
            .iter()
            .map(|(k, v)| (k.to_str().to_string(), v.clone()))
            .collect(),
        _ => vec![],
    };
    let label = |v: Val, d: &str| match v {
        Val::None => d.to_string(),
        v => v.to_str().to_string(),
    };
    let name = label(attr(b, "plot_name"), "benchmark");
    // Every (x, line) point's keyword arguments, x values outer.
    let mut xs_of = vec![];
    let mut points: crate::sweep::Points = vec![];
    for x in &x_vals {
        // One x value per name, or a tuple giving each name its own.
        let xs: Vec<Val> = match x {
            Val::Tuple(_) | Val::List(_) => s.iterate(x)?,
            v => vec![v.clone(); x_names.len()],
        };
        for lv in &line_vals {
            let mut kw: Vec<(String, Val)> =
                x_names.iter().cloned().zip(xs.iter().cloned()).collect();
            kw.push((line_arg.clone(), lv.clone()));
            kw.extend(fixed.iter().cloned());
            kw.extend(extra.iter().cloned());
            points.push(kw);
        }
        xs_of.push(xs);
    }
    let results = crate::sweep::run_points(s, f, &points, &name)?;
    let mut rows = vec![];
    let mut results = results.into_iter();
    for xs in xs_of {
        let mut ys = vec![];
        for _ in &line_vals {
            let r = results.next().unwrap_or(Val::None);
            let y = match &r {
                Val::Tuple(_) | Val::List(_) => {
                    let v = s.iterate(&r)?;
                    let g = |i: usize| v.get(i).map(to_f64).unwrap_or(Ok(f64::NAN));
                    (g(0)?, g(1)?, g(2)?)
                }
                v => {
                    let y = to_f64(v)?;
                    (y, y, y)
                }
            };
            ys.push(y);
        }
        rows.push((xs, ys));
    }
    Ok(Table {
        xlabel: label(attr(b, "xlabel"), &x_names.join(", ")),
        ylabel: label(attr(b, "ylabel"), ""),
        x_log: attr(b, "x_log").truth()?,
        y_log: attr(b, "y_log").truth()?,
        name,
        x_names,
        line_names,
        rows,
    })
}

/// Numbers the way pandas prints a float column: one number of decimals
/// (at most 6) for the whole column.
fn column(vals: &[f64]) -> Vec<String> {
    if vals.iter().all(|v| v.fract() == 0.0 && v.abs() < 1e15) {
        return vals.iter().map(|v| format!("{v:.1}")).collect();
    }
    let decimals = vals
        .iter()
        .map(|v| {
            let t = format!("{v:.6}");
            let t = t.trim_end_matches('0');
            t.len() - t.find('.').map_or(t.len(), |p| p + 1)
        })
        .max()
        .unwrap_or(0)
        .clamp(1, 6);
    vals.iter().map(|v| format!("{v:.decimals$}")).collect()
}

impl Table {
    /// Column names and their printed cells (x columns, then line means).
    fn cells(&self) -> (Vec<String>, Vec<Vec<String>>) {
        let mut names = self.x_names.clone();
        names.extend(self.line_names.iter().cloned());
        let mut cols = vec![];
        for i in 0..self.x_names.len() {
            let vals: Vec<Val> = self.rows.iter().map(|r| r.0[i].clone()).collect();
            let nums: Option<Vec<f64>> = vals.iter().map(|v| to_f64(v).ok()).collect();
            cols.push(match nums {
                Some(n) => column(&n),
                None => vals.iter().map(|v| v.to_str().to_string()).collect(),
            });
        }
        for j in 0..self.line_names.len() {
            let n: Vec<f64> = self.rows.iter().map(|r| r.1[j].0).collect();
            cols.push(column(&n));
        }
        (names, cols)
    }

    /// The table as pandas' `to_string` lays it out (index column first).
    pub fn text(&self) -> String {
        let (names, cols) = self.cells();
        let index: Vec<String> = (0..self.rows.len()).map(|i| i.to_string()).collect();
        let iw = index.iter().map(|s| s.len()).max().unwrap_or(1);
        let widths: Vec<usize> = names
            .iter()
            .zip(&cols)
            .map(|(n, c)| {
                c.iter()
                    .map(|s| s.len())
                    .chain([n.len()])
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = " ".repeat(iw);
        for (n, w) in names.iter().zip(&widths) {
            out.push_str(&format!("  {n:>w$}"));
        }
        out.push('\n');
        for (r, idx) in index.iter().enumerate() {
            out.push_str(&format!("{idx:<iw$}"));
            for (c, w) in cols.iter().zip(&widths) {
                out.push_str(&format!("  {:>w$}", c[r]));
            }
            out.push('\n');
        }
        out
    }

    pub fn html(&self) -> String {
        let esc = |s: &str| {
            s.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
        };
        let (names, cols) = self.cells();
        let mut h = format!(
            "<table class=\"dataframe\">\n<caption>{}</caption>\n<thead><tr><th></th>",
            esc(&self.name)
        );
        for n in &names {
            h.push_str(&format!("<th>{}</th>", esc(n)));
        }
        h.push_str("</tr></thead>\n<tbody>\n");
        for r in 0..self.rows.len() {
            h.push_str(&format!("<tr><th>{r}</th>"));
            for c in &cols {
                h.push_str(&format!("<td>{}</td>", esc(&c[r])));
            }
            h.push_str("</tr>\n");
        }
        h.push_str("</tbody>\n</table>");
        h
    }

    /// Every column, line minima and maxima too (what Triton's CSV holds).
    pub fn csv(&self) -> String {
        let mut head: Vec<String> = self.x_names.clone();
        for n in &self.line_names {
            head.push(n.clone());
        }
        for n in &self.line_names {
            head.push(format!("{n}-min"));
            head.push(format!("{n}-max"));
        }
        let mut out = head.join(",") + "\n";
        for (xs, ys) in &self.rows {
            let mut cells: Vec<String> = xs.iter().map(|v| v.to_str().to_string()).collect();
            cells.extend(ys.iter().map(|y| y.0.to_string()));
            for y in ys {
                cells.push(y.1.to_string());
                cells.push(y.2.to_string());
            }
            out.push_str(&(cells.join(",") + "\n"));
        }
        out
    }

    /// The x position of row `r` (the first x column), for plots.
    pub fn x(&self, r: usize) -> f64 {
        to_f64(&self.rows[r].0[0]).unwrap_or(r as f64)
    }
}

/// Methods of the `perf_report` decorator object (`__decorate__`).
pub fn report_method(_s: &mut Engine, o: &Object, name: &str, a: &Args) -> R<Val> {
    match name {
        "__decorate__" => decorate(o, a.req(0, "fn")?),
        _ => Err(no_method("perf_report", name)),
    }
}

/// Methods of a `Mark` (`run`).
pub fn mark_method(s: &mut Engine, o: &Object, name: &str, a: &Args) -> R<Val> {
    match name {
        "run" => run(s, o, a),
        _ => Err(no_method("Mark", name)),
    }
}

fn no_method(type_name: &str, name: &str) -> Exc {
    Exc::new(
        "AttributeError",
        format!("'{type_name}' object has no attribute '{name}'"),
    )
}
