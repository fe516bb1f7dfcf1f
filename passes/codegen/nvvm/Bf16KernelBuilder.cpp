//===- Bf16KernelBuilder.cpp - pieces of the bf16 tensor-core kernels -----===//

#include "passes/codegen/nvvm/Bf16KernelBuilder.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

using namespace mlir;
using namespace mlir::hkt;
using namespace mlir::hkt::nvvm;
using Target = NvvmTargetInfo;

gpu::LaunchOp Bf16KernelBuilder::createLaunch(Value gridX, Value gridY,
                                              Value gridZ, StringRef name) {
  auto launch =
      gpu::LaunchOp::create(b, gridX, gridY, gridZ, c(threads()), c(1), c(1));
  // Profilers and --kernel-report name the kernel for what it does.
  launch.setFunctionAttr(FlatSymbolRefAttr::get(b.getContext(), name));
  Block &body = launch.getBody().front();
  b.setInsertionPointToStart(&body);
  gpu::TerminatorOp terminator = gpu::TerminatorOp::create(b);
  b.setInsertionPoint(terminator);
  tid = launch.getThreadIds().x;
  lane = rem(tid, Target::kWarpSize);
  warp = div(tid, Target::kWarpSize);
  group = div(lane, 4);
  quad = rem(lane, 4);
  return launch;
}

void Bf16KernelBuilder::forEachElement(
    int64_t rows, int64_t cols, function_ref<void(Value r, Value k)> body) {
  auto loop = scf::ForOp::create(b, tid, c(rows * cols), c(threads()));
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  Value e = loop.getInductionVar();
  body(div(e, cols), rem(e, cols));
}

Value Bf16KernelBuilder::sharedArray(int64_t rows, int64_t cols, Type type) {
  auto workgroup =
      gpu::AddressSpaceAttr::get(b.getContext(), gpu::AddressSpace::Workgroup);
  return memref::AllocaOp::create(
      b, MemRefType::get({rows, cols}, type, MemRefLayoutAttrInterface(),
                         workgroup));
}

void Bf16KernelBuilder::stage(Value dst, Value src, Value batch, Value col0,
                              Value base, int64_t rows, Value limit,
                              int64_t d) {
  forEachElement(rows, d, [&](Value r, Value k) {
    Value row = add(base, r);
    Value clamped = arith::MinUIOp::create(b, row, minusOne(limit));
    Value x = memref::LoadOp::create(b, src,
                                     ValueRange{batch, clamped, add(col0, k)});
    // Zero past the end: V must be finite where P is 0.
    x = arith::SelectOp::create(b, lt(row, limit), x, cf(0.0f));
    memref::StoreOp::create(b, arith::TruncFOp::create(b, bf16, x), dst,
                            ValueRange{r, k});
  });
}

void Bf16KernelBuilder::stageRow(Value dst, Value src, Value batch, Value head,
                                 Value base, int64_t rows, Value limit,
                                 float pad) {
  forEachElement(rows, 1, [&](Value r, Value) {
    Value row = add(base, r);
    Value clamped = arith::MinUIOp::create(b, row, minusOne(limit));
    Value x = memref::LoadOp::create(b, src, ValueRange{batch, head, clamped});
    x = arith::SelectOp::create(b, lt(row, limit), x, cf(pad));
    memref::StoreOp::create(b, x, dst, ValueRange{c(0), r});
  });
}

Value Bf16KernelBuilder::ldmatrix(Value tile, Value row, Value col, int64_t num,
                                  bool transpose) {
  auto type = VectorType::get({num, 2}, bf16);
  return nvgpu::LdMatrixOp::create(b, type, tile, ValueRange{row, col},
                                   transpose, num);
}

Value Bf16KernelBuilder::loadA(Value tile, Value row0, int64_t col) {
  Value half = mul(div(lane, 16), 8);
  return ldmatrix(tile, add(row0, rem(lane, 16)), add(half, col), 4,
                  /*transpose=*/false);
}

Value Bf16KernelBuilder::loadBRows(Value tile, Value row0, int64_t col) {
  Value half = mul(rem(div(lane, 8), 2), 8);
  return ldmatrix(tile, add(rem(lane, 8), row0), add(half, col), 2,
                  /*transpose=*/false);
}

Value Bf16KernelBuilder::loadBCols(Value tile, Value row0, int64_t col) {
  return ldmatrix(tile, add(rem(lane, 16), row0), c(col), 2,
                  /*transpose=*/true);
}

Fragment Bf16KernelBuilder::mma(Value a, Value bFrag, ArrayRef<Value> acc) {
  auto accType = VectorType::get({2, 2}, f32);
  Value cv = vector::FromElementsOp::create(b, accType, acc);
  Value d = nvgpu::MmaSyncOp::create(
      b, a, bFrag, cv,
      b.getI64ArrayAttr({Target::kBf16MmaM, Target::kBf16MmaN,
                         Target::kBf16MmaK}));
  Fragment out;
  for (int64_t i = 0; i < 4; ++i)
    out.push_back(
        vector::ExtractOp::create(b, d, ArrayRef<int64_t>{i / 2, i % 2}));
  return out;
}

/// a0 = (g, lo), a1 = (g + 8, lo), a2 = (g, hi), a3 = (g + 8, hi), each a
/// pair of neighbouring columns: the accumulator fragments' own order.
Value Bf16KernelBuilder::packA(const Fragment &lo, const Fragment &hi) {
  SmallVector<Value> elements(lo.begin(), lo.end());
  elements.append(hi.begin(), hi.end());
  Value p = vector::FromElementsOp::create(b, VectorType::get({4, 2}, f32),
                                           elements);
  return arith::TruncFOp::create(b, VectorType::get({4, 2}, bf16), p);
}

Value Bf16KernelBuilder::quadReduce(Value x, bool max) {
  for (int32_t offset : {1, 2}) {
    Value other = gpu::ShuffleOp::create(b, x, offset, Target::kWarpSize,
                                         gpu::ShuffleMode::XOR)
                      .getShuffleResult();
    x = max ? arith::MaximumFOp::create(b, x, other).getResult()
            : arith::AddFOp::create(b, x, other).getResult();
  }
  return x;
}

void Bf16KernelBuilder::coarseBlock(Value cq, Value ck, Value cs,
                                    int64_t tileRows, int64_t tileCols,
                                    int64_t f, int64_t d) {
  if (coarseOnTensorCores(tileRows, tileCols, f)) {
    int64_t rq = tileRows / f, rk = tileCols / f;
    bool swap = !wholeFragments(rq, rk);
    coarseBlockOnTensorCores(cq, ck, cs, rq, rk, d, swap);
    return;
  }
  int64_t rq = coarseRows(tileRows, f), rk = coarseRows(tileCols, f);
  forEachElement(rq, rk, [&](Value I, Value J) {
    Value acc = cf(0.0f);
    for (int64_t k = 0; k < d; ++k) {
      Value x = memref::LoadOp::create(b, cq, ValueRange{I, c(k)});
      Value y = memref::LoadOp::create(b, ck, ValueRange{J, c(k)});
      acc = math::FmaOp::create(b, arith::ExtFOp::create(b, f32, x),
                                arith::ExtFOp::create(b, f32, y), acc);
    }
    memref::StoreOp::create(b, acc, cs, ValueRange{I, J});
  });
}

void Bf16KernelBuilder::coarseBlockOnTensorCores(Value cq, Value ck, Value cs,
                                                 int64_t rq, int64_t rk,
                                                 int64_t d, bool swap) {
  // A = the side with whole 16-row fragments, B = the other (its rows are
  // B's columns, as K in Q K^T).
  Value aTile = swap ? ck : cq, bTile = swap ? cq : ck;
  int64_t m = (swap ? rk : rq) / Target::kBf16MmaM;
  int64_t n = (swap ? rq : rk) / Target::kBf16MmaN;
  int64_t fragments = m * n;
  for (int64_t round = 0; round * warps < fragments; ++round) {
    // Warp w takes fragment w + round * warps; a warp past the last one
    // recomputes the last and stores nothing.
    Value idx = add(warp, round * warps);
    Value live = lt(idx, c(fragments));
    idx = arith::MinUIOp::create(b, idx, c(fragments - 1));
    Value row0 = mul(div(idx, n), Target::kBf16MmaM);
    Value col0 = mul(rem(idx, n), Target::kBf16MmaN);
    Fragment acc(4, cf(0.0f));
    for (int64_t k = 0; k < d; k += Target::kBf16MmaK) {
      Value aFrag = loadA(aTile, row0, k);
      Value bFrag = loadBRows(bTile, col0, k);
      acc = mma(aFrag, bFrag, acc);
    }
    auto store = scf::IfOp::create(b, live, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&store.getThenRegion().front());
    for (int64_t e = 0; e < 4; ++e) {
      Value r = add(add(row0, group), 8 * (e / 2));
      Value col = add(add(col0, mul(quad, 2)), e % 2);
      memref::StoreOp::create(b, acc[e], cs,
                              swap ? ValueRange{col, r} : ValueRange{r, col});
    }
  }
}
