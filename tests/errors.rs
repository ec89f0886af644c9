//! Malformed cells: every syntax, name, type, shape, constexpr, unsupported
//! and launch error is a diagnostic naming the line (with a caret in the
//! rendered text), never a panic, and the session keeps working afterwards.
//!
//! Each case: the cell, the expected error class, a fragment of the message,
//! and the 1-based line of the cell the error must point at.

use tilebook_tests::{ok, session};

const PRELUDE: &str = "import torch\nimport triton\nimport triton.language as tl\n";

/// A kernel that reads `x[i]` for `i < N` and writes `out`, launched at the end.
fn kernel_cell(body: &str, launch: &str) -> String {
    format!("@triton.jit\ndef k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):\n{body}\n{launch}\n")
}

const LAUNCH: &str = "k[(1,)](torch.zeros(64), torch.zeros(64), 64, BLOCK=64)";

struct Case {
    cell: String,
    kind: &'static str,
    fragment: &'static str,
    line: u32,
}

fn case(cell: impl Into<String>, kind: &'static str, fragment: &'static str, line: u32) -> Case {
    Case {
        cell: cell.into(),
        kind,
        fragment,
        line,
    }
}

fn kcase(body: &str, kind: &'static str, fragment: &'static str, line: u32) -> Case {
    case(kernel_cell(body, LAUNCH), kind, fragment, line)
}

fn cases() -> Vec<Case> {
    vec![
        // Syntax.
        case("x = = 1", "SyntaxError", "", 1),
        case("def f(:\n    pass", "SyntaxError", "", 1),
        case("for i in range(3)\n    pass", "SyntaxError", "", 1),
        case("y = 1\n  x = 2", "SyntaxError", "indent", 2),
        case("x = [1, 2\ny = 3", "SyntaxError", "", 2),
        // Host names, types and values.
        case("a = 1\ny = undefined_name + 1", "NameError", "undefined_name", 2),
        case("x = 1 + 'a'", "TypeError", "unsupported operand", 1),
        case("len(5)", "TypeError", "has no len()", 1),
        case("x = 1\n\ny = x / 0", "ZeroDivisionError", "division by zero", 3),
        case("a, b = (1, 2, 3)", "ValueError", "too many values to unpack", 1),
        case("import numpy", "ModuleNotFoundError", "numpy", 1),
        case("torch.nn.functional.gelu(torch.zeros(3))", "AttributeError", "gelu", 1),
        case("x = torch.zeros(3) + torch.zeros(4)", "RuntimeError", "must match", 1),
        case("class A:\n    pass\nA().missing", "AttributeError", "missing", 3),
        case("assert 1 == 2, 'nope'", "AssertionError", "nope", 1),
        case(
            format!("y = {}1{}", "abs(".repeat(30000), ")".repeat(30000)),
            "RecursionError",
            "nests",
            1,
        ),
        case(
            format!("x = {}1", "1+".repeat(100000)),
            "RecursionError",
            "nests",
            1,
        ),
        case(
            "def deep(n):\n    return 0 if n == 0 else 1 + deep(n - 1)\ndeep(100000)",
            "RecursionError",
            "recursion",
            2,
        ),
        case("d = {'a': 1}\nd['b']", "KeyError", "'b'", 2),
        case("[1, 2][5]", "IndexError", "out of range", 1),
        case("f'{1:q}'", "ValueError", "Unknown format code", 1),
        // Kernel: compile-time errors point at the kernel line.
        kcase("    offs = tl.arange(0, 10)", "ValueError", "power of 2", 3),
        kcase("    offs = tl.arange(0, n)", "TypeError", "constexpr integer", 3),
        kcase("    a = tl.zeros((32, 16), dtype=tl.float16)\n    b = tl.zeros((32, 16), dtype=tl.float16)\n    c = tl.dot(a, b)", "ValueError", "inner dimensions", 5),
        kcase("    a = tl.zeros((8, 8), dtype=tl.float16)\n    c = tl.dot(a, a)", "ValueError", "at least 16", 4),
        kcase("    a = tl.zeros((16, 16), dtype=tl.float16)\n    b = tl.zeros((16, 16), dtype=tl.float32)\n    c = tl.dot(a, b)", "TypeError", "same dtype", 5),
        kcase("    acc = tl.zeros((BLOCK,), dtype=tl.float32)\n    for i in range(n):\n        acc = acc.to(tl.float16)", "TypeError", "loop-carried variable `acc`", 4),
        kcase("    a = tl.arange(0, 32)\n    b = tl.arange(0, 64)\n    c = a + b", "ValueError", "incompatible shapes", 5),
        kcase("    v = tl.load(n)", "TypeError", "tl.load needs pointers", 3),
        kcase("    offs = tl.arange(0, BLOCK)\n    tl.store(out_ptr + offs, tl.zeros((32,), dtype=tl.float32))", "ValueError", "does not match", 4),
        kcase("    for i in range(n):\n        break", "UnsupportedError", "`break`", 4),
        kcase("    v = tl.nonexistent(1)", "AttributeError", "is not available in tilebook", 3),
        kcase("    tl.static_assert(BLOCK == 32, 'BLOCK must be 32')", "AssertionError", "static_assert failed: BLOCK must be 32", 3),
        kcase("    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n    y = x // 2", "TypeError", "`//` needs integer operands", 4),
        kcase("    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n    y = ~x", "TypeError", "`~` needs an integer operand", 4),
        kcase("    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n    y = x & x", "TypeError", "needs integer operands", 4),
        kcase("    return 1", "TypeError", "cannot return a value", 2),
        kcase("    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n    y = x[0]", "UnsupportedError", "`:` and `None`", 4),
        kcase("    f = lambda v: v", "UnsupportedError", "lambdas", 3),
        kcase("    if n > 0:\n        return", "UnsupportedError", "`return` inside a runtime", 4),
        kcase("    x = tl.zeros((4, 8), dtype=tl.float32)\n    y = tl.reshape(x, (4, 4))", "ValueError", "cannot reshape", 4),
        kcase("    x = tl.zeros((6,), dtype=tl.float32)", "ValueError", "powers of 2", 3),
        kcase("    x = tl.zeros((8,), dtype=tl.float32)\n    y = x.to(tl.int16, bitcast=True)", "ValueError", "bitcast needs equal widths", 4),
        kcase("    x = tl.arange(0, BLOCK)\n    if x > 3:\n        n = 1", "TypeError", "must be a scalar", 4),
        kcase("    for i in [1, 2]:\n        pass", "UnsupportedError", "must iterate over range", 3),
        kcase("    for i in range(0, 2.5):\n        pass", "TypeError", "integer scalars", 3),
        kcase("    p = tl.program_id(3)", "ValueError", "axis must be 0, 1 or 2", 3),
        kcase("    v = undefined_helper(1)", "NameError", "undefined_helper", 3),
        kcase("    v = tl.load(x_ptr + tl.arange(0, BLOCK), bogus=1)", "TypeError", "unexpected keyword argument `bogus`", 3),
        // Launch-time errors.
        case(kernel_cell("    pass", "k(torch.zeros(4), torch.zeros(4), 4, BLOCK=4)"), "TypeError", "launched as", 4),
        case(kernel_cell("    pass", "k[(1,)](torch.zeros(4), torch.zeros(4), 4)"), "TypeError", "missing required argument: 'BLOCK'", 4),
        case(kernel_cell("    pass", "k[(1,)](torch.zeros(4), torch.zeros(4), 4, BLOCK=4, BOGUS=1)"), "TypeError", "unexpected keyword argument 'BOGUS'", 4),
        case(kernel_cell("    pass", "k[(1,)](torch.zeros(4), torch.zeros(4), 4, BLOCK=4, maxnreg=0)"), "ValueError", "maxnreg must be a positive number of registers, got 0", 4),
        case(kernel_cell("    pass", "k[(1,)](torch.zeros(4), torch.zeros(4), 4, BLOCK=4, num_warps=0)"), "ValueError", "num_warps must be a power of two from 1 to 32, got 0", 4),
        case(kernel_cell("    pass", "k[(1,)](torch.zeros(4), torch.zeros(4), 4, BLOCK=4, num_warps=6)"), "ValueError", "num_warps must be a power of two from 1 to 32, got 6", 4),
        case(kernel_cell("    pass", "k[(1,)](torch.zeros(4), torch.zeros(4), 4, BLOCK=4, num_stages=-1)"), "ValueError", "num_stages must be from 0 to 64, got -1", 4),
        case(kernel_cell("    pass", "k[(1.5,)](torch.zeros(4), torch.zeros(4), 4, BLOCK=4)"), "TypeError", "grid dimension 0 must be an int", 4),
        case(kernel_cell("    pass", "k[(1,)](torch.zeros(4), torch.zeros(4), 4, BLOCK=torch.zeros(1))"), "TypeError", "not a compile-time value", 4),
        case(
            "t = torch.zeros(3)\n@triton.jit\ndef g(p):\n    tl.store(p, t)\ng[(1,)](torch.zeros(1))",
            "NameError",
            "is a Tensor in the session",
            4,
        ),
        // Run-time errors in checked mode name the kernel line, program and offset.
        case(
            kernel_cell(
                "    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)\n    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=offs < n))",
                "k[(2,)](torch.zeros(100), torch.zeros(100), 100, BLOCK=64)",
            ),
            "IndexError",
            "out-of-bounds store in kernel `k` at line 4: program (1, 0, 0) accessed element 100 of `out_ptr`, which has 100 elements",
            4,
        ),
        case(
            kernel_cell("    offs = tl.arange(0, BLOCK) - 3\n    v = tl.load(x_ptr + offs)\n    tl.store(out_ptr + tl.arange(0, BLOCK), v)", LAUNCH),
            "IndexError",
            "out-of-bounds load in kernel `k` at line 4: program (0, 0, 0) accessed element -3 of `x_ptr`",
            4,
        ),
        case(
            kernel_cell("    offs = tl.arange(0, BLOCK)\n    tl.device_assert(offs < 60, 'offset too large')", LAUNCH),
            "AssertionError",
            "element 60: offset too large",
            4,
        ),
        kcase("    tl.atomic_and(out_ptr + tl.arange(0, BLOCK), 1.0)", "TypeError", "tl.atomic_and does not support tl.float32 elements", 3),
        kcase("    tl.atomic_add(out_ptr, 1.0, sem='strong')", "ValueError", "sem must be \"relaxed\", \"acquire\", \"release\" or \"acq_rel\", got \"strong\"", 3),
        kcase("    tl.atomic_cas(x_ptr, 1.0)", "TypeError", "atomic_cas() is missing the argument `val`", 3),
        kcase("    tl.atomic_add(n, 1)", "TypeError", "tl.atomic_add needs pointers", 3),
        // Integer division by zero and a zero range step stop the launch (issue 19).
        kcase("    offs = tl.arange(0, BLOCK)\n    tl.store(out_ptr + offs, (offs + 1) // (offs - 7))", "ZeroDivisionError", "integer division by zero in kernel `k` at line 4: program (0, 0, 0), element 7", 4),
        kcase("    offs = tl.arange(0, BLOCK)\n    tl.store(out_ptr + offs, (offs + 1) % (n - 64))", "ZeroDivisionError", "integer modulo by zero in kernel `k` at line 4", 4),
        kcase("    for i in range(0, n, 0):\n        pass", "ValueError", "range() step must not be zero", 3),
        case(kernel_cell("    acc = 0\n    for i in range(0, 10, n - 64):\n        acc += i\n    tl.store(out_ptr, acc)", LAUNCH), "ValueError", "range() step must not be zero in kernel `k` at line 4", 4),
        // Found by the fuzzer (repl/tests/fuzz.rs): these panicked.
        kcase("    offs = tl.aξrange(0, BLOCK)", "AttributeError", "`tl.aξrange` is not available in tilebook", 3),
        case("triton.next_power_of_2(2**63 + 1)", "OverflowError", "9223372036854775809 does not fit in a 64-bit integer", 1),
        case("triton.next_power_of_2(2**63 - 1)", "OverflowError", "next_power_of_2(9223372036854775807) does not fit in 64 bits", 1),
        kcase("    x = abs(-2**62 * 2)", "OverflowError", "abs() of the smallest 64-bit integer", 3),
        // Found by the 20 000-mutant run: the VM's big integers overflowed
        // their size arithmetic (a panic), and tolist of a 2^32-element
        // tensor aborted on allocation.
        case("x = 1\ny = 10**2**63 - 1", "MemoryError", "more than 10^18 digits", 2),
        case("z = 3**10**9", "MemoryError", "about 477121254 digits", 1),
        case("t = torch.empty(2**32).tolist()", "MemoryError", "could not allocate", 1),
        // Repetition past free memory aborted on allocation
        // (host/src/vm/memory_guard.rs).
        case("s = 'a' * 10**12", "MemoryError", "could not allocate 1000000000000 bytes", 1),
        case("x = 1\nl = 10**12 * [0]", "MemoryError", "could not allocate 8000000000000 bytes", 2),
        case("b = bytearray(b'ab')\nb *= 10**12", "MemoryError", "could not allocate 2000000000000 bytes", 2),
        case("t = (1, 2, 3) * 10**12", "MemoryError", "could not allocate 24000000000000 bytes", 1),
        case("class L(list):\n    pass\nl = L([0]) * 10**12", "MemoryError", "could not allocate 8000000000000 bytes", 3),
        case("s = 'ab'.__mul__(10**12)", "MemoryError", "could not allocate 2000000000000 bytes", 1),
        // Sizes given as arguments aborted likewise (host/src/vm/size_guard.rs).
        case("b = bytes(10**12)", "MemoryError", "could not allocate 1000000000000 bytes", 1),
        case("x = 0\nb = bytearray(10**12)", "MemoryError", "could not allocate 1000000000000 bytes", 2),
        case("s = 'x'.ljust(10**12, '-')", "MemoryError", "could not allocate 1000000000000 bytes", 1),
        case("s = b'x'.zfill(width=10**12)", "MemoryError", "could not allocate 1000000000000 bytes", 1),
        case("s = 'a\\tb'.expandtabs(10**12)", "MemoryError", "could not allocate 1000000000003 bytes", 1),
        case("l = list(range(10**12))", "MemoryError", "could not allocate 8000000000000 bytes", 1),
        case("t = tuple(range(10**12))", "MemoryError", "could not allocate 8000000000000 bytes", 1),
        case("x = 1\ny = x << 10**13", "MemoryError", "could not allocate 1250000000000 bytes", 2),
        case("b = (5).to_bytes(10**13, 'big')", "MemoryError", "could not allocate 10000000000000 bytes", 1),
        case("s = ','.join(['ab' * 10**6] * 10**6)", "MemoryError", "could not allocate 2000000999999 bytes", 1),
        // Format widths past 2^32 came back wrapped: f'{1:>4294967301}' was 5 characters.
        case("s = f'{1:>1000000000000}'", "MemoryError", "could not allocate 1000000000000 bytes", 1),
        case("x = 2\ns = '{:.{}f}'.format(1.5, 10**12)", "MemoryError", "could not allocate 1000000000000 bytes", 2),
        case("s = format('ab', '^' + '9' * 30)", "ValueError", "Too many decimal digits in format string", 1),
        // Sizes are checked arithmetic; allocation failure is a MemoryError
        // (issue 19: these overflowed silently, wrote past a buffer, or aborted).
        case("x = 1\ny = torch.empty((2**62, 2**62))", "RuntimeError", "a tensor of shape (4611686018427387904, 4611686018427387904) has too many elements", 2),
        case("z = torch.zeros((2**32, 2**32))", "RuntimeError", "has too many elements", 1),
        case("torch.full((2**32, 2**32), 3.).sum()", "RuntimeError", "has too many elements", 1),
        case("torch.empty(2**62)", "RuntimeError", "needs more bytes than memory can address", 1),
        case("t = torch.empty(10**14)", "MemoryError", "could not allocate 400000000000000 bytes", 1),
        case("t = torch.ones(1).expand(2**33, 2**33)", "RuntimeError", "has too many elements", 1),
        case("t = torch.ones(1).expand(2**21, 2**21)\nt.sum()", "MemoryError", "could not allocate", 2),
        case("torch.ones(2**21, 1) @ torch.ones(1, 2**21)", "MemoryError", "could not allocate", 1),
        case("torch.ones(6).view(-1, 2**62, 2**62)", "RuntimeError", "too many elements", 1),
        // Moving elements within a block: a bad index is reported by the CPU
        // backend, not read from outside the block.
        kcase("    offs = tl.arange(0, BLOCK)\n    x = tl.load(x_ptr + offs)\n    y = tl.gather(x, offs + 1, 0)\n    tl.store(out_ptr + offs, y)", "IndexError", "tl.gather index out of range: indices along axis 0 must lie in 0..64", 5),
        kcase("    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n    y = tl.gather(x, tl.arange(0, 8)[:, None], 0)", "ValueError", "must have the rank of the source", 4),
        kcase("    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n    a, b = tl.split(x)", "ValueError", "split() needs a last dimension of size 2", 4),
        kcase("    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n    y = tl.cat(x, x[:, None])", "ValueError", "cat() in tilebook joins two blocks of one shape", 4),
        kcase("    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n    y = tl.histogram(x, 8)", "TypeError", "histogram() takes a 1-d block of integers", 4),
        kcase("    p = tl.make_block_ptr(x_ptr, (n,), (1,), (0,), (BLOCK,), (0,))\n    y = tl.load(p, boundary_check=(1,))", "ValueError", "boundary_check dim 1 is out of range for rank 1", 4),
        kcase("    p = tl.make_block_ptr(x_ptr, (n, n), (1,), (0, 0), (BLOCK, 8), (1, 0))", "ValueError", "shape, strides and offsets must have one length", 3),
        kcase("    a = tl.load(x_ptr)\n    p = a.to(tl.pointer_type(tl.float32))", "TypeError", "only 64-bit integers (addresses) convert to pointers", 4),
        kcase("    q = x_ptr.to(tl.float32)", "TypeError", "a pointer converts only to int64/uint64", 3),
        kcase("    a = tl.load(x_ptr).to(tl.int64)\n    p = a.to(tl.pointer_type(tl.float32))\n    tl.store(out_ptr, tl.load(p + 1000))", "IndexError", "outside every tensor it may address", 5),
        // Found by the fuzzer (seed 11, tests/fuzz/shuffles.py with N = 2**20):
        // a histogram's comparison block of 2^40 elements wrapped the CPU
        // backend's frame size (a crash); both limits are now errors.
        kcase("    x = tl.load(x_ptr + tl.arange(0, 2048)).to(tl.int32)\n    h = tl.histogram(x, 1024)", "ValueError", "compares them in a 2048 x 1024 block", 4),
        case(format!("{PRELUDE}@triton.jit\ndef big(x_ptr):\n    x = tl.load(x_ptr + tl.arange(0, 1048576))\n    tl.store(x_ptr + tl.arange(0, 1048576), tl.sort(x))\nbig[(1,)](torch.zeros(1048576))\n"), "CompilationError", "MB of block storage per program", 8),
        kcase("    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n    y = tl.associative_scan(x, 0, 3)", "TypeError", "combine_fn must be a @triton.jit function", 4),
        // Inline PTX: GPU only, one result dtype, pack=1.
        kcase("    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n    y = tl.inline_asm_elementwise('mov.b32 $0, $1;', '=r,r', [x], dtype=tl.float32, is_pure=True, pack=1)\n    tl.store(out_ptr + tl.arange(0, BLOCK), y)", "CompilationError", "inline PTX (tl.inline_asm_elementwise, tl.extra.cuda.globaltimer/smid) runs only on the GPU", 6),
        kcase("    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n    y = tl.inline_asm_elementwise('mov.b32 $0, $1;', '=r,r', [x], dtype=tl.float32, is_pure=True, pack=2)", "UnsupportedError", "pack=2 is not supported", 4),
        kcase("    x = tl.load(x_ptr + tl.arange(0, BLOCK))\n    y = tl.inline_asm_elementwise('mov.b32 $0, $1;', '=r,r', [x], dtype=(tl.float32, tl.int32), is_pure=True, pack=1)", "UnsupportedError", "several result dtypes", 4),
        kcase("    t = tl.extra.cuda.globaltimer()\n    tl.store(out_ptr, t.to(tl.float32))", "CompilationError", "runs only on the GPU", 5),
    ]
}

#[test]
fn malformed_cells_report_kind_message_and_line() {
    let cases = cases();
    assert!(cases.len() >= 40, "only {} cases", cases.len());
    let mut failures = vec![];
    for (i, c) in cases.iter().enumerate() {
        let mut s = session();
        ok(&mut s, PRELUDE);
        let r = s.run_cell(&c.cell);
        let Some((kind, message, line)) = r.error() else {
            failures.push(format!("case {i}: no error for\n{}", c.cell));
            continue;
        };
        let rendered = r.text();
        if kind != c.kind
            || !message.contains(c.fragment)
            || line != Some(c.line)
            || !rendered.contains('^')
        {
            failures.push(format!(
                "case {i}: expected {} containing {:?} at line {}, got {kind} at line {line:?}: {message}\n{rendered}",
                c.kind, c.fragment, c.line
            ));
        }
        // The session survives and still evaluates.
        assert_eq!(
            ok(&mut s, "1 + 1"),
            "2\n",
            "session unusable after case {i}"
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn a_kernel_error_in_an_inlined_helper_labels_the_call_site() {
    let mut s = session();
    ok(&mut s, PRELUDE);
    ok(&mut s, "@triton.jit\ndef helper(x):\n    return x // 2.0\n");
    let r =
        s.run_cell("@triton.jit\ndef k(p):\n    v = helper(tl.load(p))\nk[(1,)](torch.zeros(1))");
    let (kind, message, line) = r.error().expect("error");
    assert_eq!(kind, "TypeError");
    assert!(message.contains("`//`"), "{message}");
    // The primary span is the helper's line in its own cell; the call site is labelled.
    assert_eq!(line, Some(3));
    let text = r.text();
    assert!(text.contains("in the inlined call here"), "{text}");
}

/// Jupyter's `is_complete_request` and the REPL's Enter ask whether deeply
/// nested text is a whole cell; `'(' * 1000` once killed the kernel (issue
/// 19). On an 8 MB stack (a main thread's) every depth gets an answer.
#[test]
fn is_complete_answers_for_deep_nesting_on_a_main_thread_stack() {
    use tilebook_frontend::parse::{is_complete, Completeness};
    std::thread::Builder::new()
        .stack_size(8 << 20)
        .spawn(|| {
            for n in [1000, 2999, 3001, 100_000] {
                let open = is_complete(&"(".repeat(n));
                assert!(
                    matches!(open, Completeness::Incomplete | Completeness::Invalid),
                    "{n}: {open:?}"
                );
                let closed = format!("x = {}1{}", "(".repeat(n), ")".repeat(n));
                let _ = is_complete(&closed);
            }
        })
        .unwrap()
        .join()
        .unwrap();
}
