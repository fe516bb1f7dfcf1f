//===- OnlineAttentionTile.h - one tile of hkt.online_attention -*- C++ -*-===//
//
// The per-tile algorithm of hkt.online_attention (SPEC 3-6), shared by the
// op's decomposition (AggregatedOpInterface) and by the CPU lowering, which
// feeds it packed operands (head-major, keys pre-transposed and reordered
// inside tiles).
//
//===----------------------------------------------------------------------===//

#ifndef HKT_DIALECT_ONLINEATTENTIONTILE_H
#define HKT_DIALECT_ONLINEATTENTIONTILE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::hkt {

/// The order of keys (and values) inside a key tile of `tileK` keys.
///
/// When the distinct level factors form a divisibility chain 1 | f_1 | ...
/// | f_m (always, for stride^l), a key at offset j = c * P + r of its tile
/// (P = f_m, r in mixed radix with digits r_0 (base s_1 = f_1 / 1, least
/// significant) .. r_{m-1}) sits at the row-major position of (r_0, ...,
/// r_{m-1}, c). The f_k keys that share a level-k coarse key then lie
/// tileK / f_k apart, so each level's f x f broadcast is a copy of contiguous
/// row segments instead of a strided scatter; softmax and P V sum over keys,
/// so any order gives the same result as long as the values follow. Other
/// factor sets (hand-written IR only) keep keys in order.
struct KeyTileOrder {
  /// Keys in order (no reordering).
  KeyTileOrder() = default;
  /// The reordering for `factors` and tiles of `tileK` keys (a multiple of
  /// every factor); keys in order when the factors form no chain.
  KeyTileOrder(ArrayRef<int64_t> factors, int64_t tileK);

  bool reordered() const { return !originalOffset.empty(); }
  /// The radices above `factor` (s_{k+1} .. s_m where s_1 ... s_k = factor):
  /// the order of the level's own key tiles (of tileK / factor keys).
  ArrayRef<int64_t> radicesAbove(int64_t factor) const;

  /// Distinct factors, ascending (a chain), and the radices s_k between them.
  SmallVector<int64_t> chainFactors, radices;
  /// For each position of a reordered tile, the key's offset in the tile.
  SmallVector<int64_t> originalOffset;
};

/// How a tile applies the masks of SPEC 5.
enum class TileMask {
  /// Never: the caller knows every key of the tile is visible to every row.
  None,
  /// Always.
  Always,
  /// At run time: a tile with no visible key leaves the state unchanged, and
  /// the mask is applied only when the tile crosses the diagonal or the key
  /// length.
  IfNeeded,
};

/// The operands of one tile: one batch row and one head, static shapes.
struct OnlineAttentionTileOperands {
  SmallVector<Value> queries; ///< per level: (tileQ / f_l) x d
  SmallVector<Value> keysT;   ///< per level: d x (tileK / f_l), in `order`
  Value value;                ///< tileK x d, rows in `order`
  Value acc, max, sum;        ///< tileQ x d, tileQ, tileQ
  Value queryOffset;          ///< index: sequence position of query row 0
  Value keyOffset;            ///< index: sequence position of key 0
  Value keyLength;            ///< index: keys at or past it are masked; or null
  bool causal = false;
};

/// Builds one online-softmax update of (acc, max, sum) by the tile's keys:
/// S = sum_l (queries_l keysT_l) broadcast (each level's coarse block once),
/// masked as `mask` says, then m' = max(m, rowmax S), P = exp(S - m'),
/// sum' = sum exp(m - m') + rowsum P, acc' = acc exp(m - m') + P value.
/// Returns {acc', max', sum'}.
SmallVector<Value> buildOnlineAttentionTile(
    OpBuilder &b, Location loc, const OnlineAttentionTileOperands &tile,
    ArrayRef<int64_t> factors, const KeyTileOrder &order, TileMask mask);

/// The scores S of one tile (tileQ x tileK, keys in `order`) from
/// `tile.queries` and `tile.keysT`: each level's block computed once at its
/// coarse resolution (the forward's algorithm; the backward recomputes it).
Value buildTileScores(OpBuilder &b, Location loc,
                      const OnlineAttentionTileOperands &tile,
                      ArrayRef<int64_t> factors, const KeyTileOrder &order,
                      int64_t tileQ, int64_t tileK);

/// The operands of one tile of hkt.online_attention_backward (one batch row,
/// one head, tileQ queries x tileK keys), each a matrix in the layout its
/// matmul reads, so that no tile is transposed inside the loops.
struct OnlineAttentionBackwardTileOperands {
  SmallVector<Value> queries;  ///< per level: (tileQ / f_l) x d
  SmallVector<Value> queriesT; ///< per level: d x (tileQ / f_l)
  SmallVector<Value> keys;     ///< per level: (tileK / f_l) x d, in `order`
  SmallVector<Value> keysT;    ///< per level: d x (tileK / f_l), in `order`
  Value valueT;                ///< d x tileK, columns in `order`
  Value dout, doutT;           ///< tileQ x d, d x tileQ
  Value lse, delta;            ///< tileQ each
  /// Accumulated: dQ per level (tileQ / f_l) x d, dK^T per level
  /// d x (tileK / f_l) in `order`, dV^T d x tileK in `order`.
  SmallVector<Value> dqueries, dkeysT;
  Value dvalueT;
  Value queryOffset, keyOffset; ///< index: sequence positions of row/key 0
  Value keyLength;              ///< index, or null
  bool causal = false;
};

/// One tile of the backward: P from the saved lse, dP = dout V^T,
/// dS = P (dP - delta), dV^T += dout^T P, and per level the block sums G of
/// dS (each level's block once, at its resolution): dK^T += Q^T G,
/// dQ += G K. Returns dqueries..., dkeysT..., dvalueT. `mask` as for the
/// forward; a tile with no visible key is left to the caller's loop bounds
/// (IfNeeded masks when the tile crosses the diagonal or the key length).
SmallVector<Value> buildOnlineAttentionBackwardTile(
    OpBuilder &b, Location loc, const OnlineAttentionBackwardTileOperands &tile,
    ArrayRef<int64_t> factors, const KeyTileOrder &order, TileMask mask);

/// query_l * weights[h, l] / sqrt(headDim) for each level's B x T_l x D
/// query (head h = column / headDim): what hkt.online_attention takes.
SmallVector<Value> buildScaledQueries(OpBuilder &b, Location loc,
                                      ValueRange queries, Value weights,
                                      int64_t headDim);

} // namespace mlir::hkt

#endif // HKT_DIALECT_ONLINEATTENTIONTILE_H
