//===- HKTOps.td - hkt dialect operations ------------------*- tablegen -*-===//
//
// One op per equation of shared/SPEC.md, plus the whole layer. All ops are on
// ranked tensors, in destination-passing style (`outs(%init)`, the result has
// the type of `%init`).
//
//===----------------------------------------------------------------------===//

#ifndef HKT_DIALECT_HKTOPS_TD
#define HKT_DIALECT_HKTOPS_TD

include "dialect/HKTDialect.td"
include "dialect/HKTInterfaces.td"
include "mlir/Dialect/Linalg/IR/LinalgInterfaces.td"
include "mlir/Interfaces/DestinationStyleOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/TilingInterface.td"
include "mlir/IR/CommonAttrConstraints.td"

def HKT_FloatTensor : RankedTensorOf<[AnyFloat]>;
def HKT_IntTensor : RankedTensorOf<[AnySignlessInteger]>;
def HKT_PositiveI64Attr : ConfinedAttr<I64Attr, [IntMinValue<1>]>;

/// Shared by every hkt op: pure tensor semantics, destination style (the init
/// operand is named `init`), and a C++ verifier.
class HKT_Op<string mnemonic, list<Trait> traits = []>
    : Op<HKT_Dialect, mnemonic,
         !listconcat([Pure, DestinationStyleOpInterface], traits)> {
  code dpsDecl = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return getInitMutable();
    }
  }];
  let extraClassDeclaration = dpsDecl;
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Step ops
//===----------------------------------------------------------------------===//

def HKT_DownsampleOp : HKT_Op<"downsample",
    [DeclareOpInterfaceMethods<HKT_AdjointOpInterface>]> {
  let summary = "learned causal depthwise downsampling by a stride (SPEC 1)";
  let description = [{
    One level of causal, depthwise, strided downsampling (SPEC section 1):

    ```
    out[b, t, c] = bias[c] + sum_{m=0..k-1} weight[c, m] * input[b, s*t - m, c]
    ```

    with `s = stride`, `k` the second dimension of `weight`, and terms with a
    negative sequence index equal to zero (causal left padding). Output token
    `t` sees only input positions `<= s*t`. `input` is `B x T x D`, `weight`
    `D x k`, `bias` `D`, and the result `B x ceil(T/s) x D`.

    Example:

    ```mlir
    %y = hkt.downsample ins(%x, %w, %b : tensor<2x37x32xf32>, tensor<32x3xf32>,
                                        tensor<32xf32>)
           outs(%init : tensor<2x19x32xf32>) stride = 2 -> tensor<2x19x32xf32>
    ```
  }];
  let arguments = (ins HKT_FloatTensor:$input, HKT_FloatTensor:$weight,
                       HKT_FloatTensor:$bias, HKT_FloatTensor:$init,
                       HKT_PositiveI64Attr:$stride);
  let results = (outs HKT_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $input `,` $weight `,` $bias `:` type($input) `,` type($weight)
    `,` type($bias) `)` `outs` `(` $init `:` type($init) `)`
    `stride` `=` $stride attr-dict `->` type($result)
  }];
}

def HKT_LevelScoresOp : HKT_Op<"level_scores",
    [DeclareOpInterfaceMethods<HKT_AdjointOpInterface>]> {
  let summary = "per-head scaled dot-product scores of one level (SPEC 3)";
  let description = [{
    The score matrix of one level (SPEC section 3):

    ```
    out[b, h, q, p] = (query[b, q, h] . key[b, p, h]) / sqrt(d)
    ```

    `query` is `B x Tq x D`, `key` `B x Tk x D`, the result `B x H x Tq x Tk`;
    the number of heads `H` is the result's dimension 1 and `d = D / H`; head
    `h` owns columns `[h*d, (h+1)*d)`.

    Example:

    ```mlir
    %s = hkt.level_scores ins(%q, %k : tensor<2x19x32xf32>, tensor<2x19x32xf32>)
           outs(%init : tensor<2x4x19x19xf32>) -> tensor<2x4x19x19xf32>
    ```
  }];
  let arguments = (ins HKT_FloatTensor:$query, HKT_FloatTensor:$key,
                       HKT_FloatTensor:$init);
  let results = (outs HKT_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $query `,` $key `:` type($query) `,` type($key) `)`
    `outs` `(` $init `:` type($init) `)` attr-dict `->` type($result)
  }];
}

def HKT_UpsampleOp : HKT_Op<"upsample",
    [DeclareOpInterfaceMethods<HKT_AdjointOpInterface>]> {
  let summary = "nearest-neighbour upsampling of a score matrix (SPEC 4)";
  let description = [{
    Nearest-neighbour upsampling in both sequence dimensions (SPEC section 4):

    ```
    out[b, h, i, j] = input[b, h, floor(i / f), floor(j / f)]
    ```

    with `f = factor` (`s^l` for level `l`). `input` is `B x H x Tq' x Tk'`
    and the result `B x H x Tq x Tk` with `ceil(Tq / f) = Tq'` and
    `ceil(Tk / f) = Tk'`.

    Example:

    ```mlir
    %u = hkt.upsample ins(%s : tensor<2x4x10x10xf32>)
           outs(%init : tensor<2x4x37x37xf32>) factor = 4 -> tensor<2x4x37x37xf32>
    ```
  }];
  let arguments = (ins HKT_FloatTensor:$input, HKT_FloatTensor:$init,
                       HKT_PositiveI64Attr:$factor);
  let results = (outs HKT_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $input `:` type($input) `)` `outs` `(` $init `:` type($init) `)`
    `factor` `=` $factor attr-dict `->` type($result)
  }];
}

def HKT_ConvexFuseOp : HKT_Op<"convex_fuse",
    [DeclareOpInterfaceMethods<HKT_AdjointOpInterface>]> {
  let summary = "convex combination of level scores with softmax(theta) (SPEC 4)";
  let description = [{
    Fuses the (upsampled) level scores with learned convex weights
    (SPEC section 4):

    ```
    lambda[h, :] = softmax(theta[h, :])
    out[b, h, i, j] = sum_l lambda[h, l] * scores_l[b, h, i, j]
    ```

    Every `scores_l` has the result's shape `B x H x Tq x Tk`; `theta` is
    `H x L` where `L` is the number of score operands.

    Example:

    ```mlir
    %f = hkt.convex_fuse ins(%s0, %s1 : tensor<2x4x37x37xf32>, tensor<2x4x37x37xf32>)
           theta(%theta : tensor<4x2xf32>)
           outs(%init : tensor<2x4x37x37xf32>) -> tensor<2x4x37x37xf32>
    ```
  }];
  let arguments = (ins Variadic<HKT_FloatTensor>:$scores,
                       HKT_FloatTensor:$theta, HKT_FloatTensor:$init);
  let results = (outs HKT_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $scores `:` type($scores) `)` `theta` `(` $theta `:` type($theta) `)`
    `outs` `(` $init `:` type($init) `)` attr-dict `->` type($result)
  }];
}

def HKT_MaskOp : HKT_Op<"mask",
    [DeclareOpInterfaceMethods<HKT_AdjointOpInterface>]> {
  let summary = "causal and key-length masks on a score matrix (SPEC 5)";
  let description = [{
    Sets masked scores to `-inf` (SPEC section 5):

    ```
    out[b, h, i, j] = -inf                 if causal and j > i
                      -inf                 if lengths given and j >= lengths[b]
                      input[b, h, i, j]    otherwise
    ```

    `input` is `B x H x T x T` (square when `causal`); `lengths`, when given,
    is a `B` vector of integers in `[1, Tk]` (rows `i >= lengths[b]` are
    computed as usual). A softmax over `j` (`linalg.softmax`) follows.

    Example:

    ```mlir
    %m = hkt.mask ins(%s : tensor<2x4x37x37xf32>) lengths(%len : tensor<2xi32>)
           outs(%init : tensor<2x4x37x37xf32>) {causal = true} -> tensor<2x4x37x37xf32>
    ```
  }];
  let arguments = (ins HKT_FloatTensor:$input, Optional<HKT_IntTensor>:$lengths,
                       HKT_FloatTensor:$init,
                       DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs HKT_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $input `:` type($input) `)`
    (`lengths` `(` $lengths^ `:` type($lengths) `)`)?
    `outs` `(` $init `:` type($init) `)` attr-dict `->` type($result)
  }];
}

def HKT_AttendOp : HKT_Op<"attend",
    [DeclareOpInterfaceMethods<HKT_AdjointOpInterface>]> {
  let summary = "per-head weighted sum of values (SPEC 6)";
  let description = [{
    Applies attention probabilities to the values, head by head
    (SPEC section 6):

    ```
    out[b, i, h] = sum_j probs[b, h, i, j] * value[b, j, h]
    ```

    `probs` is `B x H x Tq x Tk`, `value` `B x Tk x D`, the result
    `B x Tq x D`; `x[b, i, h]` denotes the `d = D / H` columns of head `h`.

    Example:

    ```mlir
    %a = hkt.attend ins(%p, %v : tensor<2x4x37x37xf32>, tensor<2x37x32xf32>)
           outs(%init : tensor<2x37x32xf32>) -> tensor<2x37x32xf32>
    ```
  }];
  let arguments = (ins HKT_FloatTensor:$probs, HKT_FloatTensor:$value,
                       HKT_FloatTensor:$init);
  let results = (outs HKT_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $probs `,` $value `:` type($probs) `,` type($value) `)`
    `outs` `(` $init `:` type($init) `)` attr-dict `->` type($result)
  }];
}

def HKT_HybridOp : HKT_Op<"hybrid",
    [DeclareOpInterfaceMethods<HKT_AdjointOpInterface>]> {
  let summary = "per-head mix of attention and a causal convolution (SPEC 7)";
  let description = [{
    The hybrid head (SPEC section 7):

    ```
    C[b, i, c]  = sum_{m=0..kc-1} conv_u[c, m] * value[b, i - m, c]
    beta[h]     = sigmoid(gamma[h])
    out[b, i, h] = beta[h] * attn[b, i, h] + (1 - beta[h]) * C[b, i, h]
    ```

    The convolution is always causal (negative indices are zero). `attn` and
    `value` are `B x T x D`, `conv_u` `D x kc`, `gamma` `H` (the number of
    heads), the result `B x T x D`.

    Example:

    ```mlir
    %o = hkt.hybrid ins(%attn, %v, %u, %g : tensor<2x37x32xf32>, tensor<2x37x32xf32>,
                                          tensor<32x3xf32>, tensor<4xf32>)
           outs(%init : tensor<2x37x32xf32>) -> tensor<2x37x32xf32>
    ```
  }];
  let arguments = (ins HKT_FloatTensor:$attn, HKT_FloatTensor:$value,
                       HKT_FloatTensor:$conv_u, HKT_FloatTensor:$gamma,
                       HKT_FloatTensor:$init);
  let results = (outs HKT_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $attn `,` $value `,` $conv_u `,` $gamma `:` type($attn) `,`
    type($value) `,` type($conv_u) `,` type($gamma) `)`
    `outs` `(` $init `:` type($init) `)` attr-dict `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// The tileable online form
//===----------------------------------------------------------------------===//

def HKT_OnlineAttentionOp : HKT_Op<"online_attention",
    [AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<TilingInterface,
         ["getLoopIteratorTypes", "getIterationDomain",
          "getTiledImplementation", "getResultTilePosition"]>,
     DeclareOpInterfaceMethods<AggregatedOpInterface, ["decomposeOperation"]>]> {
  let summary = "multi-level attention with a running max and sum (SPEC 3-6)";
  let description = [{
    The fused, tileable form of SPEC 3-6 (the model is IREE's
    `online_attention`). With `f_l = factors[l]`:

    ```
    S[b, h, i, j] = sum_l query_l[b, floor(i / f_l), h] . key_l[b, floor(j / f_l), h]
    S[b, h, i, j] = -inf       if causal and j > i, or j >= lengths[b]
    m'[b, h, i]   = max(max[b, h, i], max_j S[b, h, i, j])
    sum'[b, h, i] = sum[b, h, i] * exp(max - m') + sum_j exp(S - m')
    acc'[b, i, h] = acc[b, i, h] * exp(max - m') + sum_j exp(S - m') value[b, j, h]
    ```

    The queries already carry the convex weight and the scale
    (`query_l = Q^(l) * lambda[h, l] / sqrt(d)`), so the level blocks simply
    add up; the attention output is `acc' / sum'`. The running max, sum and
    accumulator are destinations, so the key dimension can be split into
    tiles: each tile updates them in turn. The running max starts at the
    lowest finite value (not -inf), so a tile whose keys are all masked for a
    row leaves that row's max and sum unchanged.

    `query_l` is `B x ceil(Tq / f_l) x D`, `key_l` `B x ceil(Tk / f_l) x D`,
    `value` `B x Tk x D`; `acc` is `B x Tq x D`, `max` and `sum` `B x H x Tq`
    (H from their dimension 1). `factors[0]` is 1.

    `offsets(%i0, %j0)` (optional, both or neither) place the op in a larger
    sequence: query row `i` is at position `i0 + i` and key `j` at `j0 + j`
    for the masks (causal `j0 + j > i0 + i`, lengths `j0 + j >= lengths[b]`).
    Both must be multiples of every factor, so that the level-l rows of the
    operands are the global ones shifted by `i0 / f_l` (`j0 / f_l`). Tiling
    sets them; without them both are 0.

    Tiling (`TilingInterface`): the iteration domain is `(b, h, i, j)` =
    `B x H x Tq x Tk`, parallel in `b`, `h`, `i` and a reduction in `j`. A
    tile along `j` is one more online update of `acc`, `max` and `sum`, so
    `scf.for` over key tiles carrying them is exact. Tile sizes along `i` and
    `j` must be multiples of every factor (a tile holds whole coarse rows).
    Decomposition (`AggregatedOpInterface`, for a static tile of one batch
    row and one head whose sequence sizes are multiples of every factor): each level's coarse score block is computed once and
    broadcast, the masks are applied only when the tile crosses the diagonal
    or the key length, and a tile with no live key leaves the state as it is.

    Example (three levels, stride 2):

    ```mlir
    %acc, %max, %sum = hkt.online_attention
        ins(%q0, %q1, %q2 : tensor<1x64x32xf32>, tensor<1x32x32xf32>, tensor<1x16x32xf32>)
        keys(%k0, %k1, %k2 : tensor<1x64x32xf32>, tensor<1x32x32xf32>, tensor<1x16x32xf32>)
        values(%v : tensor<1x64x32xf32>)
        outs(%a, %m, %s : tensor<1x64x32xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>)
        {causal = true, factors = array<i64: 1, 2, 4>}
        -> tensor<1x64x32xf32>, tensor<1x4x64xf32>, tensor<1x4x64xf32>
    ```
  }];
  let arguments = (ins Variadic<HKT_FloatTensor>:$queries,
                       Variadic<HKT_FloatTensor>:$keys,
                       HKT_FloatTensor:$value,
                       Optional<HKT_IntTensor>:$lengths,
                       Optional<Index>:$query_offset,
                       Optional<Index>:$key_offset,
                       HKT_FloatTensor:$acc, HKT_FloatTensor:$max,
                       HKT_FloatTensor:$sum,
                       DenseI64ArrayAttr:$factors,
                       DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs HKT_FloatTensor:$result_acc, HKT_FloatTensor:$result_max,
                      HKT_FloatTensor:$result_sum);
  let assemblyFormat = [{
    `ins` `(` $queries `:` type($queries) `)`
    `keys` `(` $keys `:` type($keys) `)`
    `values` `(` $value `:` type($value) `)`
    (`lengths` `(` $lengths^ `:` type($lengths) `)`)?
    (`offsets` `(` $query_offset^ `,` $key_offset `)`)?
    `outs` `(` $acc `,` $max `,` $sum `:` type($acc) `,` type($max) `,` type($sum) `)`
    attr-dict `->` type($result_acc) `,` type($result_max) `,` type($result_sum)
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(),
          getNumOperands() - 3, 3);
    }
    /// Whether `decomposeOperation` applies: one batch row and one head,
    /// static shapes, sequence sizes multiples of every factor.
    bool isDecomposableTile();
  }];
}

def HKT_FusedAttentionOp : HKT_Op<"fused_attention",
    [AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<HKT_AdjointOpInterface>,
     DeclareOpInterfaceMethods<AggregatedOpInterface, ["decomposeOperation"]>]> {
  let summary = "multi-level attention and its row log-sum-exp (SPEC 3-6)";
  let description = [{
    SPEC 3-6 as one op: what `hkt-fuse` makes of the step-op chain, the
    form that is both lowered (to `hkt.online_attention`) and differentiated
    (to `hkt.online_attention_backward`). With `f_l = factors[l]` and
    `d = D / H`:

    ```
    S[b, h, i, j] = sum_l weights[h, l] / sqrt(d)
                    * query_l[b, floor(i / f_l), h] . key_l[b, floor(j / f_l), h]
    S[b, h, i, j] = -inf       if causal and j > i, or j >= lengths[b]
    result[b, i, h] = sum_j softmax_j(S[b, h, i, :]) value[b, j, h]
    lse[b, h, i]    = log sum_j exp(S[b, h, i, j])
    ```

    `weights` are the convex weights `lambda = softmax(theta)` (H x L). A
    row whose keys are all masked gets a zero result and `lse = -inf`.
    `lse` is what the backward needs to recompute the probabilities tile by
    tile (FlashAttention); the decomposition computes it only when it is
    used.

    Example:

    ```mlir
    %y, %lse = hkt.fused_attention
        ins(%q0, %q1 : tensor<1x64x32xf32>, tensor<1x32x32xf32>)
        keys(%k0, %k1 : tensor<1x64x32xf32>, tensor<1x32x32xf32>)
        values(%v : tensor<1x64x32xf32>) weights(%lambda : tensor<4x2xf32>)
        outs(%init, %lse_init : tensor<1x64x32xf32>, tensor<1x4x64xf32>)
        {causal = true, factors = array<i64: 1, 2>}
        -> tensor<1x64x32xf32>, tensor<1x4x64xf32>
    ```
  }];
  let arguments = (ins Variadic<HKT_FloatTensor>:$queries,
                       Variadic<HKT_FloatTensor>:$keys,
                       HKT_FloatTensor:$value, HKT_FloatTensor:$weights,
                       Optional<HKT_IntTensor>:$lengths,
                       HKT_FloatTensor:$init, HKT_FloatTensor:$lse_init,
                       DenseI64ArrayAttr:$factors,
                       DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs HKT_FloatTensor:$result, HKT_FloatTensor:$lse);
  let assemblyFormat = [{
    `ins` `(` $queries `:` type($queries) `)`
    `keys` `(` $keys `:` type($keys) `)`
    `values` `(` $value `:` type($value) `)`
    `weights` `(` $weights `:` type($weights) `)`
    (`lengths` `(` $lengths^ `:` type($lengths) `)`)?
    `outs` `(` $init `,` $lse_init `:` type($init) `,` type($lse_init) `)`
    attr-dict `->` type($result) `,` type($lse)
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      return ::mlir::MutableOperandRange(getOperation(),
          getNumOperands() - 2, 2);
    }
  }];
}

def HKT_OnlineAttentionBackwardOp : HKT_Op<"online_attention_backward",
    [AttrSizedOperandSegments, AttrSizedResultSegments,
     DeclareOpInterfaceMethods<TilingInterface,
         ["getLoopIteratorTypes", "getIterationDomain",
          "getTiledImplementation", "getResultTilePosition"]>,
     DeclareOpInterfaceMethods<AggregatedOpInterface, ["decomposeOperation"]>]> {
  let summary = "gradients of hkt.online_attention, FlashAttention-2 style (SPEC Backward)";
  let description = [{
    The backward of the normalised online attention, recomputing the
    probabilities from the saved row log-sum-exp instead of storing them.
    With the scores `S` of `hkt.online_attention` (the queries carry the
    convex weight and the scale), per head `h`:

    ```
    P[b, h, i, j]  = exp(S[b, h, i, j] - lse[b, h, i])   (0 where masked)
    dP[b, h, i, j] = dout[b, i, h] . value[b, j, h]
    dS[b, h, i, j] = P * (dP - delta[b, h, i])
    dquery_l[b, I, h] += sum_{i : floor(i / f_l) = I} sum_j dS[b, h, i, j] key_l[b, floor(j / f_l), h]
    dkey_l[b, J, h]   += sum_{j : floor(j / f_l) = J} sum_i dS[b, h, i, j] query_l[b, floor(i / f_l), h]
    dvalue[b, j, h]   += sum_i P[b, h, i, j] dout[b, i, h]
    ```

    `delta[b, h, i] = dout[b, i, h] . out[b, i, h]` (minus the gradient of
    the lse, when it has one) is precomputed by the caller. The gradients
    are destinations and accumulate, so the key and the query dimensions
    can both be split into tiles visited in turn.

    Tiling (`TilingInterface`): the iteration domain is `(b, h, i, j)`,
    parallel in `b` and `h`. `i` and `j` are reductions (`dkey` and
    `dvalue` sum over `i`, `dquery` over `j`), so tiles along them are
    visited by sequential loops; tiles hold whole coarse rows, as for the
    forward. `offsets(%i0, %j0)` place a tile in the sequence, as for
    `hkt.online_attention`. Decomposition (`AggregatedOpInterface`): a tile
    of one batch row and one head, static, sequence sizes multiples of
    every factor.

    Example (two levels):

    ```mlir
    %dq0, %dq1, %dk0, %dk1, %dv = hkt.online_attention_backward
        ins(%q0, %q1 : tensor<1x64x32xf32>, tensor<1x32x32xf32>)
        keys(%k0, %k1 : tensor<1x64x32xf32>, tensor<1x32x32xf32>)
        values(%v : tensor<1x64x32xf32>)
        grads(%dout : tensor<1x64x32xf32>)
        stats(%lse, %delta : tensor<1x4x64xf32>, tensor<1x4x64xf32>)
        outs(%zq0, %zq1 : tensor<1x64x32xf32>, tensor<1x32x32xf32>)
        key_grads(%zk0, %zk1 : tensor<1x64x32xf32>, tensor<1x32x32xf32>)
        value_grad(%zv : tensor<1x64x32xf32>)
        {causal = true, factors = array<i64: 1, 2>}
        -> (tensor<1x64x32xf32>, tensor<1x32x32xf32>),
           (tensor<1x64x32xf32>, tensor<1x32x32xf32>), tensor<1x64x32xf32>
    ```
  }];
  let arguments = (ins Variadic<HKT_FloatTensor>:$queries,
                       Variadic<HKT_FloatTensor>:$keys,
                       HKT_FloatTensor:$value, HKT_FloatTensor:$dout,
                       HKT_FloatTensor:$lse, HKT_FloatTensor:$delta,
                       Optional<HKT_IntTensor>:$lengths,
                       Optional<Index>:$query_offset,
                       Optional<Index>:$key_offset,
                       Variadic<HKT_FloatTensor>:$dquery_init,
                       Variadic<HKT_FloatTensor>:$dkey_init,
                       HKT_FloatTensor:$dvalue_init,
                       DenseI64ArrayAttr:$factors,
                       DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs Variadic<HKT_FloatTensor>:$dqueries,
                      Variadic<HKT_FloatTensor>:$dkeys,
                      HKT_FloatTensor:$dvalue);
  let assemblyFormat = [{
    `ins` `(` $queries `:` type($queries) `)`
    `keys` `(` $keys `:` type($keys) `)`
    `values` `(` $value `:` type($value) `)`
    `grads` `(` $dout `:` type($dout) `)`
    `stats` `(` $lse `,` $delta `:` type($lse) `,` type($delta) `)`
    (`lengths` `(` $lengths^ `:` type($lengths) `)`)?
    (`offsets` `(` $query_offset^ `,` $key_offset `)`)?
    `outs` `(` $dquery_init `:` type($dquery_init) `)`
    `key_grads` `(` $dkey_init `:` type($dkey_init) `)`
    `value_grad` `(` $dvalue_init `:` type($dvalue_init) `)`
    attr-dict `->` `(` type($dqueries) `)` `,` `(` type($dkeys) `)` `,` type($dvalue)
  }];
  let extraClassDeclaration = [{
    ::mlir::MutableOperandRange getDpsInitsMutable() {
      unsigned n = getDqueryInit().size() + getDkeyInit().size() + 1;
      return ::mlir::MutableOperandRange(getOperation(),
          getNumOperands() - n, n);
    }
    /// Whether `decomposeOperation` applies: one batch row and one head,
    /// static shapes, sequence sizes multiples of every factor.
    bool isDecomposableTile();
  }];
}

//===----------------------------------------------------------------------===//
// Model ops (SPEC "The classifier model")
//===----------------------------------------------------------------------===//

def HKT_EmbedOp : HKT_Op<"embed",
    [DeclareOpInterfaceMethods<HKT_AdjointOpInterface>]> {
  let summary = "token embedding plus positions (SPEC classifier model)";
  let description = [{
    ```
    out[b, t, c] = table[tokens[b, t], c] + pos[t, c]
    ```

    `tokens` is `B x T` (integers in `[0, V)`: the caller checks, e.g. with
    the entry argument's `hkt.range`), `table` `V x D`, `pos` `P x D` with
    `T <= P` (positions past `T` are unused), the result `B x T x D`.

    ```mlir
    %x = hkt.embed ins(%tok, %table, %pos : tensor<2x8xi32>, tensor<16x4xf32>, tensor<32x4xf32>)
           outs(%init : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
    ```
  }];
  let arguments = (ins HKT_IntTensor:$tokens, HKT_FloatTensor:$table,
                       HKT_FloatTensor:$pos, HKT_FloatTensor:$init);
  let results = (outs HKT_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $tokens `,` $table `,` $pos `:` type($tokens) `,` type($table)
    `,` type($pos) `)` `outs` `(` $init `:` type($init) `)` attr-dict `->`
    type($result)
  }];
}

def HKT_LayerNormOp : HKT_Op<"layer_norm",
    [DeclareOpInterfaceMethods<HKT_AdjointOpInterface>]> {
  let summary = "layer normalisation over the last dimension";
  let description = [{
    ```
    mu = mean_c x[..., c]      var = mean_c (x[..., c] - mu)^2
    out[..., c] = (x[..., c] - mu) / sqrt(var + epsilon) * weight[c] + bias[c]
    ```

    The biased (population) variance, epsilon inside the square root (SPEC:
    1e-5, the default). `weight` and `bias` are `D`, `input` and the result
    `... x D`.

    ```mlir
    %y = hkt.layer_norm ins(%x, %w, %b : tensor<2x8x4xf32>, tensor<4xf32>, tensor<4xf32>)
           outs(%init : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
    ```
  }];
  let arguments = (ins HKT_FloatTensor:$input, HKT_FloatTensor:$weight,
                       HKT_FloatTensor:$bias, HKT_FloatTensor:$init,
                       DefaultValuedAttr<F64Attr, "1e-5">:$epsilon);
  let results = (outs HKT_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $input `,` $weight `,` $bias `:` type($input) `,` type($weight)
    `,` type($bias) `)` `outs` `(` $init `:` type($init) `)` attr-dict `->`
    type($result)
  }];
}

def HKT_GeluOp : HKT_Op<"gelu",
    [DeclareOpInterfaceMethods<HKT_AdjointOpInterface>]> {
  let summary = "GELU, tanh approximation";
  let description = [{
    ```
    out = 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))
    ```

    elementwise; `input` and the result have one shape.

    ```mlir
    %y = hkt.gelu ins(%x : tensor<16x8xf32>) outs(%init : tensor<16x8xf32>) -> tensor<16x8xf32>
    ```
  }];
  let arguments = (ins HKT_FloatTensor:$input, HKT_FloatTensor:$init);
  let results = (outs HKT_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $input `:` type($input) `)` `outs` `(` $init `:` type($init) `)`
    attr-dict `->` type($result)
  }];
}

def HKT_MeanPoolOp : HKT_Op<"mean_pool",
    [DeclareOpInterfaceMethods<HKT_AdjointOpInterface>]> {
  let summary = "mean over the valid positions of each row";
  let description = [{
    ```
    out[b, c] = (1 / len[b]) sum_{t < len[b]} input[b, t, c]
    ```

    `input` is `B x T x D`, `lengths` `B` integers in `[1, T]`, the result
    `B x D`.

    ```mlir
    %p = hkt.mean_pool ins(%x : tensor<2x8x4xf32>) lengths(%len : tensor<2xi32>)
           outs(%init : tensor<2x4xf32>) -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins HKT_FloatTensor:$input, HKT_IntTensor:$lengths,
                       HKT_FloatTensor:$init);
  let results = (outs HKT_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $input `:` type($input) `)` `lengths` `(` $lengths `:`
    type($lengths) `)` `outs` `(` $init `:` type($init) `)` attr-dict `->`
    type($result)
  }];
}

def HKT_CrossEntropyOp : HKT_Op<"cross_entropy",
    [DeclareOpInterfaceMethods<HKT_AdjointOpInterface>]> {
  let summary = "mean cross-entropy of logits against labels";
  let description = [{
    ```
    out = (1 / B) sum_b (logsumexp_k logits[b, k] - logits[b, labels[b]])
    ```

    `logits` is `B x C`, `labels` `B` integers in `[0, C)` (the caller
    checks), the result a 0-d tensor.

    ```mlir
    %l = hkt.cross_entropy ins(%logits, %labels : tensor<2x10xf32>, tensor<2xi32>)
           outs(%init : tensor<f32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins HKT_FloatTensor:$logits, HKT_IntTensor:$labels,
                       HKT_FloatTensor:$init);
  let results = (outs HKT_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $logits `,` $labels `:` type($logits) `,` type($labels) `)`
    `outs` `(` $init `:` type($init) `)` attr-dict `->` type($result)
  }];
}

def HKT_TokenLengthsOp : HKT_Op<"token_lengths"> {
  let summary = "the number of tokens before the first padding token";
  let description = [{
    ```
    out[b] = min { t : tokens[b, t] = 0 }, or T when no token is 0
    ```

    (SPEC: `len[b]`, 0 is padding; a row with length 0 is an input error the
    caller reports.) `tokens` is `B x T`, the result `B` integers. Not
    differentiable: its result is an integer.

    ```mlir
    %len = hkt.token_lengths ins(%tok : tensor<2x8xi32>) outs(%init : tensor<2xi32>) -> tensor<2xi32>
    ```
  }];
  let arguments = (ins HKT_IntTensor:$tokens, HKT_IntTensor:$init);
  let results = (outs HKT_IntTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $tokens `:` type($tokens) `)` `outs` `(` $init `:` type($init) `)`
    attr-dict `->` type($result)
  }];
}

//===----------------------------------------------------------------------===//
// The whole layer
//===----------------------------------------------------------------------===//

def HKT_AttentionOp : HKT_Op<"attention", [AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<AggregatedOpInterface, ["decomposeOperation"]>]> {
  let summary = "one Hierarchical Kernel Transformer attention layer (SPEC 1-8)";
  let description = [{
    The whole HKT attention layer of shared/SPEC.md, sections 1-8:

    ```
    X^(0) = x;  X^(l) = downsample(X^(l-1), down_w[l-1], down_b[l-1])   (l >= 1)
    S^(l) = (X^(l) wq[l]) (X^(l) wk[l])^T / sqrt(d)      per head
    S     = sum_l softmax(theta)[h, l] * upsample(S^(l), stride^l)
    A     = softmax_j(mask(S))                            causal / key lengths
    Attn  = A (x wv)                                      per head
    O     = sigmoid(gamma) Attn + (1 - sigmoid(gamma)) causal_conv(x wv, conv_u)
    y     = O wo
    ```

    Operands: `x` (`B x T x D`), `wq`, `wk` (`L x D x D`), `wv`, `wo`
    (`D x D`), `theta` (`H x L`); `downsample(down_w, down_b)`
    (`(L-1) x D x kernel`, `(L-1) x D`) exactly when `levels > 1`;
    `conv(conv_u, gamma)` (`D x conv_kernel`, `H`) exactly when `hybrid`;
    optional `lengths` (`B` integers in `[1, T]`, the key lengths). Weights are
    input-major (`Y = X W`). With `levels = 1` and `hybrid = false` this is
    standard multi-head attention.

    `hkt-decompose` rewrites it into the step ops (`decomposeOperation`).

    Example:

    ```mlir
    %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta
           : tensor<2x64x32xf32>, tensor<3x32x32xf32>, tensor<3x32x32xf32>,
             tensor<32x32xf32>, tensor<32x32xf32>, tensor<4x3xf32>)
           downsample(%dw, %db : tensor<2x32x3xf32>, tensor<2x32xf32>)
           conv(%u, %g : tensor<32x3xf32>, tensor<4xf32>)
           lengths(%len : tensor<2xi32>)
           outs(%init : tensor<2x64x32xf32>)
           {causal = true, heads = 4 : i64, levels = 3 : i64} -> tensor<2x64x32xf32>
    ```
  }];
  let arguments = (ins
    HKT_FloatTensor:$x, HKT_FloatTensor:$wq, HKT_FloatTensor:$wk,
    HKT_FloatTensor:$wv, HKT_FloatTensor:$wo, HKT_FloatTensor:$theta,
    Optional<HKT_FloatTensor>:$down_w, Optional<HKT_FloatTensor>:$down_b,
    Optional<HKT_FloatTensor>:$conv_u, Optional<HKT_FloatTensor>:$gamma,
    Optional<HKT_IntTensor>:$lengths,
    HKT_FloatTensor:$init,
    HKT_PositiveI64Attr:$heads,
    HKT_PositiveI64Attr:$levels,
    DefaultValuedAttr<HKT_PositiveI64Attr, "2">:$stride,
    DefaultValuedAttr<HKT_PositiveI64Attr, "3">:$kernel,
    DefaultValuedAttr<HKT_PositiveI64Attr, "3">:$conv_kernel,
    DefaultValuedAttr<BoolAttr, "false">:$hybrid,
    DefaultValuedAttr<BoolAttr, "false">:$causal);
  let results = (outs HKT_FloatTensor:$result);
  let assemblyFormat = [{
    `ins` `(` $x `,` $wq `,` $wk `,` $wv `,` $wo `,` $theta `:` type($x) `,`
    type($wq) `,` type($wk) `,` type($wv) `,` type($wo) `,` type($theta) `)`
    (`downsample` `(` $down_w^ `,` $down_b `:` type($down_w) `,` type($down_b) `)`)?
    (`conv` `(` $conv_u^ `,` $gamma `:` type($conv_u) `,` type($gamma) `)`)?
    (`lengths` `(` $lengths^ `:` type($lengths) `)`)?
    `outs` `(` $init `:` type($init) `)` attr-dict `->` type($result)
  }];
}

#endif // HKT_DIALECT_HKTOPS_TD
