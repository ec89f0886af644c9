//! Notebooks: running one with its outputs written back (`tilebook run
//! NB.ipynb --inplace`, the way nbclient saves them) and the
//! reproducibility check (`tilebook notebook check NB.ipynb`), which runs
//! the notebook again and reports every output that differs from the saved
//! one.
//!
//! The check compares what should not change and masks what must: numbers
//! followed by a unit of time or throughput (`0.23 ms`, `2763 GB/s`), the
//! timing footer's figures, device names, temporary paths, and the values
//! in benchmark tables (those with an HTML twin). Other numbers agree when
//! they are within a relative 1e-3 (absolute 1e-6). Pictures compare by
//! kind only: a plot of timings is never the same twice.

use serde_json::{json, Value};
use tilebook_session::{Output, Session};

/// The nbformat outputs of one cell.
pub fn outputs_json(outputs: &[Output], count: usize) -> Vec<Value> {
    let bundle = |data: &[(String, String)]| {
        let mut m = serde_json::Map::new();
        for (mime, v) in data {
            m.insert(mime.clone(), Value::from(lines(v)));
        }
        Value::Object(m)
    };
    let mut out = vec![];
    for o in outputs {
        match o {
            Output::Stream { name, text } => {
                // Consecutive chunks of one stream are one output, as Jupyter saves them.
                if let Some(last) = out.last_mut().filter(|l: &&mut Value| {
                    l["output_type"] == "stream" && l["name"] == name.as_str()
                }) {
                    let mut t = join(&last["text"]);
                    t.push_str(text);
                    last["text"] = Value::from(lines(&t));
                    continue;
                }
                out.push(json!({"output_type": "stream", "name": name, "text": lines(text)}));
            }
            Output::Display { data } => out
                .push(json!({"output_type": "display_data", "data": bundle(data), "metadata": {}})),
            Output::Result { data } => out.push(json!({
                "output_type": "execute_result", "execution_count": count,
                "data": bundle(data), "metadata": {}
            })),
            Output::Error {
                kind,
                message,
                rendered,
                ..
            } => out.push(json!({
                "output_type": "error", "ename": kind, "evalue": message,
                "traceback": rendered.lines().collect::<Vec<_>>()
            })),
            Output::Page { text } => {
                out.push(json!({"output_type": "stream", "name": "stdout", "text": lines(text)}))
            }
            Output::NextInput { .. } | Output::ClearOutput { .. } => {}
        }
    }
    out
}

/// nbformat's multi-line strings: a list of lines, each with its newline.
fn lines(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_string).collect()
}

/// A string or a list of strings, joined.
fn join(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a.iter().filter_map(|x| x.as_str()).collect(),
        _ => String::new(),
    }
}

/// Mark a notebook as tilebook's (what Jupyter needs to pick the kernel).
pub fn set_kernel_metadata(nb: &mut Value) {
    nb["metadata"]["kernelspec"] = json!({
        "name": "tilebook", "display_name": "Tile (tilebook)", "language": "python"
    });
    nb["metadata"]["language_info"] = json!({
        "name": "python", "file_extension": ".py", "mimetype": "text/x-python",
        "codemirror_mode": "python", "pygments_lexer": "python"
    });
}

/// Run every code cell of a notebook, replacing its outputs and execution
/// counts. Returns whether every cell succeeded (with `keep_going`, all cells
/// run regardless).
pub fn run_cells(
    nb: &mut Value,
    session: &mut Session,
    file: &str,
    keep_going: bool,
    print: bool,
) -> bool {
    let mut ok = true;
    let mut count = 0;
    let Some(cells) = nb["cells"].as_array_mut() else {
        return false;
    };
    for (i, cell) in cells.iter_mut().enumerate() {
        if cell["cell_type"] != "code" {
            continue;
        }
        if !ok && !keep_going {
            cell["outputs"] = json!([]);
            cell["execution_count"] = Value::Null;
            continue;
        }
        let src = join(&cell["source"]);
        count += 1;
        let r = session.run_cell_named(&src, &format!("{file} cell {}", i + 1));
        if print {
            crate::print_outputs(&r.outputs);
        }
        cell["outputs"] = Value::from(outputs_json(&r.outputs, count));
        cell["execution_count"] = Value::from(count);
        ok &= r.ok;
    }
    ok
}

/// What stays of an output's text after volatile parts are masked, and the
/// numbers left in it (compared with a tolerance).
fn masked(text: &str, table: bool) -> (String, Vec<f64>) {
    let mut out = vec![];
    let mut nums = vec![];
    for line in mask_devices(text).lines() {
        // The timing footer and timing magics are timings throughout.
        if line.starts_with('[') && line.contains("] grid (") {
            out.push("[timing footer]".to_string());
        } else if line.contains(" per loop (median of ") || line.starts_with("Wall time: ") {
            out.push("[timing]".to_string());
        } else if table {
            // A table's columns are as wide as their widest value, so a
            // changed timing can move the spaces of every row: compare the
            // cells, not the padding.
            let cells = mask_numbers(line, table, &mut nums);
            out.push(cells.split_whitespace().collect::<Vec<_>>().join(" "));
        } else {
            out.push(mask_numbers(line, table, &mut nums));
        }
    }
    (out.join("\n"), nums)
}

/// Numbers with a unit of time, size or throughput (and every number of a
/// benchmark table) become `#`; the others `N`, collected into `nums`.
fn mask_numbers(line: &str, table: bool, nums: &mut Vec<f64>) -> String {
    const UNITS: &[&str] = &[
        "ms", "µs", "us", "ns", "s", "GB/s", "TB/s", "TFLOPS", "GFLOPS", "MB", "KB", "GB",
    ];
    let chars: Vec<char> = line.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let starts_number = c.is_ascii_digit()
            && (i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_'));
        if !starts_number {
            out.push(c);
            i += 1;
            continue;
        }
        let mut j = i;
        while j < chars.len()
            && (chars[j].is_ascii_digit()
                || chars[j] == '.'
                || ((chars[j] == 'e' || chars[j] == 'E')
                    && j + 1 < chars.len()
                    && (chars[j + 1].is_ascii_digit() || chars[j + 1] == '-')))
        {
            j += if chars[j] == 'e' || chars[j] == 'E' {
                2
            } else {
                1
            };
        }
        let j = j.min(chars.len());
        let number: String = chars[i..j].iter().collect();
        let rest: String = chars[j..].iter().take(8).collect();
        let unit = rest.trim_start();
        let timed = UNITS.iter().any(|u| {
            unit.starts_with(u)
                && !unit[u.len()..]
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_alphanumeric())
        });
        if table || timed {
            out.push('#');
        } else {
            out.push('N');
            nums.push(number.parse().unwrap_or(f64::NAN));
        }
        i = j;
    }
    out
}

fn mask_devices(text: &str) -> String {
    let mut t = text.to_string();
    for (from, to) in [("NVIDIA ", "<device> "), ("/tmp/", "<tmp>/")] {
        t = t.replace(from, to);
    }
    t.lines()
        .map(|l| match l.find("<device> ") {
            Some(i) => format!("{}<device>", &l[..i]),
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn close(a: f64, b: f64) -> bool {
    a == b || (a - b).abs() <= 1e-6 + 1e-3 * b.abs() || (a.is_nan() && b.is_nan())
}

/// A comparable summary of one nbformat output.
fn summary(o: &Value) -> (String, String, Vec<f64>) {
    let kind = o["output_type"].as_str().unwrap_or("").to_string();
    match kind.as_str() {
        "stream" => {
            let (t, n) = masked(&join(&o["text"]), false);
            (format!("stream {}", o["name"].as_str().unwrap_or("")), t, n)
        }
        "error" => (
            kind,
            format!("{}: {}", join(&o["ename"]), join(&o["evalue"])),
            vec![],
        ),
        _ => {
            let data = &o["data"];
            let mut mimes: Vec<&String> = data
                .as_object()
                .map(|m| m.keys().collect())
                .unwrap_or_default();
            mimes.sort();
            let table = data.get("text/html").is_some();
            let picture = data.get("image/svg+xml").is_some();
            let (t, n) = if picture {
                // Pictures (and their text twins, braille plots) by kind only.
                (String::new(), vec![])
            } else {
                masked(&join(&data["text/plain"]), table)
            };
            (format!("{kind} {mimes:?}"), t, n)
        }
    }
}

/// Differences between saved and fresh outputs of one cell, as messages.
pub fn compare(saved: &[Value], fresh: &[Value]) -> Vec<String> {
    // Timing footers and progress displays come and go with timing, and the
    // CPU backend's one-line notice with the machine; leave them out.
    let keep = |o: &&Value| {
        let t = join(&o["data"]["text/plain"]);
        let notice =
            o["output_type"] == "stream" && join(&o["text"]).starts_with("tilebook: no GPU in use");
        !(notice
            || o["output_type"] == "display_data"
                && (t.starts_with('[') && t.contains("] grid (")
                    || t.contains("] ") && t.contains('/') && t.contains(" [=")))
    };
    let saved: Vec<&Value> = saved.iter().filter(keep).collect();
    let fresh: Vec<&Value> = fresh.iter().filter(keep).collect();
    let mut diffs = vec![];
    if saved.len() != fresh.len() {
        diffs.push(format!(
            "{} outputs saved, {} now",
            saved.len(),
            fresh.len()
        ));
    }
    for (k, (a, b)) in saved.iter().zip(&fresh).enumerate() {
        let (ka, ta, na) = summary(a);
        let (kb, tb, nb) = summary(b);
        if ka != kb {
            diffs.push(format!("output {}: saved {ka}, now {kb}", k + 1));
        } else if ta != tb
            || na.len() != nb.len()
            || na.iter().zip(&nb).any(|(x, y)| !close(*y, *x))
        {
            // The first line that differs, as it was written (numbers
            // unmasked, so a reader sees what changed).
            let (la, lb) = (plain_text(a), plain_text(b));
            let (al, bl): (Vec<&str>, Vec<&str>) = (la.lines().collect(), lb.lines().collect());
            let at = (0..al.len().max(bl.len()))
                .find(|&i| {
                    let x = al.get(i).map(|l| masked(l, false));
                    let y = bl.get(i).map(|l| masked(l, false));
                    match (x, y) {
                        (Some((tx, nx)), Some((ty, ny))) => {
                            tx != ty
                                || nx.len() != ny.len()
                                || nx.iter().zip(&ny).any(|(p, q)| !close(*q, *p))
                        }
                        _ => true,
                    }
                })
                .unwrap_or(0);
            diffs.push(format!(
                "output {} ({ka}), line {}:\n    saved: {}\n    now:   {}",
                k + 1,
                at + 1,
                al.get(at).copied().unwrap_or("(no line)"),
                bl.get(at).copied().unwrap_or("(no line)")
            ));
        }
    }
    diffs
}

/// The text of an output as written (stream text, or a display's plain text).
fn plain_text(o: &Value) -> String {
    match o["output_type"].as_str() {
        Some("stream") => join(&o["text"]),
        Some("error") => format!("{}: {}", join(&o["ename"]), join(&o["evalue"])),
        _ => join(&o["data"]["text/plain"]),
    }
}

/// Run a notebook again and report every cell whose outputs differ from the
/// saved ones. True when nothing differs.
pub fn check(file: &str, nb: &Value, mut session: Session) -> bool {
    let mut fresh = nb.clone();
    let _ = run_cells(&mut fresh, &mut session, file, true, false);
    let mut same = true;
    let (mut checked, mut differing) = (0, 0);
    let saved_cells = nb["cells"].as_array().cloned().unwrap_or_default();
    let fresh_cells = fresh["cells"].as_array().cloned().unwrap_or_default();
    for (i, (a, b)) in saved_cells.iter().zip(&fresh_cells).enumerate() {
        if a["cell_type"] != "code" {
            continue;
        }
        checked += 1;
        let empty = vec![];
        let diffs = compare(
            a["outputs"].as_array().unwrap_or(&empty),
            b["outputs"].as_array().unwrap_or(&empty),
        );
        if !diffs.is_empty() {
            same = false;
            differing += 1;
            println!("{file} cell {}:", i + 1);
            for d in diffs {
                println!("  {d}");
            }
        }
    }
    if same {
        println!("{file}: every output of {checked} code cells matches the saved one");
    } else {
        println!(
            "{file}: {differing} of {checked} code cells differ from the saved outputs \
             (timings, devices and benchmark tables are masked; numbers compared within 1e-3)"
        );
    }
    same
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timings_and_devices_are_masked_numbers_compared_with_tolerance() {
        let (a, na) = masked(
            "max difference: 0.0, took 12.5 ms at 2763 GB/s on NVIDIA H100 80GB HBM3",
            false,
        );
        let (b, nb) = masked(
            "max difference: 0.0, took 9.1 ms at 2811 GB/s on NVIDIA H200",
            false,
        );
        assert_eq!(a, b);
        assert_eq!(na, nb);
        // A benchmark table whose column widths changed with its timings.
        let (a, _) = masked("   n  time\n0  1.0  9.5\n1  2.0  10.25", true);
        let (b, _) = masked("   n  time\n0  1.0  10.5\n1  2.0  9.25", true);
        assert_eq!(a, b);
        let (_, x) = masked("sum 1000.0001", false);
        let (_, y) = masked("sum 1000.0", false);
        assert!(close(x[0], y[0]));
        let (_, z) = masked("sum 1002.0", false);
        assert!(!close(z[0], y[0]));
    }

    #[test]
    fn a_changed_value_is_reported_and_footers_are_ignored() {
        let saved = vec![
            json!({"output_type": "stream", "name": "stdout", "text": ["x = 3\n"]}),
            json!({"output_type": "display_data", "data": {"text/plain": ["[k] grid (1, 1, 1): 0.2 ms GPU"]}, "metadata": {}}),
        ];
        let same = vec![json!({"output_type": "stream", "name": "stdout", "text": ["x = 3\n"]})];
        assert!(compare(&saved, &same).is_empty());
        let changed = vec![json!({"output_type": "stream", "name": "stdout", "text": ["x = 4\n"]})];
        // The report shows the line as written, numbers and all.
        assert_eq!(
            compare(&saved, &changed),
            ["output 1 (stream stdout), line 1:\n    saved: x = 3\n    now:   x = 4"]
        );
        // The CPU backend's notice is not an output to compare.
        let mut noticed = changed.clone();
        noticed.insert(0, json!({"output_type": "stream", "name": "stderr", "text": ["tilebook: no GPU in use; kernels run on the CPU backend\n"]}));
        assert_eq!(compare(&changed, &noticed), Vec::<String>::new());
    }
}
