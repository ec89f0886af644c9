//! File tests for the tile IR and the front end, in the style of Cranelift's
//! `.clif` tests. A file's first line names the test:
//!
//! - `; test optimize` (`.tile`): parse, verify, run the pass pipeline, print;
//! - `; test roundtrip` (`.tile`): parse and print must give the input back;
//! - `; test verify-error` (`.tile`): the verifier must reject the input;
//! - `# test lower KERNEL SIGNATURE` (`.py`): lower one specialization.
//!
//! The expected output follows an `; expect:` (or `# expect:`) line, each line
//! prefixed with `; ` (or `# `). `TILE_BLESS=1 cargo test` rewrites the
//! expectations; a mismatch prints both texts.

use tilebook_frontend::SourceFile;
use tilebook_tests::root;
use tilebook_tir::{parse::parse_kernel, passes::optimize, print::print_kernel, verify::verify};

fn split(text: &str, comment: &str) -> (String, Option<String>) {
    let marker = format!("{comment} expect:");
    match text.find(&marker) {
        None => (text.to_string(), None),
        Some(i) => {
            let input = text[..i].to_string();
            let expected: String = text[i + marker.len()..]
                .lines()
                .skip(1)
                .map(|l| {
                    l.strip_prefix(&format!("{comment} "))
                        .or_else(|| l.strip_prefix(comment))
                        .unwrap_or(l)
                })
                .map(|l| format!("{l}\n"))
                .collect();
            (input, Some(expected))
        }
    }
}

fn run_file(path: &std::path::Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let header = text.lines().next().unwrap_or("");
    let is_py = path.extension().is_some_and(|e| e == "py");
    let comment = if is_py { "#" } else { ";" };
    let (input, expected) = split(&text, comment);
    let actual = if is_py {
        let mut words = header.trim_start_matches('#').split_whitespace();
        let (Some("test"), Some("lower"), Some(kernel)) =
            (words.next(), words.next(), words.next())
        else {
            return Err(format!("bad header {header:?}"));
        };
        let signature = words.collect::<Vec<_>>().join(" ");
        let source = SourceFile::new(path.file_name().unwrap().to_string_lossy(), input.clone());
        match tilebook_frontend::aot::lower_file(&source, kernel, &signature) {
            Ok(k) => {
                // Every lowered kernel must also round-trip through the text form.
                let printed = print_kernel(&k);
                let again =
                    print_kernel(&parse_kernel(&printed).map_err(|e| format!("reparse: {e}"))?);
                if again != printed {
                    return Err(format!(
                        "round trip changed the IR:\n{printed}\n---\n{again}"
                    ));
                }
                printed
            }
            Err(e) => e,
        }
    } else {
        let body: String = input
            .lines()
            .filter(|l| !l.starts_with(';'))
            .map(|l| format!("{l}\n"))
            .collect();
        let mut k = parse_kernel(&body).map_err(|e| format!("parse error: {e}"))?;
        match header.trim() {
            "; test roundtrip" => {
                let printed = print_kernel(&k);
                if printed != body {
                    return Err(format!(
                        "print(parse(text)) differs from the text:\n{printed}"
                    ));
                }
                return Ok(());
            }
            "; test optimize" => {
                verify(&k).map_err(|e| format!("input does not verify: {e}"))?;
                optimize(&mut k);
                print_kernel(&k)
            }
            "; test verify-error" => match verify(&k) {
                Ok(()) => return Err("the verifier accepted invalid IR".into()),
                Err(e) => format!("{e}\n"),
            },
            other => return Err(format!("unknown test header {other:?}")),
        }
    };
    if std::env::var("TILE_BLESS").is_ok_and(|v| v == "1") {
        let blessed: String = actual
            .lines()
            .map(|l| {
                if l.is_empty() {
                    format!("{comment}\n")
                } else {
                    format!("{comment} {l}\n")
                }
            })
            .collect();
        let input = input.trim_end_matches('\n');
        std::fs::write(path, format!("{input}\n{comment} expect:\n{blessed}"))
            .map_err(|e| e.to_string())?;
        return Ok(());
    }
    match expected {
        Some(e) if e == actual => Ok(()),
        Some(e) => Err(format!(
            "expected:\n{e}\nactual:\n{actual}\n(TILE_BLESS=1 to accept)"
        )),
        None => Err(format!(
            "no `{comment} expect:` section; actual:\n{actual}\n(TILE_BLESS=1 to write it)"
        )),
    }
}

#[test]
fn ir_file_tests() {
    let dir = root().join("tests/ir");
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    paths.sort();
    assert!(
        paths.len() >= 6,
        "expected the IR test files in {}",
        dir.display()
    );
    let failures: Vec<String> = paths
        .iter()
        .filter_map(|p| {
            run_file(p)
                .err()
                .map(|e| format!("{}: {e}", p.file_name().unwrap().to_string_lossy()))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A constexpr parameter's literal default stands when the signature leaves
/// it out, as it does at a launch; a default that is not a literal still
/// needs a value, and says so.
#[test]
fn signature_takes_constexpr_defaults() {
    let text = "import triton\nimport triton.language as tl\n\n@triton.jit\n\
                def k(x, n, BLOCK: tl.constexpr = 64, NEG: tl.constexpr = -2, \
                DT: tl.constexpr = tl.float16, ODD: tl.constexpr = 3 + 1):\n    \
                o = tl.arange(0, BLOCK)\n    \
                v = tl.load(x + o, mask=o < n).to(DT)\n    \
                tl.store(x + o, (v * NEG).to(tl.float32), mask=o < n)\n";
    let lower = |sig: &str| {
        let src = SourceFile::new("defaults.py", text);
        tilebook_frontend::aot::lower_file(&src, "k", sig).map(|k| print_kernel(&k))
    };
    let given = lower("*fp32:16, i32, BLOCK=64, NEG=-2, DT=tl.float16, ODD=4").unwrap();
    let defaulted = lower("*fp32:16, i32, ODD=4").unwrap();
    assert_eq!(given, defaulted);
    assert_ne!(given, lower("*fp32:16, i32, BLOCK=128, ODD=4").unwrap());
    let err = lower("*fp32:16, i32").unwrap_err();
    assert!(err.contains("`ODD` needs a value"), "{err}");
    let err = lower("*fp32:16, i32, ODD=4, num_warps=0").unwrap_err();
    assert!(
        err.contains("num_warps must be a power of two from 1 to 32, got 0"),
        "{err}"
    );
    let err = lower("*fp32:16, i32, ODD=4, num_stages=-2").unwrap_err();
    assert!(
        err.contains("num_stages must be from 0 to 64, got -2"),
        "{err}"
    );
}
