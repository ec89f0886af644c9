//! Line magics through the session engine (CPU backend).

use tilebook_tests::{ok, session};

const KERNEL: &str = r#"
import torch
import triton
import triton.language as tl

@triton.jit
def inc(x_ptr, n, B: tl.constexpr):
    o = tl.arange(0, B)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)

x = torch.zeros(10, device='cuda')
"#;

#[test]
fn time_and_timeit_run_the_statement_and_report() {
    let mut s = session();
    ok(&mut s, KERNEL);
    let out = ok(&mut s, "%time inc[(1,)](x, 10, B=16)");
    assert!(out.starts_with("Wall time: "), "{out}");
    let out = ok(&mut s, "%timeit inc[(1,)](x, 10, B=16)");
    assert!(
        out.contains(" per loop (median of ") && out.contains("wall clock"),
        "{out}"
    );
    // Every run of both magics really launched the kernel.
    let out = ok(&mut s, "print(x[0].item() > 2, (x == x[0]).all().item())");
    assert_eq!(out, "True True\n");
}

#[test]
fn stage_magics_show_the_latest_specialization() {
    let mut s = session();
    ok(&mut s, KERNEL);
    let r = s.run_cell("%ir inc");
    assert!(
        !r.ok && r.text().contains("has not been compiled yet"),
        "{}",
        r.text()
    );
    ok(&mut s, "inc[(1,)](x, 10, B=16)");
    let ir = ok(&mut s, "%ir inc");
    assert!(
        ir.starts_with("// inc [") && ir.contains("kernel @inc("),
        "{ir}"
    );
    let clif = ok(&mut s, "%clif inc");
    assert!(clif.contains("function"), "{clif}");
    // Without a GPU, %ptx and %llvm compile the same tile IR for sm_90.
    let ptx = ok(&mut s, "%ptx inc");
    assert!(
        ptx.contains("compiled for sm_90 (no GPU in this session")
            && ptx.contains(".target sm_90")
            && ptx.contains(".entry inc"),
        "{ptx}"
    );
    assert!(ok(&mut s, "%llvm inc").contains("define"), "llvm");
}

#[test]
fn launches_like_the_one_before_reuse_its_code_and_only_that() {
    // A launch specialized like the previous one skips building and looking
    // up the cache key; anything that changes the key must still choose its
    // own code: 1, 1.0 and True are three constants, as in Triton.
    let mut s = session();
    ok(&mut s, KERNEL);
    ok(
        &mut s,
        "@triton.jit\ndef add_c(x_ptr, n, C: tl.constexpr, B: tl.constexpr):\n    o = tl.arange(0, B)\n    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + C, mask=o < n)\n",
    );
    let out = ok(
        &mut s,
        "y = torch.zeros(10, device='cuda')\nfor c in [1, 1.0, True, 2, 2, 1, 3.5, 3.5]:\n    add_c[(1,)](y, 10, C=c, B=16)\nprint(y[0].item(), y[9].item())",
    );
    assert_eq!(out, "15.0 15.0\n");
    let out = ok(&mut s, "%cache info");
    assert!(out.contains("add_c: 5 specialization(s)"), "{out}");
    ok(&mut s, "%cache clear");
    ok(&mut s, "add_c[(1,)](y, 10, C=2, B=16)");
    let out = ok(&mut s, "%cache info");
    assert!(out.contains("add_c: 1 specialization(s)"), "{out}");
    // Alignment and integer specializations change between launches too.
    let out = ok(
        &mut s,
        "z = torch.zeros(40, device='cuda')\nfor off, n in [(0, 16), (1, 16), (0, 1), (0, 16), (3, 7)]:\n    add_c[(1,)](z[off:], n, C=1, B=16)\nprint(z.tolist()[:20])",
    );
    let want: Vec<f32> = {
        let mut z = [0f32; 40];
        for (off, n) in [(0, 16), (1, 16), (0, 1), (0, 16), (3, 7)] {
            for v in &mut z[off..off + n] {
                *v += 1.0;
            }
        }
        z[..20].to_vec()
    };
    let want: Vec<String> = want.iter().map(|v| format!("{v:.1}")).collect();
    assert_eq!(out, format!("[{}]\n", want.join(", ")));
    // `kernel[grid]` with the grid object of the launch before reuses its
    // launcher only when that object cannot change: a list can.
    let out = ok(
        &mut s,
        "w = torch.zeros(16, device='cuda')\ng = [1]\nt = (2,)\nfor _ in range(2):\n    add_c[g](w, 16, C=1, B=16)\n    g[0] = 3\nfor _ in range(2):\n    add_c[t](w, 16, C=1, B=16)\nprint(w[0].item(), w[15].item())",
    );
    assert_eq!(out, "8.0 8.0\n");
}

#[test]
fn who_reset_lsmagic_and_unknown_magics() {
    let mut s = session();
    ok(&mut s, KERNEL);
    assert_eq!(ok(&mut s, "%who"), "inc\tx\n");
    assert!(ok(&mut s, "%lsmagic").contains("%timeit"));
    let r = s.run_cell("%reset");
    assert!(!r.ok && r.text().contains("%reset -f"), "{}", r.text());
    ok(&mut s, "%reset -f");
    assert_eq!(ok(&mut s, "%who"), "Interactive namespace is empty.\n");
    let r = s.run_cell("%frobnicate");
    assert!(
        !r.ok && r.text().contains("`%lsmagic` lists them") && !r.text().contains("did you mean"),
        "{}",
        r.text()
    );
    let r = s.run_cell("%timit 1");
    assert!(
        !r.ok && r.text().contains("did you mean `%timeit`?"),
        "{}",
        r.text()
    );
}

#[test]
fn cells_that_launch_kernels_end_with_a_timing_footer() {
    let mut s = session();
    s.timing = true;
    ok(&mut s, KERNEL);
    let r = s.run_cell("inc[(1,)](x, 10, B=16)\ninc[(1,)](x, 10, B=16)");
    assert!(r.ok, "{}", r.text());
    let text = r.text();
    let footer = text.lines().last().unwrap();
    assert!(footer.starts_with("[inc] grid (1, 1, 1) x2: "), "{text}");
    assert!(footer.contains(" ms CPU wall, compiled in "), "{text}");
    // Launches inside a measurement are not the cell's own.
    let text = ok(&mut s, "%timeit inc[(1,)](x, 10, B=16)");
    assert!(!text.contains("[inc]"), "{text}");
    ok(&mut s, "%timing off");
    assert_eq!(ok(&mut s, "inc[(1,)](x, 10, B=16)"), "");
}

#[test]
fn cell_magics_time_and_timeit_a_whole_cell() {
    let mut s = session();
    ok(&mut s, KERNEL);
    let out = ok(&mut s, "%%time\ninc[(1,)](x, 10, B=16)\nprint('ran')");
    assert!(out.starts_with("ran\nWall time: "), "{out}");
    let out = ok(&mut s, "%%timeit\nprint('quiet')\ninc[(1,)](x, 10, B=16)");
    assert!(
        !out.contains("quiet") && out.contains(" per loop "),
        "{out}"
    );
    // The body keeps its line numbers in errors.
    let r = s.run_cell("%%time\ny = 1\nz = undefined_name");
    assert!(
        !r.ok && r.text().contains("3 │ z = undefined_name"),
        "{}",
        r.text()
    );
    let r = s.run_cell("y = 1\n%%time\nz = 2");
    assert!(
        !r.ok && r.text().contains("must be the first line"),
        "{}",
        r.text()
    );
}

#[test]
fn help_and_question_marks_document_builtins_kernels_and_values() {
    let mut s = session();
    ok(&mut s, KERNEL);
    let out = ok(&mut s, "help(tl.load)");
    assert!(out.starts_with("tl.load(pointer, mask=None"), "{out}");
    assert!(out.contains("Where mask is False"), "{out}");
    assert_eq!(ok(&mut s, "tl.arange?"), ok(&mut s, "?tl.arange"));
    assert!(ok(&mut s, "triton.testing.do_bench?").contains("L2 cache flushed"));
    // A kernel: its parameters, then its specializations once compiled.
    let out = ok(&mut s, "inc?");
    assert!(
        out.contains("@triton.jit kernel inc(x_ptr, n, B: tl.constexpr)")
            && out.contains("Compiled specializations: none yet"),
        "{out}"
    );
    ok(&mut s, "inc[(1,)](x, 10, B=16)");
    let out = ok(&mut s, "inc?");
    assert!(
        out.contains("Compiled specializations (1):")
            && out
                .contains("[x_ptr: *fp32:16, n: i32, B=16]  CPU backend, num_warps=4; compiled in"),
        "{out}"
    );
    // `??` adds the source.
    assert!(ok(&mut s, "inc??").contains("tl.store(x_ptr + o"));
    let out = ok(&mut s, "x?");
    assert_eq!(
        out,
        "x: tensor of shape [10], dtype torch.float32, device 'cuda:0'\n"
    );
    let out = ok(&mut s, "def f(a, b=2):\n    return a + b\nf??");
    assert_eq!(out, "def f(a, b=...)\ndef f(a, b=2):\n    return a + b\n");
    let r = s.run_cell("nothing_here?");
    assert_eq!(r.error().map(|e| e.0), Some("NameError"));
}

#[test]
fn cache_config_env_and_load_magics() {
    let mut s = session();
    ok(&mut s, KERNEL);
    ok(&mut s, "inc[(1,)](x, 10, B=16)");
    let out = ok(&mut s, "%cache");
    assert!(
        out.contains("inc: 1 specialization(s)") && out.contains("On disk: off"),
        "{out}"
    );
    ok(&mut s, "%cache clear");
    assert!(ok(&mut s, "%cache info").contains("inc: 0 specialization(s)"));

    // %config sets launch defaults: the next launch compiles for 8 warps.
    assert!(ok(&mut s, "%config").contains("num_warps = 4"));
    ok(&mut s, "%config num_warps=8");
    ok(&mut s, "inc[(1,)](x, 10, B=16)");
    assert!(ok(&mut s, "inc?").contains("num_warps=8"));
    let c = ok(&mut s, "print(inc.warmup(x, 10, B=16).metadata.num_warps)");
    assert_eq!(c, "8\n");
    let r = s.run_cell("%config num_warps=3");
    assert!(!r.ok && r.text().contains("power of two"), "{}", r.text());
    // Checked GPU mode is a setting too (the CPU backend always checks).
    assert!(ok(&mut s, "%config").contains("check_bounds = false"));
    ok(&mut s, "%config check_bounds=True");
    assert!(ok(&mut s, "%config").contains("check_bounds = true"));
    let r = s.run_cell("%config check_bounds=maybe");
    assert!(!r.ok && r.text().contains("True or False"), "{}", r.text());
    ok(&mut s, "%config check_bounds=False");

    assert_eq!(
        ok(&mut s, "%env TILEBOOK_TEST_MAGIC=abc"),
        "env: TILEBOOK_TEST_MAGIC=abc\n"
    );
    assert_eq!(ok(&mut s, "%env TILEBOOK_TEST_MAGIC"), "abc\n");

    // %load asks the front end to put the file in the next cell.
    let path = std::env::temp_dir().join(format!("tilebook-load-{}.py", std::process::id()));
    std::fs::write(&path, "y = 41 + 1\n").unwrap();
    let r = s.run_cell(&format!("%load {}", path.display()));
    assert!(r.ok);
    let next: Vec<_> = r
        .outputs
        .iter()
        .filter_map(|o| match o {
            tilebook_session::Output::NextInput { text } => Some(text.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        next,
        vec![format!("# %load {}\ny = 41 + 1\n", path.display())]
    );
    assert!(r.text().contains("1 lines from"), "{}", r.text());
    let _ = std::fs::remove_file(&path);
    // Only Python sources that are regular text files; nothing else is read.
    for (arg, why) in [
        ("/etc/shadow", "only Python source files"),
        ("/dev/zero.py", "cannot read it"),
        ("/nonexistent/x.py", "cannot read it"),
    ] {
        let r = s.run_cell(&format!("%load {arg}"));
        let (kind, msg, _) = r.error().expect("refused");
        assert_eq!(kind, "UsageError");
        assert!(msg.contains(why), "{msg}");
    }
    let fifo_dir =
        std::env::temp_dir().join(format!("tilebook-load-dir-{}.py", std::process::id()));
    std::fs::create_dir_all(&fifo_dir).unwrap();
    let r = s.run_cell(&format!("%load {}", fifo_dir.display()));
    assert!(
        r.error()
            .is_some_and(|e| e.1.contains("not a regular file")),
        "{}",
        r.text()
    );
    let _ = std::fs::remove_dir(&fifo_dir);
    let out = ok(&mut s, "%lsmagic");
    for m in ["%cache", "%config", "%env", "%load", "%help", "%%timeit"] {
        assert!(out.contains(m), "{m} missing from {out}");
    }
    let d = ok(&mut s, "%device cpu");
    assert!(
        d.starts_with("CPU backend (cpu, no GPU in use), tilebook "),
        "{d}"
    );
}

#[test]
fn completion_offers_names_attributes_members_and_magics() {
    let mut s = session();
    ok(&mut s, KERNEL);
    let c = |s: &mut tilebook_session::Session, text: &str| {
        let r = s.complete(text, text.len());
        (r.start, r.matches)
    };
    assert_eq!(c(&mut s, "tl.ara"), (3, vec!["arange".to_string()]));
    assert_eq!(c(&mut s, "y = x.sha"), (6, vec!["shape".to_string()]));
    assert_eq!(
        c(&mut s, "in"),
        (
            0,
            vec!["in".into(), "inc".into(), "input".into(), "int".into()]
        )
    );
    let (start, m) = c(&mut s, "%ti");
    assert_eq!(
        (start, m),
        (0, vec!["%time".into(), "%timeit".into(), "%timing".into()])
    );
    assert_eq!(
        c(&mut s, "import tri").1,
        vec![
            "triton",
            "triton.language",
            "triton.runtime",
            "triton.testing"
        ]
    );
    assert_eq!(c(&mut s, "triton.testing.do").1, vec!["do_bench"]);
    // Every member completion offers resolves as an attribute of its module.
    for module in [
        "torch",
        "torch.cuda",
        "triton",
        "triton.testing",
        "tl",
        "math",
        "tilebook",
    ] {
        ok(&mut s, "import tilebook, math");
        let (_, members) = c(&mut s, &format!("{module}."));
        assert!(
            members.len() > 1 || module == "tilebook",
            "{module}: {members:?}"
        );
        for m in members {
            let r = s.run_cell(&format!("_ = {module}.{m}"));
            assert!(r.ok, "{module}.{m}: {}", r.text());
        }
    }
}

/// Magics inside blocks are run as IPython runs them (the multi-GPU
/// tutorial switches `%config bench_devices` inside a loop), and `%cache
/// clear tuning` forgets tuning results while compiled code stays.
#[test]
fn magics_run_inside_blocks_and_tuning_results_can_be_cleared() {
    let mut s = session();
    let out = ok(
        &mut s,
        "for n in [1, 2]:\n    if n == 1:\n        %config bench_devices=1\n    else:\n        %config bench_devices=2\n    %config",
    );
    assert!(
        out.contains("bench_devices = 1") && out.contains("bench_devices = 2"),
        "{out}"
    );
    let out = ok(
        &mut s,
        "import torch, triton\nimport triton.language as tl\n\
         @triton.autotune(configs=[triton.Config({'B': 64}), triton.Config({'B': 128})], key=['n'])\n\
         @triton.jit\ndef k(x_ptr, n, B: tl.constexpr):\n    offs = tl.program_id(0) * B + tl.arange(0, B)\n    tl.store(x_ptr + offs, offs, mask=offs < n)\n\
         x = torch.zeros(300, dtype=torch.int32)\nk[lambda m: (triton.cdiv(300, m['B']),)](x, 300)\nprint(k.compile_count)",
    );
    assert!(out.trim_end().ends_with('2'), "{out}");
    let out = ok(
        &mut s,
        "%cache clear tuning\nk[lambda m: (triton.cdiv(300, m['B']),)](x, 300)\nprint(k.compile_count, x[299].item())",
    );
    assert!(out.contains("Cleared the autotuning results"), "{out}");
    // Tuned again without compiling again.
    assert!(out.trim_end().ends_with("2 299"), "{out}");
}
