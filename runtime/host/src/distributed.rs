//! `tilebook.distributed` over several GPUs: the native half of the
//! module (`vm/distributed.py` checks the arguments and handles lists on one
//! device, which are copies). Collectives run through NCCL, one
//! communicator per list of devices, kept for the session.

use crate::args::Args;
use crate::registry::Entry;
use crate::tensor::{Device, Tensor};
use crate::value::{Exc, Val, R};
use crate::Engine;
use std::rc::Rc;
use tilebook_cuda::{Collective, NcclOp, NcclType};
use tilebook_kernels::gpu_fault::GpuFault;
use tilebook_tir::DType;

pub const TABLE: &[Entry] = &[Entry {
    name: "tilebook.distributed.nccl",
    f: nccl,
    doc: r#"tilebook.distributed.nccl(collective, inputs, outputs, op="sum", root=0)
One NCCL collective ("all_reduce", "all_gather", "reduce_scatter",
"broadcast") over tensors on several GPUs, one per device (the
functions of tilebook.distributed call it; use those).
"#,
}];

fn rt(m: impl Into<String>) -> Exc {
    Exc::new("RuntimeError", m)
}

fn tensors(v: &Val, what: &str) -> R<Vec<Rc<Tensor>>> {
    tilebook_kernels::value::iterate(v)?
        .into_iter()
        .map(|x| match x {
            Val::Tensor(t) => Ok(t),
            other => Err(Exc::type_error(format!(
                "{what}: expected tensors, got {}",
                other.type_name()
            ))),
        })
        .collect()
}

fn nccl_type(d: DType) -> R<NcclType> {
    Ok(match d {
        DType::I8 => NcclType::I8,
        DType::U8 | DType::I1 => NcclType::U8,
        DType::I32 => NcclType::I32,
        DType::I64 => NcclType::I64,
        DType::F16 => NcclType::F16,
        DType::BF16 => NcclType::BF16,
        DType::F32 => NcclType::F32,
        DType::F64 => NcclType::F64,
        other => {
            return Err(Exc::type_error(format!(
                "NCCL has no reduction for {}",
                crate::tensor::torch_name(other)
            )))
        }
    })
}

fn nccl(s: &mut Engine, _name: &str, a: Args) -> R<Val> {
    let what = a.req(0, "collective")?.to_str().to_string();
    let inputs = tensors(&a.req(1, "inputs")?, &what)?;
    let outputs = tensors(&a.req(2, "outputs")?, &what)?;
    let op = match a.get(3, "op").map(|v| v.to_str().to_string()).as_deref() {
        None | Some("sum") => NcclOp::Sum,
        Some("max") => NcclOp::Max,
        Some("min") => NcclOp::Min,
        Some("avg") => NcclOp::Avg,
        Some("prod") => NcclOp::Prod,
        Some(other) => {
            return Err(Exc::value_error(format!(
                "{what}: op must be sum, max, min, avg or prod, got '{other}'"
            )))
        }
    };
    let root = match a.get(4, "root") {
        Some(Val::Int(r)) => r,
        _ => 0,
    };
    let n = inputs.len();
    if n == 0 || outputs.len() != n {
        return Err(Exc::value_error(format!(
            "{what}: {n} inputs and {} outputs; one of each per device",
            outputs.len()
        )));
    }
    let (k_in, k_out) = (inputs[0].numel(), outputs[0].numel());
    let (collective, count, expect_in, expect_out) = match what.as_str() {
        "all_reduce" => (Collective::AllReduce(op), k_in, k_in, k_in),
        "broadcast" => {
            if root < 0 || root as usize >= n {
                return Err(Exc::new(
                    "IndexError",
                    format!("broadcast: root {root} is not one of the {n} tensors"),
                ));
            }
            (
                Collective::Broadcast {
                    root: root as usize,
                },
                k_in,
                k_in,
                k_in,
            )
        }
        "all_gather" => (Collective::AllGather, k_in, k_in, k_in.saturating_mul(n)),
        "reduce_scatter" => (
            Collective::ReduceScatter(op),
            k_out,
            k_out.saturating_mul(n),
            k_out,
        ),
        other => {
            return Err(Exc::value_error(format!(
                "unknown collective '{other}' (all_reduce, all_gather, reduce_scatter, broadcast)"
            )))
        }
    };
    let dtype = inputs[0].dtype;
    let ty = nccl_type(dtype)?;
    let mut ordinals = vec![];
    for (i, (x, y)) in inputs.iter().zip(&outputs).enumerate() {
        if x.numel() != expect_in || y.numel() != expect_out {
            return Err(Exc::value_error(format!(
                "{what}: tensor pair {i} has {} and {} elements, needs {expect_in} and {expect_out}",
                x.numel(),
                y.numel()
            )));
        }
        if x.dtype != dtype || y.dtype != dtype {
            return Err(Exc::type_error(format!(
                "{what}: tensor pair {i} is not {}",
                crate::tensor::torch_name(dtype)
            )));
        }
        if !x.is_contiguous() || !y.is_contiguous() {
            return Err(Exc::value_error(format!(
                "{what}: tensor pair {i} is not contiguous (NCCL moves contiguous buffers; call .contiguous())"
            )));
        }
        let (Device::Cuda(dx), Device::Cuda(dy)) = (&x.device, &y.device) else {
            return Err(Exc::value_error(format!(
                "{what}: tensor pair {i} is not on a GPU"
            )));
        };
        if dx != dy {
            return Err(Exc::value_error(format!(
                "{what}: input {i} is on cuda:{dx}, its output on cuda:{dy}"
            )));
        }
        if ordinals.contains(dx) {
            return Err(Exc::value_error(format!(
                "{what}: two tensors on cuda:{dx}; NCCL takes one per device"
            )));
        }
        ordinals.push(*dx);
    }
    let mut gpus = vec![];
    for &o in &ordinals {
        gpus.push(s.gpu(o)?.ok_or_else(|| rt("NCCL collectives need a GPU"))?);
    }
    let mut bufs = vec![];
    for ((x, y), g) in inputs.iter().zip(&outputs).zip(&gpus) {
        let addr = |t: &Tensor| -> Result<u64, String> {
            Ok(t.storage.device_address(g)? + (t.offset * t.dtype.size_bytes()) as u64)
        };
        let pair = addr(x).and_then(|px| Ok((px, addr(y)?)));
        bufs.push(pair.map_err(|e| s.gpu_failure(rt(e)))?);
    }
    if !s.communicators.iter().any(|c| c.ordinals == ordinals) {
        let refs: Vec<&tilebook_cuda::Gpu> = gpus.iter().map(|g| &**g).collect();
        let c = tilebook_cuda::Communicator::new(&refs).map_err(rt)?;
        s.communicators.push(c);
    }
    let refs: Vec<&tilebook_cuda::Gpu> = gpus.iter().map(|g| &**g).collect();
    let comm = s
        .communicators
        .iter()
        .find(|c| c.ordinals == ordinals)
        .ok_or_else(|| rt("no communicator"))?;
    comm.run(&refs, collective, &bufs, count, ty)
        .map_err(|e| rt(format!("{what}: {e}")))?;
    for y in &outputs {
        y.storage.mark_device_written();
    }
    Ok(Val::None)
}
