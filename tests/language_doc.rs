//! `docs/language.md`, the list of every `torch.*`, `triton.*`, `tl.*` and
//! `tilebook.*` name the session provides, is generated from the session's
//! own documentation (what `help(name)` prints: the registries' doc strings
//! and `builtins.txt`), and this test fails when the file is not what the
//! code would generate. `TILEBOOK_BLESS=1` rewrites it.

use tilebook_session::Session;

/// (heading, what to import, the name it is bound to in programs).
const MODULES: &[(&str, &str, &str)] = &[
    ("Kernel language: `tl.*`", "triton.language", "tl"),
    (
        "`tl.extra.cuda.libdevice.*` (also `triton.language.extra.libdevice`)",
        "triton.language.extra.cuda.libdevice",
        "libdevice",
    ),
    ("`triton.*`", "triton", "triton"),
    ("`triton.testing.*`", "triton.testing", "triton.testing"),
    ("`torch.*`", "torch", "torch"),
    ("`torch.nn.functional.*`", "torch.nn.functional", "F"),
    ("`torch.cuda.*`", "torch.cuda", "torch.cuda"),
    ("`tilebook.*`", "tilebook", "tilebook"),
];

fn cell(s: &mut Session, code: &str) -> String {
    let r = s.run_cell(code);
    assert!(r.ok, "{code}\n{}", r.text());
    r.text()
}

fn reference() -> String {
    let mut s = Session::new();
    s.announce = false;
    s.timing = false;
    let mut md = String::from(
        "# What tilebook provides\n\n\
         Every name of the kernel language and of the host modules that tilebook\n\
         provides, with the first line of what `help(name)` says. Generated from\n\
         the session's own documentation by `tests/language_doc.rs` (which fails\n\
         when this file is out of date; `TILEBOOK_BLESS=1 cargo test -p\n\
         tilebook-tests --test language_doc` rewrites it). A name that is not\n\
         here is not available; the error for it suggests the closest one.\n",
    );
    for (heading, module, shown) in MODULES {
        let names = cell(
            &mut s,
            &format!(
                "import {module} as _m\nprint('\\n'.join(n for n in dir(_m) if not n.startswith('_')))"
            ),
        );
        md.push_str(&format!("\n## {heading}\n\n| name | |\n| --- | --- |\n"));
        for name in names.lines() {
            let r = s.run_cell(&format!("help(_m.{name})"));
            let text = r.text();
            let mut lines = text.lines().map(str::trim);
            let first = lines.next().unwrap_or("");
            // The first sentence of the paragraph after the first line.
            let sentence = |rest: &mut dyn Iterator<Item = &str>| {
                let para: Vec<&str> = rest.take_while(|l| !l.is_empty()).collect();
                let para = para.join(" ");
                match para.find(". ") {
                    Some(i) => para[..=i].to_string(),
                    None => para,
                }
            };
            // Functions print their signature first; other values a line
            // about themselves; names without documentation say only that.
            let (sig, what) = if first.ends_with(": a tilebook builtin") {
                (format!("{shown}.{name}"), String::new())
            } else if first.contains('(') && !first.contains(" = ") {
                (first.to_string(), sentence(&mut lines))
            } else if first.starts_with('<') {
                // A Python object (a function or class of the prelude):
                // its docstring, never its repr (which holds an address).
                let doc = cell(
                    &mut s,
                    &format!("print((getattr(_m.{name}, '__doc__', None) or '').strip())"),
                );
                let mut doc_lines = doc.lines().map(str::trim);
                (format!("{shown}.{name}"), sentence(&mut doc_lines))
            } else {
                (format!("{shown}.{name}"), first.to_string())
            };
            let cell_text = |t: &str| t.replace('|', "\\|");
            md.push_str(&format!(
                "| `{}` | {} |\n",
                cell_text(&sig),
                cell_text(&what)
            ));
        }
    }
    md
}

#[test]
fn docs_language_md_is_current() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/language.md");
    let want = reference();
    if std::env::var_os("TILEBOOK_BLESS").is_some() {
        std::fs::write(&path, &want).expect("write docs/language.md");
        return;
    }
    let have = std::fs::read_to_string(&path).unwrap_or_default();
    if have != want {
        let first = have
            .lines()
            .zip(want.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(have.lines().count().min(want.lines().count()));
        panic!(
            "docs/language.md is out of date (first difference at line {}: {:?} here, {:?} generated); \
             run TILEBOOK_BLESS=1 cargo test -p tilebook-tests --test language_doc",
            first + 1,
            have.lines().nth(first),
            want.lines().nth(first)
        );
    }
}
