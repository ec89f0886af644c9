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
/// The backend a notebook's saved outputs came from: recorded by `tilebook
/// run --inplace` (`metadata.tilebook.backend`), else read from its
/// outputs (a GPU's name appears only where one ran them).
pub fn saved_backend(nb: &Value) -> &'static str {
    match nb["metadata"]["tilebook"]["backend"].as_str() {
        Some("cuda") => return "cuda",
        Some("cpu") => return "cpu",
        _ => {}
    }
    let text = serde_json::to_string(&nb["cells"]).unwrap_or_default();
    if text.contains("NVIDIA ") {
        "cuda"
    } else {
        "cpu"
    }
}

/// Record which backend produced the outputs (see `saved_backend`).
pub fn set_backend_metadata(nb: &mut Value, backend: &str) {
    nb["metadata"]["tilebook"] = json!({ "backend": backend });
}

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
        // Speed-ups ("fused is 3.4x the unfused version").
        "x",
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
    for (from, to) in [
        ("NVIDIA ", "<device> "),
        ("CPU backend", "<device> "),
        ("/tmp/", "<tmp>/"),
    ] {
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

/// Whether an output's content depends on the device that ran it beyond
/// what masking covers: benchmark tables and pictures (timings, speeds),
/// the autotuner's report.
/// Compared only when the saved outputs came from the same backend.
fn device_dependent(o: &Value) -> bool {
    let data = &o["data"];
    // The autotuner's report: which configs fit this GPU, which one won.
    if o["output_type"] == "stream" && join(&o["text"]).starts_with("autotune ") {
        return true;
    }
    o["output_type"] != "stream"
        && o["output_type"] != "error"
        && (data.get("text/html").is_some()
            || data.get("image/svg+xml").is_some()
            || data.get("image/png").is_some())
}

/// Whether a line states a timing, a speed or a speed-up (what differs
/// between devices even when every result is right).
fn timed_line(line: &str) -> bool {
    let mut nums = vec![];
    mask_numbers(line, false, &mut nums).matches('#').count() > line.matches('#').count()
}

/// An output as another backend would compare it: stream lines that state
/// timings or speeds are left out (`None` when nothing else is left).
fn without_timed_lines(o: &Value) -> Option<Value> {
    if o["output_type"] != "stream" {
        return Some(o.clone());
    }
    let text = join(&o["text"]);
    let kept: Vec<&str> = text
        .split_inclusive('\n')
        .filter(|l| !timed_line(&mask_devices(l)))
        .collect();
    if kept.is_empty() && !text.is_empty() {
        return None;
    }
    let mut o = o.clone();
    o["text"] = json!(kept);
    Some(o)
}

/// What comparing one cell found.
#[derive(Default, Debug, PartialEq)]
pub struct Compared {
    pub diffs: Vec<String>,
    /// Outputs compared, and outputs left out as device-dependent.
    pub compared: usize,
    pub skipped: usize,
}

/// Differences between saved and fresh outputs of one cell, as messages.
#[cfg(test)]
fn compare(saved: &[Value], fresh: &[Value]) -> Vec<String> {
    compare_across(saved, fresh, false).diffs
}

/// `compare`, where `cross` says the saved outputs came from another
/// backend: device-dependent outputs (see `device_dependent`) are counted
/// as skipped rather than compared.
pub fn compare_across(saved: &[Value], fresh: &[Value], cross: bool) -> Compared {
    let mut result = Compared::default();
    let (saved, fresh): (Vec<Value>, Vec<Value>) = if cross {
        let portable = |v: &[Value]| -> Vec<Value> {
            v.iter()
                .filter(|o| !device_dependent(o))
                .filter_map(without_timed_lines)
                .collect()
        };
        let s = portable(saved);
        result.skipped = saved.len() - s.len();
        (s, portable(fresh))
    } else {
        (saved.to_vec(), fresh.to_vec())
    };
    let (saved, fresh) = (&saved[..], &fresh[..]);
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
    result.compared = saved.len().min(fresh.len());
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
    result.diffs = diffs;
    result
}

/// The text of an output as written (stream text, or a display's plain text).
fn plain_text(o: &Value) -> String {
    match o["output_type"].as_str() {
        Some("stream") => join(&o["text"]),
        Some("error") => format!("{}: {}", join(&o["ename"]), join(&o["evalue"])),
        _ => join(&o["data"]["text/plain"]),
    }
}

/// The cell tag (`metadata.tags`) of a cell whose outputs depend on the
/// device throughout (what the hardware schedules, say): compared only
/// against outputs saved on the same backend, as nbval's
/// `nbval-ignore-output` would skip them.
pub const DEVICE_TAG: &str = "tilebook-device-dependent";

fn tagged(cell: &Value, tag: &str) -> bool {
    cell["metadata"]["tags"]
        .as_array()
        .is_some_and(|t| t.iter().any(|x| x == tag))
}

/// Run a notebook again and report every cell whose outputs differ from the
/// saved ones. True when nothing differs. `backend` is the one running it
/// now: where the saved outputs came from another, device-dependent outputs
/// are skipped and the summary says how many.
pub fn check(file: &str, nb: &Value, mut session: Session, backend: &str) -> bool {
    let mut fresh = nb.clone();
    let _ = run_cells(&mut fresh, &mut session, file, true, false);
    let saved_on = saved_backend(nb);
    let cross = saved_on != backend;
    let (mut cells, mut differing, mut compared, mut skipped, mut differ) = (0, 0, 0, 0, 0);
    let saved_cells = nb["cells"].as_array().cloned().unwrap_or_default();
    let fresh_cells = fresh["cells"].as_array().cloned().unwrap_or_default();
    for (i, (a, b)) in saved_cells.iter().zip(&fresh_cells).enumerate() {
        if a["cell_type"] != "code" {
            continue;
        }
        cells += 1;
        let empty = vec![];
        let saved_outputs = a["outputs"].as_array().unwrap_or(&empty);
        if cross && tagged(a, DEVICE_TAG) {
            skipped += saved_outputs.len();
            continue;
        }
        let r = compare_across(
            saved_outputs,
            b["outputs"].as_array().unwrap_or(&empty),
            cross,
        );
        compared += r.compared;
        skipped += r.skipped;
        if !r.diffs.is_empty() {
            differing += 1;
            differ += r.diffs.len();
            println!("{file} cell {}:", i + 1);
            for d in r.diffs {
                println!("  {d}");
            }
        }
    }
    let across = if cross {
        format!(
            ", {skipped} skipped as device-dependent (saved on {saved_on}, run now on {backend})"
        )
    } else {
        String::new()
    };
    println!(
        "{file}: {cells} code cells, {compared} outputs compared{across}, {differ} differ \
         (timings and device names are masked; numbers compared within 1e-3)"
    );
    if differing > 0 {
        println!("{file}: {differing} of {cells} code cells differ from the saved outputs");
    }
    differing == 0
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
    fn across_backends_only_portable_outputs_are_compared() {
        let table = json!({"output_type": "display_data", "data": {"text/html": ["<table></table>"], "text/plain": ["n 1"]}, "metadata": {}});
        let saved = vec![
            json!({"output_type": "stream", "name": "stdout", "text": ["max difference: 0.0\n", "fused is 3.4x the unfused version\n", "took 2.5 ms\n"]}),
            table.clone(),
            json!({"output_type": "stream", "name": "stderr", "text": ["autotune k: 16 configs in 1.2 s; best BLOCK: 64\n"]}),
        ];
        let fresh = vec![
            json!({"output_type": "stream", "name": "stdout", "text": ["max difference: 0.0\n", "fused is 1.9x the unfused version\n", "took 40.0 ms\n"]}),
            table,
            json!({"output_type": "stream", "name": "stderr", "text": ["autotune k: 16 configs in 9.0 s; best BLOCK: 32\n"]}),
        ];
        let r = compare_across(&saved, &fresh, true);
        assert_eq!((r.compared, r.skipped), (1, 2), "{r:?}");
        assert!(r.diffs.is_empty(), "{r:?}");
        // A wrong result still differs across backends.
        let mut wrong = fresh.clone();
        wrong[0]["text"] = json!(["max difference: 0.5\n"]);
        assert_eq!(compare_across(&saved, &wrong, true).diffs.len(), 1);
        // On the same backend the autotuner's report is compared (its choice).
        assert_eq!(compare_across(&saved, &fresh, false).diffs.len(), 1);
        // The device banner is a device on both sides.
        let (a, _) = masked(
            "NVIDIA H100 80GB HBM3 (cuda, driver 580), tilebook 0.1.0",
            false,
        );
        let (b, _) = masked("CPU backend (cpu, no GPU in use), tilebook 0.1.0", false);
        assert_eq!(a, b);
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
