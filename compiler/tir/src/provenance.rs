//! Which pointer parameter each pointer value derives from: the provenance
//! both backends check loads, stores and atomics against in checked mode
//! (`None`: unknown, e.g. an address loaded from memory or a `select` of two
//! tensors' pointers).

use crate::{walk_ops, Kernel, Op, OpKind, Value};
use std::collections::HashMap;

/// Each pointer value's parameter index, where one is known.
pub type Provenance = HashMap<Value, Option<usize>>;

pub fn provenance(k: &Kernel) -> Provenance {
    let mut p: Provenance = HashMap::new();
    for (i, param) in k.params.iter().enumerate() {
        if k.ty(param.value).elem.is_ptr() {
            p.insert(param.value, Some(i));
        }
    }
    // Two rounds settle loop-carried pointers.
    for _ in 0..3 {
        walk_ops(&k.body, &mut |op: &Op| {
            let get = |p: &Provenance, v: &Value| p.get(v).copied().flatten();
            match &op.kind {
                OpKind::AddPtr
                | OpKind::Splat
                | OpKind::Broadcast
                | OpKind::ExpandDims(_)
                | OpKind::Reshape
                | OpKind::Trans(_)
                | OpKind::MultipleOf(_)
                | OpKind::MaxContiguous(_) => {
                    let v = get(&p, &op.args[0]);
                    p.insert(op.results[0], v);
                }
                OpKind::Select => {
                    let (a, b) = (get(&p, &op.args[1]), get(&p, &op.args[2]));
                    p.insert(op.results[0], if a == b { a } else { None });
                }
                OpKind::For | OpKind::While => {
                    let (inits, region) = if op.kind == OpKind::For {
                        (&op.args[3..], &op.regions[0])
                    } else {
                        (&op.args[..], &op.regions[1])
                    };
                    let skip = if op.kind == OpKind::For { 1 } else { 0 };
                    let yields = region
                        .ops
                        .last()
                        .map(|y| y.args.clone())
                        .unwrap_or_default();
                    for (i, init) in inits.iter().enumerate() {
                        let a = get(&p, init);
                        let y = yields.get(i).and_then(|y| p.get(y).copied());
                        let v = match y {
                            Some(yv) if yv != a => None,
                            _ => a,
                        };
                        p.insert(region.args[i + skip], v);
                        p.insert(op.results[i], v);
                        if op.kind == OpKind::While {
                            p.insert(op.regions[0].args[i], v);
                        }
                    }
                }
                OpKind::If => {
                    let ya = op.regions[0]
                        .ops
                        .last()
                        .map(|y| y.args.clone())
                        .unwrap_or_default();
                    let yb = op.regions[1]
                        .ops
                        .last()
                        .map(|y| y.args.clone())
                        .unwrap_or_default();
                    for (i, &r) in op.results.iter().enumerate() {
                        let (a, b) = (
                            ya.get(i).and_then(|v| get(&p, v)),
                            yb.get(i).and_then(|v| get(&p, v)),
                        );
                        p.insert(r, if a == b { a } else { None });
                    }
                }
                _ => {}
            }
        });
    }
    p
}
