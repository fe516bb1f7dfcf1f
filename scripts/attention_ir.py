#!/usr/bin/env python3
"""Prints the SPEC 3-6 attention of one layer as hkt step ops (what hkt-fuse
turns into one hkt.fused_attention): L levels at stride 2, B = 1, causal.
L = 1 is standard multi-head attention through the same compiler. The
benchmark (scripts/gpu_bench.py) compiles it for the GPU.

  attention_ir.py --levels 3 --seq 4096 --heads 8 --head-dim 64 > hkt.mlir
"""
import argparse


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--levels", type=int, default=3)
    ap.add_argument("--seq", type=int, required=True)
    ap.add_argument("--heads", type=int, default=8)
    ap.add_argument("--head-dim", type=int, default=64)
    ap.add_argument("--causal", default="true", choices=("true", "false"))
    a = ap.parse_args()
    L, T, H, D = a.levels, a.seq, a.heads, a.heads * a.head_dim
    if T % (1 << (L - 1)):
        ap.error("--seq must be a multiple of 2^(levels-1)")
    rows = [T >> l for l in range(L)]
    act = lambda n: "tensor<1x%dx%dxf32>" % (n, D)
    scores = lambda n: "tensor<1x%dx%dx%dxf32>" % (H, n, n)
    args = []
    for l, n in enumerate(rows):
        args.append('%%q%d: %s {hkt.name = "q%d"}' % (l, act(n), l))
        args.append('%%k%d: %s {hkt.name = "k%d"}' % (l, act(n), l))
    args.append('%%theta: tensor<%dx%dxf32> {hkt.name = "theta"}' % (H, L))
    args.append('%%v: %s {hkt.name = "v"}' % act(T))
    out = []
    out.append("func.func @attention(%s)\n    -> (%s {hkt.name = \"attn\"}) {"
               % (", ".join(args), act(T)))
    fine = []
    for l, n in enumerate(rows):
        out.append("  %%e%d = tensor.empty() : %s" % (l, scores(n)))
        out.append("  %%s%d = hkt.level_scores ins(%%q%d, %%k%d : %s, %s) outs(%%e%d : %s) -> %s"
                   % (l, l, l, act(n), act(n), l, scores(n), scores(n)))
        if l == 0:
            fine.append("%s0")
            continue
        out.append("  %%eu%d = tensor.empty() : %s" % (l, scores(T)))
        out.append("  %%u%d = hkt.upsample ins(%%s%d : %s) outs(%%eu%d : %s) factor = %d -> %s"
                   % (l, l, scores(n), l, scores(T), 1 << l, scores(T)))
        fine.append("%%u%d" % l)
    out.append("  %%ef = tensor.empty() : %s" % scores(T))
    out.append("  %%f = hkt.convex_fuse ins(%s : %s) theta(%%theta : tensor<%dx%dxf32>) outs(%%ef : %s) -> %s"
               % (", ".join(fine), ", ".join([scores(T)] * L), H, L, scores(T), scores(T)))
    out.append("  %%em = tensor.empty() : %s" % scores(T))
    out.append("  %%m = hkt.mask ins(%%f : %s) outs(%%em : %s) {causal = %s} -> %s"
               % (scores(T), scores(T), a.causal, scores(T)))
    out.append("  %%ep = tensor.empty() : %s" % scores(T))
    out.append("  %%p = linalg.softmax dimension(3) ins(%%m : %s) outs(%%ep : %s) -> %s"
               % (scores(T), scores(T), scores(T)))
    out.append("  %%ea = tensor.empty() : %s" % act(T))
    out.append("  %%a = hkt.attend ins(%%p, %%v : %s, %s) outs(%%ea : %s) -> %s"
               % (scores(T), act(T), act(T), act(T)))
    out.append("  return %%a : %s\n}" % act(T))
    print("\n".join(out))


if __name__ == "__main__":
    main()
