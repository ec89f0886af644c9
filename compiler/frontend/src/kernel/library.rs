//! Parts of `tl` that are themselves written in the tile language: the
//! counter-based random numbers (`tl.rand`, `tl.randn`, `tl.randint`, ...).
//!
//! They are Philox-4x32 with ten rounds (Salmon, Moraes, Dror and Shaw,
//! "Parallel random numbers: as easy as 1, 2, 3", SC 2011), with the seed as
//! the key and the offsets as the counter, and the same integer-to-float and
//! Box-Muller steps as Triton, so a seed and offsets give Triton's numbers
//! bit for bit. The functions are parsed once per thread and inlined where a
//! kernel calls them, like any `@jit` callee; their names resolve among
//! themselves and `tl`, never in the user's namespace.

use super::lower::KVal;
use super::{ConstVal, JitFunction};
use crate::source::SourceFile;
use std::cell::OnceCell;
use std::collections::HashMap;
use std::rc::Rc;

/// How messages name the library's source.
pub(crate) const FILE_NAME: &str = "<tl.random>";

const SOURCE: &str = r#"
def philox_impl(c0, c1, c2, c3, k0, k1, n_rounds: tl.constexpr = 10):
    tl.static_assert(c0.dtype == tl.uint32, "philox counters must be uint32 in tilebook")
    for _ in tl.static_range(n_rounds):
        hi_a = tl.umulhi(0xD2511F53, c0)
        lo_a = c0 * 0xD2511F53
        hi_b = tl.umulhi(0xCD9E8D57, c2)
        lo_b = c2 * 0xCD9E8D57
        c0, c1, c2, c3 = hi_b ^ c1 ^ k0, lo_b, hi_a ^ c3 ^ k1, lo_a
        k0 = k0 + 0x9E3779B9
        k1 = k1 + 0xBB67AE85
    return c0, c1, c2, c3


def philox(seed, c0, c1, c2, c3, n_rounds: tl.constexpr = 10):
    key = tl.to_tensor(seed)
    tl.static_assert(key.dtype.is_int(), "the seed of a random function must be an integer")
    key = key.to(tl.uint64)
    lo = (key & 0xFFFFFFFF).to(tl.uint32)
    hi = ((key >> 32) & 0xFFFFFFFF).to(tl.uint32)
    tl.static_assert(tl.to_tensor(c0).dtype.primitive_bitwidth == 32,
                     "philox counters must be 32-bit integers in tilebook")
    c0 = tl.to_tensor(c0).to(tl.uint32, bitcast=True)
    c1 = tl.to_tensor(c1).to(tl.uint32, bitcast=True)
    c2 = tl.to_tensor(c2).to(tl.uint32, bitcast=True)
    c3 = tl.to_tensor(c3).to(tl.uint32, bitcast=True)
    return philox_impl(c0, c1, c2, c3, lo, hi, n_rounds)


def randint4x(seed, offset, n_rounds: tl.constexpr = 10):
    offset = tl.to_tensor(offset)
    tl.static_assert(offset.dtype.is_int(), "random offsets must be integers")
    low = offset.to(tl.uint32)
    zero = low * 0
    if tl.constexpr(offset.dtype.primitive_bitwidth > 32):
        high = (offset >> 32).to(tl.uint32)
    else:
        high = zero
    return philox(seed, low, high, zero, zero, n_rounds)


def randint(seed, offset, n_rounds: tl.constexpr = 10):
    first, _, _, _ = randint4x(seed, offset, n_rounds)
    return first


def uint_to_uniform_float(x):
    tl.static_assert(x.dtype.primitive_bitwidth == 32,
                     "uint_to_uniform_float takes 32-bit integers in tilebook")
    signed = x.to(tl.int32, bitcast=True)
    folded = tl.where(signed < 0, -signed - 1, signed)
    return folded * 4.6566127342e-10


def rand(seed, offset, n_rounds: tl.constexpr = 10):
    return uint_to_uniform_float(randint(seed, offset, n_rounds))


def rand4x(seed, offset, n_rounds: tl.constexpr = 10):
    a, b, c, d = randint4x(seed, offset, n_rounds)
    return (uint_to_uniform_float(a), uint_to_uniform_float(b),
            uint_to_uniform_float(c), uint_to_uniform_float(d))


def pair_uniform_to_normal(u1, u2):
    u1 = tl.maximum(1.0e-7, u1)
    theta = 6.283185307179586 * u2
    radius = tl.sqrt(-2.0 * tl.log(u1))
    return radius * tl.cos(theta), radius * tl.sin(theta)


def randn(seed, offset, n_rounds: tl.constexpr = 10):
    a, b, _, _ = randint4x(seed, offset, n_rounds)
    n, _ = pair_uniform_to_normal(uint_to_uniform_float(a), uint_to_uniform_float(b))
    return n


def randn4x(seed, offset, n_rounds: tl.constexpr = 10):
    a, b, c, d = rand4x(seed, offset, n_rounds)
    n1, n2 = pair_uniform_to_normal(a, b)
    n3, n4 = pair_uniform_to_normal(c, d)
    return n1, n2, n3, n4
"#;

/// The public names, as `tl.<name>` (also for completion and messages).
pub const NAMES: &[&str] = &[
    "philox",
    "philox_impl",
    "randint",
    "randint4x",
    "rand",
    "rand4x",
    "randn",
    "randn4x",
    "uint_to_uniform_float",
    "pair_uniform_to_normal",
];

thread_local! {
    static FUNCTIONS: OnceCell<HashMap<String, Rc<JitFunction>>> = const { OnceCell::new() };
}

/// A library function by name.
pub(crate) fn function(name: &str) -> Option<Rc<JitFunction>> {
    FUNCTIONS.with(|cell| {
        cell.get_or_init(|| {
            let file = SourceFile::new(FILE_NAME, SOURCE);
            let mut out = HashMap::new();
            // The source is ours and parses; a failure would leave the map
            // empty and every `tl.rand` a clear AttributeError, not a panic.
            if let Ok(stmts) = crate::parse::parse_cell(&file) {
                for s in stmts {
                    if let ruff_python_ast::Stmt::FunctionDef(def) = s {
                        let f = JitFunction::new(def, &file);
                        out.insert(f.name.clone(), Rc::new(f));
                    }
                }
            }
            out
        })
        .get(name)
        .cloned()
    })
}

/// `tl.<name>` when `name` is a library function.
pub(crate) fn member(name: &str) -> Option<KVal> {
    function(name).map(|f| KVal::C(ConstVal::Func(f)))
}

/// A global name as the library's own functions see it.
pub(crate) fn global(name: &str) -> Option<KVal> {
    match name {
        "tl" => Some(KVal::Module("tl".into())),
        _ => member(name),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_name_parses() {
        for n in super::NAMES {
            assert!(super::function(n).is_some(), "{n}");
        }
    }
}
