//===- ModelEntries.cpp - the model's gradient and training-step entries --===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//
//
// After hkt-differentiate has built loss_row_grad, the model module gets its
// batched gradient entry (loss_grad) and one AdamW step (train_step); the
// hkt-model-training-entries pass adds both.
//
//===----------------------------------------------------------------------===//

#include "passes/autodiff/ModelEntries.h"
#include "passes/autodiff/Passes.h"
#include "passes/distributed/DataParallel.h"

#include "dialect/HKTOps.h"
#include "dialect/Utils/BatchedEntry.h"
#include "runtime/ModuleFormat.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

namespace mlir::hkt {
#define GEN_PASS_DEF_HKTMODELTRAININGENTRIESPASS
#include "passes/autodiff/Passes.h.inc"
} // namespace mlir::hkt

using namespace mlir;
using namespace mlir::hkt;

namespace attr = ::hkt::format::attr;

LogicalResult mlir::hkt::addModelGradientEntry(ModuleOp module,
                                               int64_t maxBatch) {
  std::string rowGradName = (Twine(kLossRow) + "_grad").str();
  auto rowGrad = module.lookupSymbol<func::FuncOp>(rowGradName);
  if (!rowGrad)
    return module.emitError() << "no '" << rowGradName
                              << "' (run hkt-differentiate on '" << kLossRow
                              << "' with return-values first)";
  rowGrad.setPrivate();
  // loss_row_grad(tokens, labels, <parameters>, dloss) -> (loss, d<p>...).
  std::optional<unsigned> seed;
  for (unsigned i = 0; i < rowGrad.getNumArguments(); ++i)
    if (auto n = rowGrad.getArgAttrOfType<StringAttr>(i, attr::kName);
        n && n.getValue() == "dloss")
      seed = i;
  if (!seed || rowGrad.getNumResults() == 0)
    return rowGrad.emitError("internal error: expected a 'dloss' argument "
                             "and the loss as first result");
  SmallVector<Combine> combine(rowGrad.getNumResults(), Combine::Sum);
  combine[0] = Combine::Mean;
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  func::FuncOp grad =
      buildBatchedEntry(b, rowGrad.getLoc(), rowGrad, "loss_grad", maxBatch,
                        combine, seed, kModelRowArgs);
  // d loss / d loss = 1 unless the caller binds another seed.
  grad.setArgAttr(*seed, attr::kDefault, b.getF32FloatAttr(1.0));
  return success();
}

namespace {
/// `train_step`'s declaration after `grad` (loss_grad, `numParams`
/// parameters): tokens, labels, the parameters, their first and second
/// moments (in-out), the hyper-parameters and the step number; results: the
/// loss (of the parameters before the step), then the new values of the
/// in-out arguments.
func::FuncOp declareTrainStep(OpBuilder &b, func::FuncOp grad,
                              unsigned numParams) {
  MLIRContext *ctx = b.getContext();
  Location loc = grad.getLoc();
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  auto scalarF32 = RankedTensorType::get({}, f32);
  auto scalarI64 = RankedTensorType::get({}, i64);

  SmallVector<Type> inputs;
  SmallVector<DictionaryAttr> inputAttrs;
  auto named = [&](StringRef name, ArrayRef<NamedAttribute> more = {}) {
    NamedAttrList attrs(more);
    attrs.set(attr::kName, b.getStringAttr(name));
    return attrs.getDictionary(ctx);
  };
  for (unsigned i = 0; i < 2; ++i) {
    inputs.push_back(grad.getArgumentTypes()[i]);
    inputAttrs.push_back(grad.getArgAttrDict(i));
  }
  SmallVector<std::string> names;
  for (unsigned p = 0; p < numParams; ++p)
    names.push_back(
        grad.getArgAttrOfType<StringAttr>(2 + p, attr::kName).str());
  auto inout = b.getNamedAttr(attr::kRole,
                              b.getStringAttr(::hkt::format::role::kInOut));
  for (StringRef prefix : {"", ::hkt::format::kAdamFirstMoment,
                           ::hkt::format::kAdamSecondMoment})
    for (unsigned p = 0; p < numParams; ++p) {
      inputs.push_back(grad.getArgumentTypes()[2 + p]);
      inputAttrs.push_back(named((prefix + names[p]).str(), {inout}));
    }
  struct Hyper {
    const char *name;
    double value;
  };
  const Hyper hypers[] = {{"lr", 1e-3},
                          {"beta1", 0.9},
                          {"beta2", 0.999},
                          {"eps", 1e-8},
                          {"weight_decay", 0.01}};
  for (const Hyper &h : hypers) {
    inputs.push_back(scalarF32);
    inputAttrs.push_back(named(
        h.name, {b.getNamedAttr(attr::kDefault, b.getF32FloatAttr(h.value))}));
  }
  inputs.push_back(scalarI64);
  inputAttrs.push_back(named(
      "step", {b.getNamedAttr(attr::kRange, b.getDenseI64ArrayAttr(
                                                {1, int64_t(1) << 53}))}));
  SmallVector<Type> results = {scalarF32};
  SmallVector<DictionaryAttr> resultAttrs = {grad.getResultAttrDict(0)};
  for (unsigned k = 0; k < 3 * numParams; ++k) {
    results.push_back(inputs[2 + k]);
    resultAttrs.push_back(b.getDictionaryAttr(b.getNamedAttr(
        attr::kInOut, b.getI64IntegerAttr(2 + k))));
  }
  auto fn = func::FuncOp::create(b, loc, kTrainStep,
                                 b.getFunctionType(inputs, results));
  fn.setAllArgAttrs(inputAttrs);
  fn.setAllResultAttrs(resultAttrs);
  return fn;
}
} // namespace

LogicalResult mlir::hkt::addModelTrainStep(ModuleOp module, int64_t ranks) {
  MLIRContext *ctx = module.getContext();
  ctx->loadDialect<math::MathDialect>();
  auto grad = module.lookupSymbol<func::FuncOp>("loss_grad");
  if (!grad)
    return module.emitError("no 'loss_grad' (add the model's "
                            "gradient entry first)");
  Location loc = grad.getLoc();
  // loss_grad(tokens, labels, <parameters>, dloss) -> (loss, d<parameter>).
  unsigned numParams = grad.getNumResults() - 1;
  if (grad.getNumArguments() != numParams + 3)
    return grad.emitError("internal error: unexpected loss_grad signature");
  shard::GridOp grid;
  if (ranks > 0) {
    FailureOr<shard::GridOp> g = getOrCreateDataParallelGrid(module, ranks);
    if (failed(g))
      return failure();
    grid = *g;
  }
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  Type f32 = b.getF32Type();
  auto scalarF32 = RankedTensorType::get({}, f32);
  func::FuncOp fn = declareTrainStep(b, grad, numParams);

  OpBuilder::InsertionGuard guard(b);
  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  unsigned hyper = 2 + 3 * numParams;
  auto scalar = [&](unsigned arg) {
    return tensor::ExtractOp::create(b, loc, body->getArgument(arg))
        .getResult();
  };
  Value lr = scalar(hyper), beta1 = scalar(hyper + 1),
        beta2 = scalar(hyper + 2), eps = scalar(hyper + 3),
        decay = scalar(hyper + 4);
  Value step = arith::SIToFPOp::create(b, loc, f32, scalar(hyper + 5));
  auto cst = [&](double v) {
    return arith::ConstantOp::create(b, loc, f32, b.getF32FloatAttr(v))
        .getResult();
  };
  Value one = cst(1.0);
  // Bias corrections 1 - beta^t, and the decoupled decay factor 1 - lr wd.
  Value correction1 = arith::SubFOp::create(
      b, loc, one, math::PowFOp::create(b, loc, beta1, step));
  Value correction2 = arith::SubFOp::create(
      b, loc, one, math::PowFOp::create(b, loc, beta2, step));
  Value keep = arith::SubFOp::create(b, loc, one,
                                     arith::MulFOp::create(b, loc, lr, decay));
  Value oneMinusBeta1 = arith::SubFOp::create(b, loc, one, beta1);
  Value oneMinusBeta2 = arith::SubFOp::create(b, loc, one, beta2);

  // One process: d loss = 1, the gradients of the batch's mean loss. One
  // rank of several: d loss = its row count n, the gradients summed over
  // its rows; the sums over the ranks, divided by the total row count, are
  // then the gradients of the whole batch's mean loss.
  Value rows;
  if (grid) {
    Value batch = tensor::DimOp::create(b, loc, body->getArgument(0), 0);
    rows = arith::UIToFPOp::create(
        b, loc, f32,
        arith::IndexCastUIOp::create(b, loc, b.getI64Type(), batch));
  }
  SmallVector<Value> callArgs(body->getArguments().take_front(2 + numParams));
  callArgs.push_back(tensor::FromElementsOp::create(
      b, loc, scalarF32, ValueRange{grid ? rows : one}));
  auto call = func::CallOp::create(b, loc, grad, callArgs);
  Value loss = call.getResult(0);
  SmallVector<Value> gradients(call.getResults().drop_front());
  Value gradientScale;
  if (grid) {
    // [n * loss, n] and the gradients summed over the ranks, in one
    // collective: the batch's total loss and rows, and its gradient sums.
    Value localLoss = tensor::ExtractOp::create(b, loc, loss);
    Value lossAndRows = tensor::FromElementsOp::create(
        b, loc, RankedTensorType::get({2}, f32),
        ValueRange{arith::MulFOp::create(b, loc, localLoss, rows), rows});
    SmallVector<Value> local = {lossAndRows};
    llvm::append_range(local, gradients);
    SmallVector<Value> summed = sumOverRanks(b, loc, grid, local);
    Value totals = summed.front();
    auto at = [&](int64_t i) {
      return tensor::ExtractOp::create(
                 b, loc, totals,
                 ValueRange{arith::ConstantIndexOp::create(b, loc, i)})
          .getResult();
    };
    Value totalRows = at(1);
    gradientScale = arith::DivFOp::create(b, loc, one, totalRows);
    loss = tensor::FromElementsOp::create(
        b, loc, scalarF32,
        ValueRange{arith::DivFOp::create(b, loc, at(0), totalRows)});
    gradients.assign(summed.begin() + 1, summed.end());
  }
  SmallVector<Value> returned = {loss};
  SmallVector<Value> newParams, newFirst, newSecond;
  for (unsigned p = 0; p < numParams; ++p) {
    Value g = gradients[p];
    Value param = body->getArgument(2 + p);
    Value first = body->getArgument(2 + numParams + p);
    Value second = body->getArgument(2 + 2 * numParams + p);
    auto type = cast<RankedTensorType>(param.getType());
    // Weight decay applies to matrices (rank >= 2), not to biases, LayerNorm
    // weights, theta or gamma.
    bool decayed = type.getRank() >= 2;
    AffineMap id = b.getMultiDimIdentityMap(type.getRank());
    SmallVector<utils::IteratorType> iterators(type.getRank(),
                                               utils::IteratorType::parallel);
    auto update = linalg::GenericOp::create(
        b, loc, TypeRange{type, type, type}, ValueRange{g},
        ValueRange{param, first, second},
        SmallVector<AffineMap>(4, id), iterators,
        [&](OpBuilder &nb, Location nloc, ValueRange a) {
          Value gv = a[0], pv = a[1], mv = a[2], vv = a[3];
          if (gradientScale)
            gv = arith::MulFOp::create(nb, nloc, gv, gradientScale);
          Value m = arith::AddFOp::create(
              nb, nloc, arith::MulFOp::create(nb, nloc, beta1, mv),
              arith::MulFOp::create(nb, nloc, oneMinusBeta1, gv));
          Value gg = arith::MulFOp::create(nb, nloc, gv, gv);
          Value v = arith::AddFOp::create(
              nb, nloc, arith::MulFOp::create(nb, nloc, beta2, vv),
              arith::MulFOp::create(nb, nloc, oneMinusBeta2, gg));
          Value mhat = arith::DivFOp::create(nb, nloc, m, correction1);
          Value vhat = arith::DivFOp::create(nb, nloc, v, correction2);
          Value denom = arith::AddFOp::create(
              nb, nloc, math::SqrtOp::create(nb, nloc, vhat), eps);
          Value delta = arith::MulFOp::create(
              nb, nloc, lr, arith::DivFOp::create(nb, nloc, mhat, denom));
          Value base =
              decayed ? arith::MulFOp::create(nb, nloc, pv, keep).getResult()
                      : pv;
          Value np = arith::SubFOp::create(nb, nloc, base, delta);
          linalg::YieldOp::create(nb, nloc, ValueRange{np, m, v});
        });
    update->setAttr(kKernelAttr, b.getStringAttr("adamw"));
    newParams.push_back(update.getResult(0));
    newFirst.push_back(update.getResult(1));
    newSecond.push_back(update.getResult(2));
  }
  llvm::append_range(returned, newParams);
  llvm::append_range(returned, newFirst);
  llvm::append_range(returned, newSecond);
  func::ReturnOp::create(b, loc, returned);
  return success();
}

namespace {
struct HktModelTrainingEntriesPass
    : ::mlir::hkt::impl::HktModelTrainingEntriesPassBase<
          HktModelTrainingEntriesPass> {
  using Base::Base;
  void runOnOperation() override {
    if (ranks < 0) {
      getOperation().emitError("hkt-model-training-entries: ranks must be "
                               ">= 0 (0: one process), got ")
          << ranks;
      return signalPassFailure();
    }
    if (failed(addModelGradientEntry(getOperation(), maxBatch)) ||
        failed(addModelTrainStep(getOperation(), ranks)))
      signalPassFailure();
  }
};
} // namespace
