//! The shape of the code, checked: the runtime crates form a ladder
//! (tensors → kernels runtime → host bindings → session) with no crate
//! depending on one above it, the modules inside each crate import each
//! other without cycles, and no source file is over 1000 lines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

const LADDER: &[(&str, &str)] = &[
    ("runtime/tensor", "tilebook-tensor"),
    ("runtime/kernels", "tilebook-kernels"),
    ("runtime/host", "tilebook-host"),
    ("runtime/session", "tilebook-session"),
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if p.is_dir() {
            if !name.starts_with('.') && name != "target" {
                rust_files(&p, out);
            }
        } else if name.ends_with(".rs") {
            out.push(p);
        }
    }
}

/// The `[dependencies]` names of a manifest.
fn dependencies(manifest: &str) -> Vec<String> {
    let mut in_deps = false;
    let mut out = vec![];
    for line in manifest.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            in_deps = line == "[dependencies]";
            continue;
        }
        if in_deps {
            if let Some((name, _)) = line.split_once(['=', '.']) {
                out.push(name.trim().to_string());
            }
        }
    }
    out
}

#[test]
fn runtime_crates_depend_only_downwards() {
    for (i, (dir, _)) in LADDER.iter().enumerate() {
        let manifest = std::fs::read_to_string(root().join(dir).join("Cargo.toml")).unwrap();
        let deps = dependencies(&manifest);
        for (_, above) in &LADDER[i + 1..] {
            assert!(
                !deps.iter().any(|d| d == above),
                "{dir} depends on {above}, which sits above it"
            );
        }
    }
}

/// A crate's top-level modules and the ones each names through `crate::`.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut files = vec![];
    rust_files(src, &mut files);
    let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for f in &files {
        let rel = f.strip_prefix(src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy();
        let module = first.trim_end_matches(".rs").to_string();
        if module == "lib" || module == "main" {
            continue; // the crate root may name every module
        }
        let text = std::fs::read_to_string(f).unwrap();
        let mut named = BTreeSet::new();
        for (i, _) in text.match_indices("crate::") {
            let rest = &text[i + 7..];
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                for part in group[..end].split(',') {
                    named.insert(ident(part.trim()));
                }
            } else {
                named.insert(ident(rest));
            }
        }
        g.entry(module.clone()).or_default().extend(named);
    }
    let modules: BTreeSet<String> = g.keys().cloned().collect();
    for (m, deps) in g.iter_mut() {
        deps.retain(|d| d != m && modules.contains(d));
    }
    g
}

fn ident(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// A cycle in the graph, if there is one.
fn cycle(g: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        g: &BTreeMap<String, BTreeSet<String>>,
        m: &str,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == m) {
            let mut c = path[i..].to_vec();
            c.push(m.to_string());
            return Some(c);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for d in g.get(m).into_iter().flatten() {
            if let Some(c) = visit(g, d, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    g.keys().find_map(|m| visit(g, m, &mut vec![], &mut done))
}

#[test]
fn modules_inside_each_runtime_crate_import_without_cycles() {
    for (dir, _) in LADDER {
        let g = module_graph(&root().join(dir).join("src"));
        assert!(
            g.len() > 1 || *dir == "runtime/tensor",
            "{dir}: no modules found"
        );
        if let Some(c) = cycle(&g) {
            panic!(
                "{dir}: modules import each other in a circle: {}",
                c.join(" → ")
            );
        }
    }
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    let mut g = BTreeMap::new();
    g.insert("a".to_string(), BTreeSet::from(["b".to_string()]));
    g.insert("b".to_string(), BTreeSet::from(["c".to_string()]));
    g.insert("c".to_string(), BTreeSet::from(["a".to_string()]));
    assert_eq!(cycle(&g).map(|c| c.len()), Some(4));
    g.get_mut("c").unwrap().clear();
    assert_eq!(cycle(&g), None);
}

#[test]
fn no_source_file_is_over_1000_lines() {
    let mut files = vec![];
    for dir in ["compiler", "runtime", "repl", "jupyter", "tests", "bench"] {
        rust_files(&root().join(dir), &mut files);
    }
    assert!(files.len() > 50);
    let long: Vec<String> = files
        .iter()
        .filter_map(|f| {
            let n = std::fs::read_to_string(f).ok()?.lines().count();
            (n > 1000).then(|| format!("{} ({n} lines)", f.display()))
        })
        .collect();
    assert!(long.is_empty(), "over 1000 lines: {long:?}");
}
