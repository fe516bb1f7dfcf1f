//===- LowerOnlineAttention.cpp - hkt.online_attention -> gpu.launch ------===//
//
// The attention kernel of the NVVM path (docs/gpu.md): one thread block per
// (query tile, head, batch row), one thread per query row. The block stages
// each key tile of every level (and the values) in shared memory; each
// level >= 1's coarse score block is computed once per tile pair by the
// block, cooperatively, and read back by the rows it covers; level 0's
// scores, the online softmax and P V stay in the thread's registers. Key
// tiles above the diagonal (causal) or past the batch row's key length are
// not visited. With precision=tf32 the two products (Q0 K0^T and P V) run
// on the tensor cores instead (gpu.subgroup_mma, wmma m16n16k8 tf32), each
// warp on its 32 rows, the tile's scores and accumulator in shared memory.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/AttentionKernels.h"
#include "passes/codegen/nvvm/Passes.h"
#include "passes/codegen/nvvm/TargetInfo.h"
#include "passes/transforms/Passes.h"

#include "dialect/HKTDialect.h"
#include "dialect/HKTOps.h"
#include "dialect/Utils/KernelNames.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Utils/Utils.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"

#include <limits>

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMLOWERONLINEATTENTIONPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt;

namespace {

using Target = NvvmTargetInfo;

/// Rows of query a warp owns in the tensor-core kernel: one thread per row,
/// so a warp's rows are its threads (two 16-row fragments).
constexpr int64_t kWarpRows = Target::kWarpSize;

struct KernelShape : nvvm::AttentionDims {
  int64_t tileQ, tileK, chunk;
  /// TF32 tensor cores (gpu.subgroup_mma, wmma m16n16k8) for Q0 K0^T and
  /// P V; the block's scores and accumulator then live in shared memory.
  bool tensorCores = false;

  /// Rows of shared arrays holding level l >= 1's keys are padded by one
  /// word: the coarse-score loop reads them with a stride of one row per
  /// thread, which would otherwise hit one bank.
  int64_t sharedBytes() const {
    int64_t words = 2 * tileK * headDim; // level-0 keys, values
    if (tensorCores)
      words += tileQ * tileK + tileQ * headDim; // scores / P, accumulator
    for (size_t l = 1; l < factors.size(); ++l) {
      int64_t f = factors[l];
      words += (tileK / f) * (headDim + 1) + (tileQ / f) * headDim +
               (tileQ / f) * (tileK / f + 1);
    }
    // Each array may be padded to the alignment of
    // hkt-nvvm-align-workgroup-memory (the wmma fragments').
    int64_t arrays = 2 + 3 * (factors.size() - 1) + (tensorCores ? 2 : 0);
    return 4 * words + Target::kMmaFragmentAlignment * arrays;
  }
};

/// Builds the kernel of one hkt.online_attention, phase by phase; the
/// phases share the values below, in the order run() creates them.
class Lowering {
public:
  Lowering(OnlineAttentionOp op, const KernelShape &shape);
  LogicalResult run();

private:
  Value c(int64_t v) { return arith::ConstantIndexOp::create(b, v); }
  IntegerAttr lead(int64_t n) { return b.getIndexAttr(n); }
  /// dst[r, c] = src[batch, base + r, col0 + c] for r < rows (0 past
  /// `limit` rows), the block's threads striding over the elements.
  void stageRows(Value dst, Value src, Value base, int64_t rows, Value limit);

  // Host side, before the launch.
  void bufferOperands();
  SmallVector<Type> sharedArrayTypes();
  gpu::LaunchOp createLaunch();
  // The kernel body, once per block.
  void allocateSharedArrays(ArrayRef<Type> types);
  void computeRowIndices(gpu::LaunchOp launch);
  void stageCoarseQueries();
  SmallVector<Value> loadRowState();
  void loadQueryFragments();
  // One key tile.
  scf::ForOp buildTileLoop(ValueRange init, Value numTiles);
  void stageKeyTiles();
  void computeCoarseScores();
  Value maskedScore(Value score, Value jj);
  void updateRowWithTensorCores(scf::ForOp tileLoop);
  void computeFineScoresMma();
  std::pair<Value, Value> updateRowInShared(ValueRange state);
  void accumulatePVMma();
  void updateRowInRegisters(scf::ForOp tileLoop);
  void updateRowOverChunk(scf::ForOp chunkLoop);
  // Back on the host side.
  void storeRowResults(scf::ForOp tileLoop);

  OnlineAttentionOp op;
  KernelShape s;
  ImplicitLocOpBuilder b;
  Type f32;
  /// The fragment types of wmma m16n16k8 tf32: A, B and the accumulator.
  gpu::MMAMatrixType aType, bType, cType;

  // The operands as buffers in global memory, the result buffers; the
  // level-0 queries padded to whole tiles (tensor cores).
  nvvm::AttentionBuffers buf;
  Value paddedQuery;
  // The sizes on the host (constants where static).
  nvvm::AttentionExtents size;

  // The block's shared arrays: each level's key tile, the value tile,
  // level >= 1's query tiles and coarse scores; with tensor cores the
  // tile's fine scores (then P) and the accumulator.
  SmallVector<Value> keyTile, queryTile, scoreTile;
  Value valueTile, fineScores, accTile;

  // The thread's row: thread id, block (head, batch), first column of the
  // head, first row of the tile, the row, and the row clamped to the
  // sequence.
  Value tid, head, batch, col0, i0, row, rowInside, rowC;
  // The row's level-0 query in registers (SIMT), or the warp's first row
  // and its query fragments (tensor cores).
  SmallVector<Value> q0;
  Value warpRow0;
  SmallVector<SmallVector<Value>> queryFragments;
  // The batch row's key length, if the op has lengths.
  Value keyLength;

  // The key tile being built: its first key, and -inf for masked scores.
  Value j0, negInf;
};

Lowering::Lowering(OnlineAttentionOp op, const KernelShape &shape)
    : op(op), s(shape), b(op.getLoc(), op), f32(b.getF32Type()),
      aType(
          gpu::MMAMatrixType::get({Target::kMmaM, Target::kMmaK}, f32, "AOp")),
      bType(
          gpu::MMAMatrixType::get({Target::kMmaK, Target::kMmaN}, f32, "BOp")),
      cType(gpu::MMAMatrixType::get({Target::kMmaM, Target::kMmaN}, f32,
                                    "COp")) {}

LogicalResult Lowering::run() {
  bufferOperands();
  SmallVector<Type> sharedTypes = sharedArrayTypes();
  gpu::LaunchOp launch = createLaunch();
  allocateSharedArrays(sharedTypes);
  computeRowIndices(launch);
  stageCoarseQueries();
  SmallVector<Value> init = loadRowState();
  Value numTiles =
      nvvm::countKeyTiles(b, op.getCausal(), buf.lengths, size.tq, size.tk, i0,
                          batch, s.tileQ, s.tileK, keyLength);
  scf::ForOp tileLoop = buildTileLoop(init, numTiles);
  storeRowResults(tileLoop);
  buf.replaceOp(b, op, launch);
  return success();
}

void Lowering::stageRows(Value dst, Value src, Value base, int64_t rows,
                         Value limit) {
  int64_t d = s.headDim;
  auto loop = scf::ForOp::create(b, tid, c(rows * d), c(s.tileQ));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value e = loop.getInductionVar();
  Value r = arith::DivUIOp::create(b, e, c(d));
  Value col = arith::RemUIOp::create(b, e, c(d));
  Value row = arith::AddIOp::create(b, base, r);
  Value inside =
      arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, limit);
  Value clamped = arith::MinUIOp::create(
      b, row, b.createOrFold<arith::SubIOp>(limit, c(1)));
  Value x = memref::LoadOp::create(
      b, src, ValueRange{batch, clamped, arith::AddIOp::create(b, col0, col)});
  Value zero = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
  x = arith::SelectOp::create(b, inside, x, zero);
  memref::StoreOp::create(b, x, dst, ValueRange{r, col});
}

/// The operands become read-only buffers and the results fresh ones, so
/// that one-shot bufferization later sees through the kernel as on the CPU.
void Lowering::bufferOperands() {
  buf = nvvm::AttentionBuffers::create(b, op);
  size = nvvm::AttentionExtents::create(b, buf.queries, buf.keys, buf.value);
  // The tensor cores load whole 16-row fragments of the level-0 queries
  // from global memory: rows padded to whole tiles.
  paddedQuery = buf.queries[0];
  if (s.tensorCores && (ShapedType::isDynamic(s.tq) || s.tq % s.tileQ)) {
    auto type = cast<RankedTensorType>(op.getQueries()[0].getType());
    int64_t paddedRows = ShapedType::isDynamic(s.tq)
                             ? ShapedType::kDynamic
                             : llvm::divideCeil(s.tq, s.tileQ) * s.tileQ;
    auto padded =
        RankedTensorType::get({s.batch, paddedRows, type.getDimSize(2)}, f32);
    SmallVector<Value> dynamicDims;
    if (ShapedType::isDynamic(s.batch))
      dynamicDims.push_back(size.batch);
    if (ShapedType::isDynamic(paddedRows))
      dynamicDims.push_back(arith::MulIOp::create(
          b, nvvm::ceilDiv(b, size.tq, s.tileQ), c(s.tileQ)));
    Value zero = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
    Value pad =
        tensor::createPadHighOp(padded, op.getQueries()[0], zero,
                                /*nofold=*/false, b.getLoc(), b, dynamicDims);
    paddedQuery = nvvm::readOnlyBuffer(b, pad);
  }
}

/// The shared arrays' types, in the order allocateSharedArrays names them:
/// the block reuses each key tile across its rows, hence shared memory.
SmallVector<Type> Lowering::sharedArrayTypes() {
  int64_t d = s.headDim, levels = s.levels();
  auto workgroup =
      gpu::AddressSpaceAttr::get(op.getContext(), gpu::AddressSpace::Workgroup);
  auto shared = [&](int64_t rows, int64_t cols) -> Type {
    return MemRefType::get({rows, cols}, f32, MemRefLayoutAttrInterface(),
                           workgroup);
  };
  SmallVector<Type> types;
  for (int64_t l = 0; l < levels; ++l)
    types.push_back(shared(s.tileK / s.factors[l], l ? d + 1 : d));
  types.push_back(shared(s.tileK, d));
  for (int64_t l = 1; l < levels; ++l) {
    types.push_back(shared(s.tileQ / s.factors[l], d));
    types.push_back(shared(s.tileQ / s.factors[l], s.tileK / s.factors[l] + 1));
  }
  if (s.tensorCores) {
    types.push_back(shared(s.tileQ, s.tileK)); // scores, then P
    types.push_back(shared(s.tileQ, d));       // the accumulator
  }
  return types;
}

/// One block per (query tile, head, batch row), one thread per query row;
/// the builder is left inside the body, before its terminator.
gpu::LaunchOp Lowering::createLaunch() {
  auto launch =
      gpu::LaunchOp::create(b, nvvm::ceilDiv(b, size.tq, s.tileQ), c(s.heads),
                            size.batch, c(s.tileQ), c(1), c(1));
  // Named for profilers and --kernel-report, like the bf16 kernels.
  launch.setFunctionAttr(FlatSymbolRefAttr::get(
      b.getContext(), s.tensorCores ? "attention_fwd_tf32" : "attention_fwd_f32"));
  Block &body = launch.getBody().front();
  b.setInsertionPointToStart(&body);
  gpu::TerminatorOp terminator = gpu::TerminatorOp::create(b);
  b.setInsertionPoint(terminator);
  return launch;
}

/// Workgroup allocas, not attributions: ownership-based deallocation gives
/// every memref block argument an ownership flag, which gpu.launch does not
/// accept. hkt-nvvm-host-staging turns them into attributions.
void Lowering::allocateSharedArrays(ArrayRef<Type> types) {
  int64_t levels = s.levels();
  SmallVector<Value> arrays;
  for (Type type : types)
    arrays.push_back(memref::AllocaOp::create(b, cast<MemRefType>(type)));
  keyTile.assign(arrays.begin(), arrays.begin() + levels);
  valueTile = arrays[levels];
  queryTile.resize(levels);
  scoreTile.resize(levels);
  for (int64_t l = 1; l < levels; ++l) {
    queryTile[l] = arrays[levels + 1 + 2 * (l - 1)];
    scoreTile[l] = arrays[levels + 2 + 2 * (l - 1)];
  }
  if (s.tensorCores) {
    fineScores = arrays[arrays.size() - 2];
    accTile = arrays.back();
  }
}

/// The thread's query row and the block's head and batch row.
void Lowering::computeRowIndices(gpu::LaunchOp launch) {
  tid = launch.getThreadIds().x;
  Value qTile = launch.getBlockIds().x;
  head = launch.getBlockIds().y;
  batch = launch.getBlockIds().z;
  col0 = arith::MulIOp::create(b, head, c(s.headDim));
  i0 = arith::MulIOp::create(b, qTile, c(s.tileQ));
  row = arith::AddIOp::create(b, i0, tid);
  rowInside = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, row, size.tq);
  // Rows past the end compute on the last row and store nothing: every
  // thread reaches every barrier.
  rowC = arith::MinUIOp::create(b, row,
                                b.createOrFold<arith::SubIOp>(size.tq, c(1)));
}

/// The coarse query tiles, staged once: every key tile reads them.
void Lowering::stageCoarseQueries() {
  for (int64_t l = 1; l < s.levels(); ++l) {
    int64_t f = s.factors[l];
    stageRows(queryTile[l], buf.queries[l], arith::DivUIOp::create(b, i0, c(f)),
              s.tileQ / f, size.queryRows[l]);
  }
}

/// The row's running max and sum (the tile loop's first two values), its
/// accumulator (the rest, or in shared memory with tensor cores) and its
/// level-0 query: loaded once, they stay on chip over all key tiles.
SmallVector<Value> Lowering::loadRowState() {
  SmallVector<Value> init;
  init.push_back(
      memref::LoadOp::create(b, buf.maxIn, ValueRange{batch, head, rowC}));
  init.push_back(
      memref::LoadOp::create(b, buf.sumIn, ValueRange{batch, head, rowC}));
  if (s.tensorCores)
    loadQueryFragments();
  for (int64_t k = 0; k < s.headDim; ++k) {
    Value col = arith::AddIOp::create(b, col0, c(k));
    Value a = memref::LoadOp::create(b, buf.accIn, ValueRange{batch, rowC, col});
    if (s.tensorCores) {
      memref::StoreOp::create(b, a, accTile, ValueRange{tid, c(k)});
      continue;
    }
    init.push_back(a);
    q0.push_back(
        memref::LoadOp::create(b, buf.queries[0], ValueRange{batch, rowC, col}));
  }
  return init;
}

/// Tensor cores: the warp's level-0 query fragments (2 x d / 8 of 16 x 8),
/// loaded once from global memory, as every key tile multiplies them.
void Lowering::loadQueryFragments() {
  int64_t d = s.headDim, modelDim = s.heads * d;
  warpRow0 = arith::MulIOp::create(
      b, arith::DivUIOp::create(b, tid, c(Target::kWarpSize)), c(kWarpRows));
  for (int64_t rf = 0; rf < kWarpRows / Target::kMmaM; ++rf) {
    queryFragments.emplace_back();
    Value r = arith::AddIOp::create(
        b, i0, arith::AddIOp::create(b, warpRow0, c(Target::kMmaM * rf)));
    for (int64_t kk = 0; kk < d / Target::kMmaK; ++kk)
      queryFragments.back().push_back(gpu::SubgroupMmaLoadMatrixOp::create(
          b, aType, paddedQuery,
          ValueRange{batch, r,
                     arith::AddIOp::create(b, col0, c(Target::kMmaK * kk))},
          lead(modelDim), nullptr));
  }
}

/// The loop over key tiles, the row's state carried: stage the tile, build
/// the coarse scores, then the row's online-softmax update.
scf::ForOp Lowering::buildTileLoop(ValueRange init, Value numTiles) {
  auto tileLoop = scf::ForOp::create(b, c(0), numTiles, c(1), init);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(tileLoop.getBody());
  j0 = arith::MulIOp::create(b, tileLoop.getInductionVar(), c(s.tileK));
  stageKeyTiles();
  gpu::BarrierOp::create(b);
  computeCoarseScores();
  if (s.levels() > 1 && !s.tensorCores)
    gpu::BarrierOp::create(b);
  negInf = arith::ConstantOp::create(
      b, b.getF32FloatAttr(-std::numeric_limits<float>::infinity()));
  if (s.tensorCores)
    updateRowWithTensorCores(tileLoop);
  else
    updateRowInRegisters(tileLoop);
  return tileLoop;
}

/// Every level's keys and the values of the tile, in shared memory, as all
/// the block's rows read them.
void Lowering::stageKeyTiles() {
  for (int64_t l = 0; l < s.levels(); ++l) {
    int64_t f = s.factors[l];
    stageRows(keyTile[l], buf.keys[l], arith::DivUIOp::create(b, j0, c(f)),
              s.tileK / f, size.keyRows[l]);
  }
  stageRows(valueTile, buf.value, j0, s.tileK, size.tk);
}

/// Each level >= 1's coarse score block, once per tile pair and shared by
/// the f rows that cover each coarse row, instead of once per row.
void Lowering::computeCoarseScores() {
  int64_t d = s.headDim;
  for (int64_t l = 1; l < s.levels(); ++l) {
    int64_t f = s.factors[l], cols = s.tileK / f;
    auto loop = scf::ForOp::create(b, tid, c((s.tileQ / f) * cols), c(s.tileQ));
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(loop.getBody());
    Value e = loop.getInductionVar();
    Value I = arith::DivUIOp::create(b, e, c(cols));
    Value J = arith::RemUIOp::create(b, e, c(cols));
    Value acc = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
    for (int64_t k = 0; k < d; ++k) {
      Value x = memref::LoadOp::create(b, queryTile[l], ValueRange{I, c(k)});
      Value y = memref::LoadOp::create(b, keyTile[l], ValueRange{J, c(k)});
      acc = math::FmaOp::create(b, x, y, acc);
    }
    memref::StoreOp::create(b, acc, scoreTile[l], ValueRange{I, J});
  }
}

/// The key j0 + jj of this row: its fine score plus the coarse ones if
/// live, else -inf (causal, past the end, past the key length).
Value Lowering::maskedScore(Value score, Value jj) {
  for (int64_t l = 1; l < s.levels(); ++l) {
    Value f = c(s.factors[l]);
    Value coarse =
        memref::LoadOp::create(b, scoreTile[l],
                               ValueRange{arith::DivUIOp::create(b, tid, f),
                                          arith::DivUIOp::create(b, jj, f)});
    score = arith::AddFOp::create(b, score, coarse);
  }
  Value j = arith::AddIOp::create(b, j0, jj);
  Value live = arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j, size.tk);
  if (op.getCausal())
    live = arith::AndIOp::create(
        b, live, arith::CmpIOp::create(b, arith::CmpIPredicate::ule, j, row));
  if (keyLength)
    live = arith::AndIOp::create(
        b, live,
        arith::CmpIOp::create(b, arith::CmpIPredicate::ult, j, keyLength));
  return arith::SelectOp::create(b, live, score, negInf).getResult();
}

/// Tensor cores: S0 and P V as warp-level products through shared memory,
/// the softmax per row in between; barriers order the warps' accesses.
void Lowering::updateRowWithTensorCores(scf::ForOp tileLoop) {
  computeFineScoresMma();
  gpu::BarrierOp::create(b);
  auto [mNew, newSum] = updateRowInShared(tileLoop.getRegionIterArgs());
  gpu::BarrierOp::create(b);
  accumulatePVMma();
  gpu::BarrierOp::create(b);
  scf::YieldOp::create(b, ValueRange{mNew, newSum});
}

/// S0 = Q0 K0^T on the tensor cores, each warp its 32 rows, into the
/// shared scores, where each row's thread reads its own.
void Lowering::computeFineScoresMma() {
  int64_t d = s.headDim;
  for (int64_t rf = 0; rf < kWarpRows / Target::kMmaM; ++rf)
    for (int64_t cf = 0; cf < s.tileK / Target::kMmaN; ++cf) {
      Value acc = gpu::SubgroupMmaConstantMatrixOp::create(
          b, cType, arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f)));
      for (int64_t kk = 0; kk < d / Target::kMmaK; ++kk) {
        Value keysT = gpu::SubgroupMmaLoadMatrixOp::create(
            b, bType, keyTile[0],
            ValueRange{c(Target::kMmaN * cf), c(Target::kMmaK * kk)}, lead(d),
            b.getUnitAttr());
        // b_transpose: the mma's B layout must be the load's (col).
        acc = gpu::SubgroupMmaComputeOp::create(b, cType,
                                                queryFragments[rf][kk], keysT,
                                                acc, nullptr, b.getUnitAttr());
      }
      gpu::SubgroupMmaStoreMatrixOp::create(
          b, acc, fineScores,
          ValueRange{arith::AddIOp::create(b, warpRow0, c(Target::kMmaM * rf)),
                     c(Target::kMmaN * cf)},
          lead(s.tileK), nullptr);
    }
}

/// The row's online update over the whole tile: P over its scores, its
/// accumulator row rescaled; returns the new max and sum.
std::pair<Value, Value> Lowering::updateRowInShared(ValueRange state) {
  Value m = state[0], sum = state[1];
  SmallVector<Value> scores;
  Value tileMax = negInf;
  for (int64_t jj = 0; jj < s.tileK; ++jj) {
    Value fine = memref::LoadOp::create(b, fineScores, ValueRange{tid, c(jj)});
    scores.push_back(maskedScore(fine, c(jj)));
    tileMax = arith::MaximumFOp::create(b, tileMax, scores.back());
  }
  Value mNew = arith::MaximumFOp::create(b, m, tileMax);
  Value scale = math::ExpOp::create(b, arith::SubFOp::create(b, m, mNew));
  Value newSum = arith::MulFOp::create(b, sum, scale);
  for (int64_t jj = 0; jj < s.tileK; ++jj) {
    Value p =
        math::ExpOp::create(b, arith::SubFOp::create(b, scores[jj], mNew));
    newSum = arith::AddFOp::create(b, newSum, p);
    memref::StoreOp::create(b, p, fineScores, ValueRange{tid, c(jj)});
  }
  for (int64_t k = 0; k < s.headDim; ++k) {
    Value o = memref::LoadOp::create(b, accTile, ValueRange{tid, c(k)});
    memref::StoreOp::create(b, arith::MulFOp::create(b, o, scale), accTile,
                            ValueRange{tid, c(k)});
  }
  return {mNew, newSum};
}

/// acc += P V on the tensor cores, each warp its 32 rows of the shared
/// accumulator.
void Lowering::accumulatePVMma() {
  int64_t d = s.headDim;
  for (int64_t rf = 0; rf < kWarpRows / Target::kMmaM; ++rf) {
    Value r = arith::AddIOp::create(b, warpRow0, c(Target::kMmaM * rf));
    for (int64_t nf = 0; nf < d / Target::kMmaN; ++nf) {
      Value acc = gpu::SubgroupMmaLoadMatrixOp::create(
          b, cType, accTile, ValueRange{r, c(Target::kMmaN * nf)}, lead(d),
          nullptr);
      for (int64_t kk = 0; kk < s.tileK / Target::kMmaK; ++kk) {
        Value p = gpu::SubgroupMmaLoadMatrixOp::create(
            b, aType, fineScores, ValueRange{r, c(Target::kMmaK * kk)},
            lead(s.tileK), nullptr);
        Value v = gpu::SubgroupMmaLoadMatrixOp::create(
            b, bType, valueTile,
            ValueRange{c(Target::kMmaK * kk), c(Target::kMmaN * nf)}, lead(d),
            nullptr);
        acc = gpu::SubgroupMmaComputeOp::create(b, cType, p, v, acc, nullptr,
                                                nullptr);
      }
      gpu::SubgroupMmaStoreMatrixOp::create(
          b, acc, accTile, ValueRange{r, c(Target::kMmaN * nf)}, lead(d),
          nullptr);
    }
  }
}

/// SIMT: the row's online update, `chunk` keys at a time (their scores in
/// registers, one rescaling per chunk rather than per key).
void Lowering::updateRowInRegisters(scf::ForOp tileLoop) {
  auto chunkLoop = scf::ForOp::create(b, c(0), c(s.tileK), c(s.chunk),
                                      tileLoop.getRegionIterArgs());
  {
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(chunkLoop.getBody());
    updateRowOverChunk(chunkLoop);
  }
  // The next tile overwrites the shared arrays.
  gpu::BarrierOp::create(b);
  scf::YieldOp::create(b, chunkLoop.getResults());
}

/// One chunk: its scores (Q0 K0^T by FMAs, masked), the new max, P, and the
/// rescaled accumulator plus P V.
void Lowering::updateRowOverChunk(scf::ForOp chunkLoop) {
  int64_t d = s.headDim;
  Value jc = chunkLoop.getInductionVar();
  ValueRange state = chunkLoop.getRegionIterArgs();
  Value m = state[0], sum = state[1];
  SmallVector<Value> scores, jjs;
  Value tileMax = negInf;
  for (int64_t u = 0; u < s.chunk; ++u) {
    Value jj = arith::AddIOp::create(b, jc, c(u));
    jjs.push_back(jj);
    Value score = arith::ConstantOp::create(b, b.getF32FloatAttr(0.0f));
    for (int64_t k = 0; k < d; ++k) {
      Value y = memref::LoadOp::create(b, keyTile[0], ValueRange{jj, c(k)});
      score = math::FmaOp::create(b, q0[k], y, score);
    }
    score = maskedScore(score, jj);
    scores.push_back(score);
    tileMax = arith::MaximumFOp::create(b, tileMax, score);
  }
  Value mNew = arith::MaximumFOp::create(b, m, tileMax);
  Value scale = math::ExpOp::create(b, arith::SubFOp::create(b, m, mNew));
  SmallVector<Value> p;
  Value newSum = arith::MulFOp::create(b, sum, scale);
  for (Value score : scores) {
    p.push_back(math::ExpOp::create(b, arith::SubFOp::create(b, score, mNew)));
    newSum = arith::AddFOp::create(b, newSum, p.back());
  }
  SmallVector<Value> next{mNew, newSum};
  for (int64_t k = 0; k < d; ++k) {
    Value o = arith::MulFOp::create(b, state[2 + k], scale);
    for (int64_t u = 0; u < s.chunk; ++u) {
      Value v = memref::LoadOp::create(b, valueTile, ValueRange{jjs[u], c(k)});
      o = math::FmaOp::create(b, p[u], v, o);
    }
    next.push_back(o);
  }
  scf::YieldOp::create(b, next);
}

/// The row's final state to the result buffers; rows past the sequence
/// store nothing.
void Lowering::storeRowResults(scf::ForOp tileLoop) {
  auto store = scf::IfOp::create(b, rowInside, /*withElseRegion=*/false);
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(&store.getThenRegion().front());
  ValueRange state = tileLoop.getResults();
  memref::StoreOp::create(b, state[0], buf.outs[1], ValueRange{batch, head, row});
  memref::StoreOp::create(b, state[1], buf.outs[2], ValueRange{batch, head, row});
  for (int64_t k = 0; k < s.headDim; ++k) {
    Value o = s.tensorCores
                  ? memref::LoadOp::create(b, accTile, ValueRange{tid, c(k)})
                        .getResult()
                  : state[2 + k];
    memref::StoreOp::create(
        b, o, buf.outs[0],
        ValueRange{batch, row, arith::AddIOp::create(b, col0, c(k))});
  }
}

/// Checks what the kernel supports and picks its tiles.
FailureOr<KernelShape> kernelShape(OnlineAttentionOp op, int64_t tileQ,
                                   int64_t tileK, bool tensorCores) {
  auto fail = [&](const Twine &why) {
    return op.emitOpError("cannot be lowered for the GPU: ") << why;
  };
  if (failed(nvvm::checkKernelOperands(op, op.getLengths(),
                                       op.getQueryOffset(),
                                       "cannot be lowered for the GPU: ",
                                       "only f32 is supported")))
    return failure();
  KernelShape s;
  static_cast<nvvm::AttentionDims &>(s) = nvvm::AttentionDims::of(op);
  if (failed(s.check(op, "cannot be lowered for the GPU: ")))
    return failure();
  if (s.headDim > 128)
    return fail("head width ")
           << s.headDim << " > 128 (the row state lives in registers)";
  int64_t lcm = 1;
  for (int64_t f : s.factors)
    lcm = std::lcm(lcm, f);
  s.tensorCores = tensorCores;
  s.tileQ = tileQ;
  s.tileK = tileK;
  int64_t unitQ = lcm, unitK = lcm;
  if (tensorCores) {
    // Whole warps of 32 rows, whole 16-key fragments, head widths in whole
    // 16-column fragments.
    if (s.headDim % Target::kMmaN)
      return fail("tf32 tensor cores need a head width that is a multiple "
                  "of 16 (got ")
             << s.headDim << "); use --precision f32";
    unitQ = std::lcm(lcm, kWarpRows);
    unitK = std::lcm(lcm, Target::kMmaN);
    if (unitQ > 128)
      return fail("tf32 tensor cores need query tiles of whole warps and "
                  "whole coarse rows: level factors up to ")
             << s.factors.back() << " make them " << unitQ
             << " rows; use --precision f32";
  }
  auto roundTo = [](int64_t x, int64_t m) { return (x + m - 1) / m * m; };
  s.tileQ = roundTo(s.tileQ, unitQ);
  s.tileK = roundTo(s.tileK, unitK);
  if (s.tileQ > Target::kMaxThreadsPerBlock)
    return fail("tile-q ") << s.tileQ << " > " << Target::kMaxThreadsPerBlock
                           << " threads per block";
  // Smaller key tiles, then smaller query tiles, until the shared arrays
  // fit.
  while (s.sharedBytes() > Target::kStaticSharedMemoryBytes && s.tileK > unitK)
    s.tileK = std::max(unitK, s.tileK / 2 / unitK * unitK);
  while (s.sharedBytes() > Target::kStaticSharedMemoryBytes && s.tileQ > unitQ)
    s.tileQ = std::max(unitQ, s.tileQ / 2 / unitQ * unitQ);
  if (s.sharedBytes() > Target::kStaticSharedMemoryBytes)
    return fail("even tiles of ")
           << s.tileQ << " x " << s.tileK << " need " << s.sharedBytes()
           << " bytes of shared memory, more than the "
           << Target::kStaticSharedMemoryBytes / 1024 << " KiB a block has"
           << (tensorCores ? " (head width " + std::to_string(s.headDim) +
                                 "); use --precision f32"
                           : std::string());
  s.chunk = std::gcd(s.tileK, int64_t(16));
  return s;
}

struct HktNvvmLowerOnlineAttentionPass
    : public mlir::hkt::impl::HktNvvmLowerOnlineAttentionPassBase<
          HktNvvmLowerOnlineAttentionPass> {
  using HktNvvmLowerOnlineAttentionPassBase::
      HktNvvmLowerOnlineAttentionPassBase;
  void runOnOperation() override {
    if (tileQ < 1 || tileK < 1) {
      getOperation()->emitError("tile-q and tile-k must be >= 1");
      return signalPassFailure();
    }
    if (precision != "f32" && precision != "tf32" && precision != "bf16") {
      getOperation()->emitError("unknown precision '")
          << precision
          << "' (f32; tf32 or bf16 for the tensor cores)";
      return signalPassFailure();
    }
    // hkt.fused_attention -> hkt.online_attention and its normalisation
    // (kernels named attention_state).
    auto isFused = [](Operation *op) { return isa<FusedAttentionOp>(op); };
    markOrigins(getOperation(), isFused,
                [](Operation *) { return std::string("attention_state"); });
    LogicalResult decomposed = decomposeAggregatedOps(getOperation(), isFused);
    tagKernels(getOperation());
    if (failed(decomposed))
      return signalPassFailure();
    SmallVector<OnlineAttentionOp> ops;
    getOperation()->walk([&](OnlineAttentionOp op) { ops.push_back(op); });
    for (OnlineAttentionOp op : ops) {
      if (precision == "bf16") {
        if (failed(nvvm::lowerToFlashAttentionForward(op, tileK)))
          return signalPassFailure();
        continue;
      }
      FailureOr<KernelShape> shape =
          kernelShape(op, tileQ, tileK, precision == "tf32");
      if (failed(shape) || failed(Lowering(op, *shape).run()))
        return signalPassFailure();
    }
    SmallVector<OnlineAttentionBackwardOp> backwardOps;
    getOperation()->walk(
        [&](OnlineAttentionBackwardOp op) { backwardOps.push_back(op); });
    for (OnlineAttentionBackwardOp op : backwardOps) {
      if (precision != "bf16") {
        op.emitOpError("has a GPU lowering only in bf16 (--precision bf16)");
        return signalPassFailure();
      }
      if (failed(nvvm::lowerToFlashAttentionBackward(op, tileK)))
        return signalPassFailure();
    }
  }
};
} // namespace
