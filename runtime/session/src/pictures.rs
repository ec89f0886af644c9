//! Pictures of what a launch did, from the CPU backend's access trace
//! (`tilebook.trace(kernel[grid], args...)`):
//!
//! - `visiting_order(tensor, wave=None)`: which program wrote each output
//!   tile, numbered in launch order, as an SVG grid; with `wave=n`, the
//!   first n programs are highlighted and the distinct bytes they loaded
//!   from each input are counted (the L2 working set that grouped ordering
//!   shrinks in the matmul tutorial);
//! - `mask_view(pid=0)`: each load and store of one program as its block of
//!   lanes, coloured by whether the mask let the lane through.
//!
//! The trace records every lane of every load and store (up to
//! `tilebook_cpu::runtime::TRACE_LIMIT`), in program order.

use crate::tensor::Tensor;
use crate::trace::TraceData;
use crate::value::R;
use crate::value::{Exc, Object, Val};
use crate::Engine;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::rc::Rc;

fn data_of(s: &Engine, o: &Object) -> R<Rc<TraceData>> {
    match crate::value::attr_of(o, "_id") {
        Some(Val::Int(i)) => s
            .traces
            .get(i as usize)
            .cloned()
            .ok_or_else(|| Exc::new("RuntimeError", "this trace belongs to a reset session")),
        _ => Err(Exc::new("InternalError", "a Trace without its data")),
    }
}

/// Methods of a `Trace` object.
pub(crate) fn method(s: &mut Engine, o: &Object, name: &str, a: &crate::value::Args) -> R<Val> {
    let d = data_of(s, o)?;
    match name {
        "visiting_order" => {
            let Val::Tensor(t) = a.req(0, "tensor")? else {
                return Err(Exc::type_error(
                    "visiting_order(tensor): pass the output tensor",
                ));
            };
            let wave = match a.get(1, "wave") {
                Some(Val::None) | None => None,
                Some(v) => Some(crate::value::to_int(&v)?.max(1) as u64),
            };
            let (svg, text) = visiting_order(&d, &t, wave)?;
            s.display(vec![
                ("image/svg+xml".into(), svg),
                ("text/plain".into(), text),
            ]);
            Ok(Val::None)
        }
        "mask_view" => {
            let pid = match a.get(0, "pid") {
                None => [0, 0, 0],
                Some(Val::Int(x)) => [x as u32, 0, 0],
                Some(v) => {
                    let items = s.iterate(&v)?;
                    let mut p = [0u32; 3];
                    for (i, x) in items.iter().take(3).enumerate() {
                        p[i] = crate::value::to_int(x)? as u32;
                    }
                    p
                }
            };
            let (svg, text) = mask_view(&d, pid)?;
            s.display(vec![
                ("image/svg+xml".into(), svg),
                ("text/plain".into(), text),
            ]);
            Ok(Val::None)
        }
        _ => Err(Exc::new(
            "AttributeError",
            format!("'Trace' object has no attribute '{name}' (visiting_order, mask_view)"),
        )),
    }
}

/// (row, column) of an element offset in a tensor's storage, for tensors of
/// one or two dimensions.
fn coords(t: &Tensor, elem: usize) -> Option<(usize, usize)> {
    let rel = elem as isize - t.offset as isize;
    match (t.shape.as_slice(), t.strides.as_slice()) {
        ([n], [s]) if *s > 0 => {
            let i = (rel / s) as usize;
            (rel >= 0 && rel % s == 0 && i < *n).then_some((0, i))
        }
        ([m, n], [s0, s1]) if *s0 > 0 && *s1 > 0 => {
            let (outer, inner, so, si, swap) = if s0 >= s1 {
                (*m, *n, *s0, *s1, false)
            } else {
                (*n, *m, *s1, *s0, true)
            };
            if rel < 0 {
                return None;
            }
            let (o, rest) = ((rel / so) as usize, rel % so);
            let i = (rest / si) as usize;
            if o >= outer || i >= inner || rest % si != 0 {
                return None;
            }
            Some(if swap { (i, o) } else { (o, i) })
        }
        _ => None,
    }
}

/// Colour for position `i` of `n` (light yellow → dark blue).
fn ramp(i: u64, n: u64) -> String {
    let t = if n <= 1 {
        0.0
    } else {
        i as f64 / (n - 1) as f64
    };
    ramp_colour(t)
}

/// Colour for `t` in [0, 1] (light yellow → dark blue).
pub(crate) fn ramp_colour(t: f64) -> String {
    let mix = |a: f64, b: f64| (a + (b - a) * t).round() as u8;
    format!(
        "#{:02x}{:02x}{:02x}",
        mix(255.0, 8.0),
        mix(237.0, 48.0),
        mix(160.0, 107.0)
    )
}

fn visiting_order(d: &TraceData, t: &Tensor, wave: Option<u64>) -> R<(String, String)> {
    if t.shape.len() > 2 || t.shape.is_empty() {
        return Err(Exc::value_error(
            "visiting_order draws tensors of one or two dimensions",
        ));
    }
    let (rows, cols) = match t.shape.as_slice() {
        [n] => (1, *n),
        [m, n] => (*m, *n),
        _ => unreachable!(),
    };
    let [lo, hi] = t.storage_bounds();
    let size = t.dtype.size_bytes() as u64;
    // The box of elements each program stored into `t`.
    let mut boxes: BTreeMap<u64, (usize, usize, usize, usize)> = BTreeMap::new();
    for a in &d.accesses {
        let site = &d.sites[a.site as usize];
        if !a.active || site.what != "store" || a.addr < lo || a.addr >= hi {
            continue;
        }
        let Some((r, c)) = coords(t, ((a.addr - lo) / size) as usize) else {
            continue;
        };
        let b = boxes.entry(d.linear(a.pid)).or_insert((r, c, r, c));
        *b = (b.0.min(r), b.1.min(c), b.2.max(r), b.3.max(c));
    }
    if boxes.is_empty() {
        return Err(Exc::value_error(format!(
            "no program of {} stored into that tensor",
            d.kernel
        )));
    }
    // Launch order: programs sorted by linear id, numbered from 0.
    let order: HashMap<u64, u64> = boxes
        .keys()
        .enumerate()
        .map(|(i, p)| (*p, i as u64))
        .collect();
    let n = boxes.len() as u64;
    let width = 480.0;
    let scale = width / cols as f64;
    let height = (rows as f64 * scale).clamp(24.0, 960.0);
    let yscale = height / rows as f64;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{}\" font-family=\"sans-serif\">\n",
        width + 2.0,
        height + 40.0
    );
    svg.push_str(&format!(
        "<text x=\"1\" y=\"14\" font-size=\"13\">{}: launch order of the output tiles</text>\n",
        d.kernel
    ));
    let mut text_grid: BTreeMap<(usize, usize), u64> = BTreeMap::new();
    for (pid, (r0, c0, r1, c1)) in &boxes {
        let i = order[pid];
        let (x, y) = (1.0 + *c0 as f64 * scale, 20.0 + *r0 as f64 * yscale);
        let (w, h) = ((c1 - c0 + 1) as f64 * scale, (r1 - r0 + 1) as f64 * yscale);
        let in_wave = wave.is_some_and(|w| i < w);
        svg.push_str(&format!(
            "<rect x=\"{x:.1}\" y=\"{y:.1}\" width=\"{w:.1}\" height=\"{h:.1}\" fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\"/>\n",
            ramp(i, n),
            if in_wave { "#d62728" } else { "#ffffff" },
            if in_wave { 2.5 } else { 0.5 }
        ));
        let fs = (w.min(h) * 0.4).min(14.0);
        if fs >= 6.0 {
            let colour = if (i as f64) < n as f64 * 0.5 {
                "#000"
            } else {
                "#fff"
            };
            svg.push_str(&format!(
                "<text x=\"{:.1}\" y=\"{:.1}\" font-size=\"{fs:.1}\" text-anchor=\"middle\" dominant-baseline=\"central\" fill=\"{colour}\">{i}</text>\n",
                x + w / 2.0,
                y + h / 2.0
            ));
        }
        text_grid.insert((*r0, *c0), i);
    }
    // The first wave's input footprint: distinct bytes loaded per tensor.
    let mut footprint = String::new();
    if let Some(w) = wave {
        let mut bytes: BTreeMap<String, HashSet<u64>> = BTreeMap::new();
        for a in &d.accesses {
            let site = &d.sites[a.site as usize];
            if !a.active
                || site.what != "load"
                || order.get(&d.linear(a.pid)).is_none_or(|&i| i >= w)
            {
                continue;
            }
            if let Some((_, name, _)) = d.tensor_of(a.addr) {
                bytes.entry(name.clone()).or_default().insert(a.addr);
            }
        }
        let parts: Vec<String> = bytes
            .iter()
            .map(|(name, addrs)| {
                let sz = d
                    .tensors
                    .iter()
                    .find(|(_, n, _)| n == name)
                    .map_or(1, |(_, _, t)| t.dtype.size_bytes()) as f64;
                format!("{name} {:.1} KB", addrs.len() as f64 * sz / 1024.0)
            })
            .collect();
        footprint = format!(
            "the first {w} programs (outlined) load {} (distinct bytes)",
            parts.join(", ")
        );
        svg.push_str(&format!(
            "<text x=\"1\" y=\"{:.1}\" font-size=\"12\">{footprint}</text>\n",
            height + 36.0
        ));
    }
    svg.push_str("</svg>\n");
    // Text: the order numbers laid out as the tiles are.
    let tile_rows: Vec<usize> = text_grid
        .keys()
        .map(|k| k.0)
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let width_digits = (n.max(1) - 1).to_string().len();
    let mut text = format!(
        "{}: launch order of the tiles of a {rows}x{cols} output\n",
        d.kernel
    );
    for r in tile_rows {
        let line: Vec<String> = text_grid
            .iter()
            .filter(|((rr, _), _)| *rr == r)
            .map(|(_, i)| {
                // The first wave's tiles in brackets (outlined in the SVG).
                if wave.is_some_and(|w| *i < w) {
                    format!("[{i:>width_digits$}]")
                } else {
                    format!(" {i:>width_digits$} ")
                }
            })
            .collect();
        text.push_str(line.join("").trim_end());
        text.push('\n');
    }
    if !footprint.is_empty() {
        text.push_str(&footprint.replace("(outlined)", "[in brackets]"));
        text.push('\n');
    }
    Ok((svg, text.trim_end().to_string()))
}

/// One site's lanes in one program: the first execution's mask bits and how
/// many times the site ran.
struct SiteLanes {
    site: usize,
    first: Vec<bool>,
    runs: usize,
    active: usize,
    total: usize,
}

fn mask_view(d: &TraceData, pid: [u32; 3]) -> R<(String, String)> {
    let mut per_site: BTreeMap<usize, SiteLanes> = BTreeMap::new();
    for a in d.accesses.iter().filter(|a| a.pid == pid) {
        let site = a.site as usize;
        let lanes: usize = d.sites[site].shape.iter().product::<usize>().max(1);
        let e = per_site.entry(site).or_insert(SiteLanes {
            site,
            first: vec![],
            runs: 0,
            active: 0,
            total: 0,
        });
        if e.total.is_multiple_of(lanes) {
            e.runs += 1;
        }
        if e.runs == 1 {
            e.first.push(a.active);
        }
        e.total += 1;
        e.active += a.active as usize;
    }
    if per_site.is_empty() {
        return Err(Exc::value_error(format!(
            "program {pid:?} of {} made no loads or stores (the grid is {:?})",
            d.kernel, d.grid
        )));
    }
    let mut text = format!(
        "{} program {:?}: lanes of each load and store (█ active, · masked off)\n",
        d.kernel, pid
    );
    let mut svg_rows = String::new();
    let mut widest: usize = 0;
    let mut y = 24.0;
    let cell = 6.0;
    for sl in per_site.values() {
        let site = &d.sites[sl.site];
        let name = d
            .tensors
            .iter()
            .find(|(i, _, _)| Some(*i) == site.param)
            .map_or("?", |(_, n, _)| n.as_str());
        let shape = &site.shape;
        let (r, c) = match shape.as_slice() {
            [] => (1, 1),
            [n] => (n.div_ceil(64), (*n).min(64)),
            [m, n] => (*m, *n),
            more => (
                more[..more.len() - 1].iter().product(),
                more[more.len() - 1],
            ),
        };
        let label = format!(
            "line {} {} {name}{}: {} of {} lanes active{}",
            site.loc.line,
            site.what,
            if shape.is_empty() {
                String::new()
            } else {
                format!(" {shape:?}")
            },
            sl.active,
            sl.total,
            if sl.runs > 1 {
                format!(" over {} runs (first run shown)", sl.runs)
            } else {
                String::new()
            }
        );
        text.push_str(&label);
        text.push('\n');
        // Text: at most 8 rows of 64 characters per site.
        for row in 0..r.min(8) {
            let line: String = (0..c.min(64))
                .map(|col| match sl.first.get(row * c + col) {
                    Some(true) => '█',
                    Some(false) => '·',
                    None => ' ',
                })
                .collect();
            text.push_str(&format!("  {line}\n"));
        }
        if r > 8 {
            text.push_str(&format!("  ... {} more rows\n", r - 8));
        }
        svg_rows.push_str(&format!(
            "<text x=\"2\" y=\"{:.1}\" font-size=\"12\">{label}</text>\n",
            y + 10.0
        ));
        y += 16.0;
        let (rr, cc) = (r.min(64), c.min(128));
        widest = widest.max(cc);
        let fill = if site.what == "store" {
            "#2ca02c"
        } else {
            "#1f77b4"
        };
        for row in 0..rr {
            for col in 0..cc {
                let on = sl.first.get(row * c + col).copied().unwrap_or(false);
                svg_rows.push_str(&format!(
                    "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"{cell}\" height=\"{cell}\" fill=\"{}\"/>\n",
                    2.0 + col as f64 * cell,
                    y + row as f64 * cell,
                    if on { fill } else { "#dddddd" }
                ));
            }
        }
        y += rr as f64 * cell + 10.0;
    }
    let svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{:.0}\" font-family=\"sans-serif\">\n<text x=\"2\" y=\"14\" font-size=\"13\">{} program {:?}: blue loads, green stores, grey lanes masked off</text>\n{svg_rows}</svg>\n",
        (2.0 + widest as f64 * cell + 4.0).max(520.0),
        y,
        d.kernel,
        pid
    );
    Ok((svg, text.trim_end().to_string()))
}
