//! `torch.isnan`, `torch.isinf`, `torch.isfinite` and the tensor methods of
//! the same names: bool tensors from comparisons, so they run wherever a
//! comparison does (the stdlib kernels on a GPU, the host otherwise).

use crate::args::{tensor_arg, Args};
use crate::ops::{binary, compare};
use crate::registry::{Entry, TensorMethodFn};
use crate::tensor::Tensor;
use crate::value::{Val, R};
use crate::Engine;
use ruff_python_ast::{CmpOp, Operator};
use std::rc::Rc;

pub const TABLE: &[Entry] = &[
    Entry {
        name: "torch.isnan",
        f: torch_class,
        doc: "torch.isnan(input)\nA bool tensor: True where `input` is NaN.\n",
    },
    Entry {
        name: "torch.isinf",
        f: torch_class,
        doc: "torch.isinf(input)\nA bool tensor: True where `input` is +inf or -inf.\n",
    },
    Entry {
        name: "torch.isfinite",
        f: torch_class,
        doc: "torch.isfinite(input)\nA bool tensor: True where `input` is neither NaN nor infinite.\n",
    },
];

/// The same three as `Tensor` methods (`x.isnan()`, ...).
pub const METHODS: &[Entry<TensorMethodFn>] = &[
    Entry {
        name: "isnan",
        f: method_class,
        doc: "Tensor.isnan(): True where the element is NaN.",
    },
    Entry {
        name: "isinf",
        f: method_class,
        doc: "Tensor.isinf(): True where the element is +inf or -inf.",
    },
    Entry {
        name: "isfinite",
        f: method_class,
        doc: "Tensor.isfinite(): True where the element is neither NaN nor infinite.",
    },
];

fn torch_class(s: &mut Engine, name: &str, a: Args) -> R<Val> {
    let t = tensor_arg(&a.req(0, "input")?, name)?;
    classify(s, &t, name.trim_start_matches("torch."))
}

fn method_class(s: &mut Engine, t: &Rc<Tensor>, name: &str, _a: Args) -> R<Val> {
    classify(s, t, name)
}

/// NaN is the only value unequal to itself; infinities are the values whose
/// magnitude equals inf; finite values are those whose difference with
/// themselves is zero (inf - inf and NaN - NaN are NaN). Integer tensors
/// come out all False, all False, all True.
fn classify(s: &mut Engine, t: &Rc<Tensor>, kind: &str) -> R<Val> {
    let x = Val::Tensor(t.clone());
    match kind {
        "isnan" => compare(s, CmpOp::NotEq, &x, &x),
        "isinf" => {
            let a = crate::builtins::abs(
                s,
                "abs",
                Args {
                    pos: vec![x],
                    kw: vec![],
                    fname: "abs".into(),
                },
            )?;
            compare(s, CmpOp::Eq, &a, &Val::Float(f64::INFINITY))
        }
        _ => {
            let d = binary(s, Operator::Sub, &x, &x)?;
            compare(s, CmpOp::Eq, &d, &Val::Int(0))
        }
    }
}
