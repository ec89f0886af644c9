//! Property tests (proptest) of the two text readers a user reaches: the
//! tile IR parser (`tilebook_tir::parse`) and the front end (`lower_file`).
//! Inputs are the committed seeds (`tests/ir/*.tile`, the kernels of
//! `tests/ir/*.py` and their expected IR) with random edits: deleted and
//! duplicated ranges, swapped characters, and tokens of each language
//! inserted anywhere. Whatever comes out, reading it must return a value or
//! an error, never panic; what reads back as a kernel must survive the
//! verifier, printing and the optimiser. CI runs the default number of
//! cases; a local run takes more with `PROPTEST_CASES=20000`. Failures are
//! kept by proptest in `proptest-regressions/` (commit them) and replayed
//! first.

use proptest::prelude::*;
use tilebook_frontend::SourceFile;
use tilebook_tests::root;

/// A seed program: its text, and for Python the kernel and AOT signature.
struct Seed {
    text: String,
    kernel: Option<(String, String)>,
    /// Whether the seed itself reads back (some expect an error).
    valid: bool,
}

fn seeds(python: bool) -> Vec<Seed> {
    let mut out = vec![];
    let mut files: Vec<_> = std::fs::read_dir(root().join("tests/ir"))
        .expect("tests/ir")
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    for p in files {
        let text = std::fs::read_to_string(&p).unwrap_or_default();
        match p.extension().and_then(|e| e.to_str()) {
            Some("tile") if !python => {
                // The kernel, without the file test's header and expectations.
                let kernel = text.split("; expect:").next().unwrap_or("");
                let text: String = kernel
                    .lines()
                    .filter(|l| !l.starts_with(';'))
                    .map(|l| format!("{l}\n"))
                    .collect();
                out.push(Seed {
                    text,
                    kernel: None,
                    valid: true,
                })
            }
            Some("py") => {
                let (source, expected) = text.split_once("# expect:").unwrap_or((&text, ""));
                if python {
                    let first = source.lines().next().unwrap_or("");
                    let Some(rest) = first.strip_prefix("# test lower ") else {
                        continue;
                    };
                    let Some((name, sig)) = rest.split_once(' ') else {
                        continue;
                    };
                    out.push(Seed {
                        text: source.to_string(),
                        kernel: Some((name.to_string(), sig.to_string())),
                        valid: expected.trim_start().starts_with("# kernel"),
                    });
                } else if !expected.is_empty() {
                    let ir: String = expected
                        .lines()
                        .map(|l| format!("{}\n", l.strip_prefix("# ").unwrap_or(l)))
                        .collect();
                    // Some files expect an error message, not IR.
                    if ir.trim_start().starts_with("kernel") {
                        out.push(Seed {
                            text: ir,
                            kernel: None,
                            valid: true,
                        });
                    }
                }
            }
            _ => {}
        }
    }
    assert!(!out.is_empty(), "no seeds");
    out
}

const IR_TOKENS: &[&str] = &[
    "%",
    "%1",
    "%999999",
    "=",
    ":",
    "<",
    ">",
    "x",
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    "-1",
    "0",
    "99999999999999999999",
    "fp32",
    "i1",
    "*fp16",
    "<1024x",
    "kernel @k(",
    "for",
    "yield",
    "if",
    "else",
    "load[mask]",
    "store",
    "const[",
    "\n",
    " ",
    "loc(",
    "\"",
    ";",
    "div=16",
    "nan",
    "inf",
    "reduce[sum, 0]",
    "dot",
    "splat",
    "addptr",
    "cmp[lt]",
    "\u{e9}",
    "\u{1f642}",
];

const PY_TOKENS: &[&str] = &[
    "(",
    ")",
    ":",
    "\n",
    "    ",
    "tl.",
    "tl.load(",
    "tl.arange(0, ",
    "if ",
    "for i in range(",
    "while ",
    "return",
    "0",
    "-1",
    "2**63",
    "1e308",
    "float('nan')",
    "x_ptr",
    "BLOCK_SIZE",
    "@triton.jit",
    "def ",
    "[",
    "]",
    "None",
    "tl.constexpr",
    ",",
    "=",
    "+",
    "//",
    "%",
    "lambda",
    "'",
    "\"",
    "#",
    "\t",
    "\u{e9}",
    "\u{1f642}",
    "tl.dot(",
    ".to(tl.float16)",
    "tl.static_range(",
    "tl.sum(",
    "axis=",
    "mask=",
    "global ",
    "break",
    "continue",
];

#[derive(Clone, Debug)]
enum Edit {
    Delete(usize, usize),
    Duplicate(usize, usize),
    Swap(usize, usize),
    Insert(usize, usize),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), 1usize..40).prop_map(|(a, n)| Edit::Delete(a, n)),
        (any::<usize>(), 1usize..80).prop_map(|(a, n)| Edit::Duplicate(a, n)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Swap(a, b)),
        (any::<usize>(), any::<usize>()).prop_map(|(a, t)| Edit::Insert(a, t)),
    ]
}

/// The seed's text with the edits applied (positions taken modulo its length).
fn mutate(text: &str, edits: &[Edit], tokens: &[&str]) -> String {
    let mut c: Vec<char> = text.chars().collect();
    for e in edits {
        let n = c.len().max(1);
        match *e {
            Edit::Delete(a, len) => {
                let a = a % n;
                let b = (a + len).min(c.len());
                c.drain(a.min(c.len())..b);
            }
            Edit::Duplicate(a, len) => {
                let a = a % n;
                let b = (a + len).min(c.len());
                let part: Vec<char> = c[a.min(c.len())..b].to_vec();
                let at = b.min(c.len());
                c.splice(at..at, part);
            }
            Edit::Swap(a, b) => {
                if !c.is_empty() {
                    let (a, b) = (a % c.len(), b % c.len());
                    c.swap(a, b);
                }
            }
            Edit::Insert(a, t) => {
                let at = (a % n).min(c.len());
                let tok: Vec<char> = tokens[t % tokens.len()].chars().collect();
                c.splice(at..at, tok);
            }
        }
    }
    c.into_iter().collect()
}

fn config() -> ProptestConfig {
    ProptestConfig {
        // PROPTEST_CASES overrides this (a long local run).
        cases: std::env::var("PROPTEST_CASES")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(512),
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::WithSource("proptest-regressions"),
        )),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_tile_ir_parser_never_panics(seed in any::<usize>(), edits in prop::collection::vec(edit(), 1..8)) {
        let seeds = seeds(false);
        let s = &seeds[seed % seeds.len()];
        let text = mutate(&s.text, &edits, IR_TOKENS);
        if let Ok(mut k) = tilebook_tir::parse::parse_kernel(&text) {
            if tilebook_tir::verify::verify(&k).is_ok() {
                let printed = tilebook_tir::print::print_kernel(&k);
                prop_assert!(tilebook_tir::parse::parse_kernel(&printed).is_ok(), "{printed}");
                tilebook_tir::passes::optimize(&mut k);
                let _ = tilebook_tir::verify::verify(&k);
            }
        }
    }

    #[test]
    fn the_front_end_never_panics(seed in any::<usize>(), edits in prop::collection::vec(edit(), 1..8)) {
        let seeds = seeds(true);
        let s = &seeds[seed % seeds.len()];
        let text = mutate(&s.text, &edits, PY_TOKENS);
        let (kernel, signature) = s.kernel.clone().unwrap_or_default();
        let src = SourceFile::new("mutant.py", &text);
        if let Ok(mut k) = tilebook_frontend::aot::lower_file(&src, &kernel, &signature) {
            tilebook_tir::passes::optimize(&mut k);
            prop_assert!(tilebook_tir::verify::verify(&k).is_ok(), "{text}");
        }
    }
}

/// The seeds themselves read back (so the edits start from valid programs).
#[test]
fn the_seeds_read_back() {
    for s in seeds(false) {
        if let Err(e) = tilebook_tir::parse::parse_kernel(&s.text) {
            panic!("{e:?}\n{}", s.text);
        }
    }
    for s in seeds(true).into_iter().filter(|s| s.valid) {
        let (kernel, signature) = s.kernel.clone().unwrap_or_default();
        let src = SourceFile::new("seed.py", &s.text);
        tilebook_frontend::aot::lower_file(&src, &kernel, &signature)
            .unwrap_or_else(|e| panic!("{kernel}: {e}"));
    }
}
