#!/usr/bin/env bash
# The GPU conformance run (on a machine with an NVIDIA GPU): every case of
# the CPU conformance suite, plus the tutorial kernels, through the GPU
# backend. TILEBOOK_CHECK_GPU=1 also runs every launch on the CPU backend and
# compares all tensor arguments, so a case passes only if the GPU agrees with
# the CPU reference and with the case's own host references.
# TILEBOOK_CHECK_BOUNDS=1 (checked GPU mode) makes every GPU kernel check its
# accesses against their tensors: a case passes only if no access strays.
#
# Usage: tests/gpu/run.sh [path/to/tilebook]   (default ./target/release/tilebook)
set -u
BIN=${1:-./target/release/tilebook}
# A binary that does not run (an empty file left by a failed unpacking
# exits 0 with no output) would pass every case: refuse it.
if ! "$BIN" --version 2>/dev/null | grep -q '^tilebook '; then
    echo "tests/gpu/run.sh: $BIN does not run; no GPU cases were run"
    exit 2
fi
export TILEBOOK_CHECK_GPU=1
export TILEBOOK_CHECK_BOUNDS=1
SEED=${TILEBOOK_SEED:-$RANDOM}
tmp=$(mktemp -d)
pass=0
fail=0
run_case() {
    local name=$1
    shift
    if out=$("$BIN" run --device cuda "$@" 2>&1); then
        pass=$((pass + 1))
        echo "ok      $name"
    else
        fail=$((fail + 1))
        echo "FAILED  $name"
        echo "$out" | sed 's/^/        /' | tail -15
    fi
}
echo "GPU conformance run, seed $SEED"
for f in tests/conformance/*.py; do
    name=$(basename "$f")
    [ "$name" = prelude.py ] && continue
    { echo "SEED = $SEED"; cat tests/conformance/prelude.py; cat "$f"; } > "$tmp/$name"
    run_case "conformance/$name" "$tmp/$name"
done
# The tutorial's benchmark sweeps up to 2^28 elements: run it as a user
# would, without the CPU cross-check (gpu/tutorial_kernels.py checks its
# kernel against the CPU backend).
TILEBOOK_CHECK_GPU=0 run_case "tutorials/01-vector-add.py" tutorials/01-vector-add.py
for f in tests/gpu/*.py; do
    { cat tests/ir/matmul.py tests/ir/softmax.py; cat "$f"; } > "$tmp/$(basename "$f")"
    case "$(basename "$f")" in
    # A real fault, which checked mode would prevent.
    fault_recovery.py) TILEBOOK_CHECK_GPU=0 TILEBOOK_CHECK_BOUNDS=0 run_case "gpu/fault_recovery.py" "$tmp/fault_recovery.py" ;;
    # Tensors of 2^31+ elements: cross-checking every launch on the CPU
    # backend would take minutes; checked bounds stay on.
    big_tensors.py) TILEBOOK_CHECK_GPU=0 run_case "gpu/big_tensors.py" "$tmp/big_tensors.py" ;;
    # Bad accesses that checked mode must name by line (the file as it is:
    # its messages name its own lines).
    check_bounds.py) TILEBOOK_CHECK_GPU=0 run_case "gpu/check_bounds.py" "$f" ;;
    # Bulk tensor copies: checked mode would replace them by per-thread
    # copies, so these run unchecked (still against the CPU backend).
    tma.py) TILEBOOK_CHECK_BOUNDS=0 run_case "gpu/tma.py" "$tmp/tma.py" ;;
    pointer_tma.py) TILEBOOK_CHECK_BOUNDS=0 run_case "gpu/pointer_tma.py" "$tmp/pointer_tma.py" ;;
    *) run_case "gpu/$(basename "$f")" "$tmp/$(basename "$f")" ;;
    esac
done
# Attention and layer norm forward and backward (the benchmark's kernels:
# two dots with a softmax between them kept in the MMA layout, causal masks,
# locks, atomics), every config, at small sizes, against host references
# and, launch by launch, the CPU backend.
run_case "bench/ln_attn_bench.py --check" bench/ln_attn_bench.py --check
# Descriptors' conformance cases once more unchecked: their loads feeding
# dots become bulk copies.
{ echo "SEED = $SEED"; cat tests/conformance/prelude.py tests/conformance/descriptors.py; } > "$tmp/descriptors_unchecked.py"
TILEBOOK_CHECK_BOUNDS=0 run_case "conformance/descriptors.py (unchecked: bulk copies)" "$tmp/descriptors_unchecked.py"
echo "passed $pass, failed $fail"
[ "$fail" -eq 0 ]
