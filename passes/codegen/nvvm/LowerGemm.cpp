//===- LowerGemm.cpp - linalg.matmul -> the bf16 mma.sync GEMM kernel -----===//
//
// The projections of the layer and their gradients (X W, dY W^T, X^T dY)
// arrive on the NVVM path as linalg.matmul on memrefs. With
// --precision bf16 each becomes one kernel `gemm_bf16_MxNxK_I` on the
// tensor cores instead of one thread per output element:
//
//   - a block of 4 warps per 64 x 64 tile of C; warp w owns rows
//     16w..16w+15 and all 64 columns (eight m16n8 accumulator fragments,
//     32 f32 registers a lane);
//   - per step of 32 along K, the block stages A's 64 x 32 and B's 32 x 64
//     tiles in shared memory, rounded to bf16 (zero past M, N and K, so any
//     size works), rows padded by 16 B against bank conflicts;
//   - A fragments by ldmatrix.x4, B fragments by ldmatrix.x2.trans (B is
//     row-major K x N, as V is in the attention's P V), two m16n8k16 steps
//     of mma.sync per stage;
//   - C += A B in f32 at the end (linalg.matmul accumulates into its
//     init), each lane its fragment elements; where C is a fresh buffer
//     zero-filled just for this product (every projection), the fill is
//     dropped and the kernel writes C = A B: one kernel and one read of C
//     less.
//
// The kernel is this compiler's own. On the GPU (option cublas-lt) it is
// the fallback of cuBLASLt, which the runtime opens at run time; the
// emulation runs it per lane like every bf16 kernel.
//
//===----------------------------------------------------------------------===//

#include "passes/codegen/nvvm/Bf16KernelBuilder.h"
#include "passes/codegen/nvvm/Passes.h"
#include "passes/codegen/nvvm/Sizes.h"
#include "passes/codegen/nvvm/ZeroFill.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "llvm/Support/FormatVariadic.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTNVVMLOWERGEMMPASS
#include "passes/codegen/nvvm/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt;
using namespace mlir::hkt::nvvm;
using Target = NvvmTargetInfo;

namespace {

/// The runtime's cuBLASLt GEMMs: C += A B, and C = A B.
constexpr llvm::StringLiteral kCublasLtGemm = "hktCublasLtGemmBf16";
constexpr llvm::StringLiteral kCublasLtGemmOverwrite =
    "hktCublasLtGemmBf16Overwrite";

/// The sizes of C = A B: A is M x K, B is K x N (ShapedType::kDynamic
/// where the size is known at run time only).
struct GemmShape {
  int64_t m, n, k;
};

/// f32 memrefs of rank 2 with the default indexing maps (no folded
/// transposes), or nothing: such a matmul keeps the element-wise path.
/// Sizes may be dynamic (a dynamic sequence length makes M dynamic).
std::optional<GemmShape> gemmShapeOf(linalg::MatmulOp op) {
  if (!op.hasPureBufferSemantics() || op.getNumDpsInputs() != 2)
    return std::nullopt;
  SmallVector<MemRefType> types;
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || type.getRank() != 2 || !type.getElementType().isF32())
      return std::nullopt;
    types.push_back(type);
  }
  if (op.getIndexingMapsArray() !=
      linalg::MatmulOp::getDefaultIndexingMaps(op.getContext()))
    return std::nullopt;
  GemmShape s{types[0].getDimSize(0), types[1].getDimSize(1),
              types[0].getDimSize(1)};
  // Static sizes must agree (the verifier's job for dynamic ones), and an
  // empty product has no kernel.
  if (types[1].getDimSize(0) != s.k || types[2].getDimSize(0) != s.m ||
      types[2].getDimSize(1) != s.n || s.m == 0 || s.n == 0 || s.k == 0)
    return std::nullopt;
  return s;
}

class GemmKernel : public Bf16KernelBuilder {
public:
  static constexpr int64_t kTileN = 64;
  static constexpr int64_t kTileK = 32;

  GemmKernel(linalg::MatmulOp op, GemmShape s, bool accumulate)
      : Bf16KernelBuilder(op), s(s), accumulate(accumulate),
        a(op.getDpsInputs()[0]), bMat(op.getDpsInputs()[1]),
        cMat(op.getDpsInits()[0]) {}

  void build(int64_t index);

private:
  /// dst[r, k] = bf16(src[row0 + r, col0 + k]) for r < rows, k < cols,
  /// zero outside src's `limitRows` x `limitCols`.
  void stageTile(Value dst, Value src, Value row0, Value col0, int64_t rows,
                 int64_t cols, Value limitRows, Value limitCols);
  SmallVector<Value> kStep(ValueRange acc, Value k0);
  void store(ValueRange acc);

  GemmShape s;
  /// C += A B, or C = A B where the zero fill was absorbed.
  bool accumulate;
  Value a, bMat, cMat;
  /// M, N and K on the host (constants where static).
  Value rowsM, colsN, depthK;
  Value aTile, bTile, m0, n0, warpRow0;
};

void GemmKernel::stageTile(Value dst, Value src, Value row0, Value col0,
                           int64_t rows, int64_t cols, Value limitRows,
                           Value limitCols) {
  forEachElement(rows, cols, [&](Value r, Value k) {
    Value row = add(row0, r), col = add(col0, k);
    Value x = memref::LoadOp::create(
        b, src,
        ValueRange{arith::MinUIOp::create(b, row, minusOne(limitRows)),
                   arith::MinUIOp::create(b, col, minusOne(limitCols))});
    Value inside =
        arith::AndIOp::create(b, lt(row, limitRows), lt(col, limitCols));
    x = arith::SelectOp::create(b, inside, x, cf(0.0f));
    memref::StoreOp::create(b, arith::TruncFOp::create(b, bf16, x), dst,
                            ValueRange{r, k});
  });
}

/// One stage of 32 along K: both tiles staged, two mma steps per fragment.
SmallVector<Value> GemmKernel::kStep(ValueRange acc, Value k0) {
  stageTile(aTile, a, m0, k0, blockRows(), kTileK, rowsM, depthK);
  stageTile(bTile, bMat, k0, n0, kTileK, kTileN, depthK, colsN);
  gpu::BarrierOp::create(b);
  SmallVector<Value> next(acc.begin(), acc.end());
  for (int64_t kk = 0; kk < kTileK; kk += Target::kBf16MmaK) {
    Value aFrag = loadA(aTile, warpRow0, kk);
    for (int64_t n = 0; n < kTileN / Target::kBf16MmaN; ++n) {
      Fragment d = mma(aFrag, loadBCols(bTile, kk, n * Target::kBf16MmaN),
                       ArrayRef<Value>(next).slice(4 * n, 4));
      std::copy(d.begin(), d.end(), next.begin() + 4 * n);
    }
  }
  // The next stage overwrites the tiles.
  gpu::BarrierOp::create(b);
  return next;
}

/// C[row, col] += acc (or = acc) for the lane's elements inside C.
void GemmKernel::store(ValueRange acc) {
  Value quad2 = mul(quad, 2);
  for (int64_t n = 0; n < kTileN / Target::kBf16MmaN; ++n)
    for (int64_t e = 0; e < 4; ++e) {
      Value row = add(add(m0, warpRow0), add(group, 8 * (e / 2)));
      Value col = add(add(n0, n * Target::kBf16MmaN + e % 2), quad2);
      Value inside = arith::AndIOp::create(b, lt(row, rowsM), lt(col, colsN));
      auto ifInside = scf::IfOp::create(b, inside, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(&ifInside.getThenRegion().front());
      Value value = acc[4 * n + e];
      if (accumulate)
        value = arith::AddFOp::create(
            b, memref::LoadOp::create(b, cMat, ValueRange{row, col}), value);
      memref::StoreOp::create(b, value, cMat, ValueRange{row, col});
    }
}

void GemmKernel::build(int64_t index) {
  // A dynamic size is "d" in the name (gemm_bf16_dx64x64_0).
  auto size = [](int64_t v) {
    return ShapedType::isDynamic(v) ? std::string("d") : std::to_string(v);
  };
  std::string name = llvm::formatv("gemm_bf16_{0}x{1}x{2}_{3}", size(s.m),
                                   size(s.n), size(s.k), index)
                         .str();
  rowsM = extent(b, a, 0);
  depthK = extent(b, a, 1);
  colsN = extent(b, bMat, 1);
  gpu::LaunchOp launch = createLaunch(
      ceilDiv(b, colsN, kTileN), ceilDiv(b, rowsM, blockRows()), c(1), name);
  n0 = mul(launch.getBlockIds().x, kTileN);
  m0 = mul(launch.getBlockIds().y, blockRows());
  warpRow0 = mul(warp, Target::kBf16MmaM);
  aTile = sharedArray(blockRows(), kTileK + kLdMatrixPad, bf16);
  bTile = sharedArray(kTileK, kTileN + kLdMatrixPad, bf16);
  SmallVector<Value> init(4 * kTileN / Target::kBf16MmaN, cf(0.0f));
  auto loop = scf::ForOp::create(b, c(0), depthK, c(kTileK), init);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    scf::YieldOp::create(
        b, kStep(loop.getRegionIterArgs(), loop.getInductionVar()));
  }
  store(loop.getResults());
}

/// The runtime's cuBLASLt GEMM (runtime/CudaRuntimeWrappers.cpp), declared
/// once in `module`: C += A B (or C = A B) on device buffers of any
/// strides, nonzero if it ran.
func::FuncOp cublasLtGemm(ModuleOp module, bool accumulate) {
  StringRef name = accumulate ? kCublasLtGemm : kCublasLtGemmOverwrite;
  if (auto fn = module.lookupSymbol<func::FuncOp>(name))
    return fn;
  auto b = OpBuilder::atBlockBegin(module.getBody());
  auto any = MemRefType::get(
      {ShapedType::kDynamic, ShapedType::kDynamic}, b.getF32Type(),
      StridedLayoutAttr::get(b.getContext(), ShapedType::kDynamic,
                             {ShapedType::kDynamic, ShapedType::kDynamic}));
  auto fn = func::FuncOp::create(
      b, module.getLoc(), name,
      b.getFunctionType({any, any, any}, {b.getI32Type()}));
  fn.setPrivate();
  // hkt-nvvm-host-staging: the call reads and writes device memory.
  fn->setAttr(mlir::hkt::kDeviceCallAttr, b.getUnitAttr());
  return fn;
}

/// if (!hktCublasLtGemmBf16(A, B, C)) { <the kernel> }: the builder is left
/// inside the fallback.
void guardWithCublasLt(linalg::MatmulOp op, func::FuncOp gemm) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  SmallVector<Value> args;
  for (Value v : op->getOperands())
    args.push_back(memref::CastOp::create(
        b, loc, gemm.getFunctionType().getInput(args.size()), v));
  Value done = func::CallOp::create(b, loc, gemm, args).getResult(0);
  Value zero = arith::ConstantOp::create(b, loc, b.getI32IntegerAttr(0));
  Value missing =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, done, zero);
  auto fallback = scf::IfOp::create(b, loc, missing, /*withElseRegion=*/false);
  op->moveBefore(fallback.getThenRegion().front().getTerminator());
}

struct HktNvvmLowerGemmPass
    : public mlir::hkt::impl::HktNvvmLowerGemmPassBase<HktNvvmLowerGemmPass> {
  using HktNvvmLowerGemmPassBase::HktNvvmLowerGemmPassBase;
  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation()->walk([&](linalg::MatmulOp op) {
      if (!op->getParentOfType<gpu::LaunchOp>())
        matmuls.push_back(op);
    });
    int64_t index = 0;
    for (linalg::MatmulOp op : matmuls) {
      std::optional<GemmShape> shape = gemmShapeOf(op);
      if (!shape)
        continue;
      linalg::FillOp fill = absorbableZeroFill(op, op.getDpsInits()[0]);
      bool accumulate = !fill;
      if (cublasLt) {
        auto module = op->getParentOfType<ModuleOp>();
        if (!module) {
          op.emitOpError("needs a module for cublas-lt");
          return signalPassFailure();
        }
        guardWithCublasLt(op, cublasLtGemm(module, accumulate));
      }
      if (fill)
        fill.erase();
      GemmKernel(op, *shape, accumulate).build(index++);
      op.erase();
    }
  }
};
} // namespace
