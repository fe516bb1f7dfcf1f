//===- ModelConfig.cpp - SPEC's classifier model from a JSON config -------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "compiler/ModelConfig.h"
#include "compiler/ConfigJson.h"
#include "compiler/LayerConfig.h"
#include "dialect/HKTOps.h"
#include "runtime/ModuleFormat.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::hkt;

namespace {
constexpr int64_t kMaxLayers = 1024;
} // namespace

llvm::Expected<ModelConfig> mlir::hkt::parseModelConfig(llvm::StringRef text) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed)
    return llvm::createStringError("model config is not valid JSON: " +
                                   llvm::toString(parsed.takeError()));
  const llvm::json::Object *obj = parsed->getAsObject();
  if (!obj)
    return llvm::createStringError("model config must be a JSON object");
  ModelConfig c;
  std::pair<const char *, int64_t *> ints[] = {
      {"vocab", &c.vocab},   {"max_len", &c.maxLen},
      {"dim", &c.dim},       {"heads", &c.heads},
      {"layers", &c.layers}, {"levels", &c.levels},
      {"stride", &c.stride}, {"kernel", &c.kernel},
      {"conv_kernel", &c.convKernel}, {"ffn", &c.ffn},
      {"classes", &c.classes}};
  std::pair<const char *, bool *> bools[] = {{"hybrid", &c.hybrid},
                                             {"causal", &c.causal}};
  const char *known = "vocab, max_len, dim, heads, layers, levels, stride, "
                      "kernel, conv_kernel, hybrid, causal, ffn, classes";
  for (const auto &kv : *obj) {
    llvm::StringRef key = kv.first;
    if (llvm::none_of(ints, [&](auto &k) { return key == k.first; }) &&
        llvm::none_of(bools, [&](auto &k) { return key == k.first; }))
      return llvm::createStringError(
          "unknown key '%s' in model config (its keys, all required: %s)",
          key.str().c_str(), known);
  }
  for (auto &[name, field] : ints) {
    const llvm::json::Value *v = obj->get(name);
    if (!v)
      return llvm::createStringError(
          "model config needs the key '%s' (all required: %s)", name, known);
    llvm::Expected<int64_t> i = readPositiveInteger(*v, "model config", name);
    if (!i)
      return i.takeError();
    *field = *i;
  }
  for (auto &[name, field] : bools) {
    const llvm::json::Value *v = obj->get(name);
    if (!v)
      return llvm::createStringError(
          "model config needs the key '%s' (all required: %s)", name, known);
    llvm::Expected<bool> b = readBoolean(*v, "model config", name);
    if (!b)
      return b.takeError();
    *field = *b;
  }
  if (c.dim % c.heads != 0)
    return llvm::createStringError(
        "model config: 'dim' (%lld) must be divisible by 'heads' (%lld)",
        static_cast<long long>(c.dim), static_cast<long long>(c.heads));
  if (c.vocab < 2)
    return llvm::createStringError(
        "model config key 'vocab' must be at least 2 (token 0 is padding), "
        "got %lld",
        static_cast<long long>(c.vocab));
  if (c.layers > kMaxLayers)
    return llvm::createStringError(
        "model config 'layers' = %lld exceeds the largest number of layers "
        "(at most %lld, see docs/limits.md)",
        static_cast<long long>(c.layers), static_cast<long long>(kMaxLayers));
  // Each layer as a layer config (batch 1, seq_len max_len), and the model's
  // own tensors, against the same limits.
  LayerConfig layer;
  layer.batch = 1;
  layer.seqLen = c.maxLen;
  layer.dim = c.dim;
  layer.heads = c.heads;
  layer.levels = c.levels;
  layer.stride = c.stride;
  layer.kernel = c.kernel;
  layer.convKernel = c.convKernel;
  layer.hybrid = c.hybrid;
  layer.causal = c.causal;
  if (llvm::Error e = checkLayerConfigLimits(layer))
    return llvm::createStringError("model config: " + llvm::toString(std::move(e)));
  for (auto [key, value] : {std::pair<const char *, int64_t>{"ffn", c.ffn},
                            {"classes", c.classes}, {"vocab", c.vocab}}) {
    int64_t elements = 0;
    if (value > kMaxDim && std::string(key) != "vocab")
      return llvm::createStringError(
          "model config '%s' = %lld exceeds the largest width (at most %lld, "
          "see docs/limits.md)",
          key, static_cast<long long>(value), static_cast<long long>(kMaxDim));
    if (llvm::MulOverflow(value, c.dim, elements) ||
        elements > kMaxTensorElements)
      return llvm::createStringError(
          "model config '%s' = %lld: a %s x dim tensor exceeds the tensor "
          "element limit (2^31, see docs/limits.md)",
          key, static_cast<long long>(value), key);
  }
  return c;
}

std::string mlir::hkt::modelConfigToJson(const ModelConfig &c) {
  llvm::json::Object obj{{"vocab", c.vocab},   {"max_len", c.maxLen},
                         {"dim", c.dim},       {"heads", c.heads},
                         {"layers", c.layers}, {"levels", c.levels},
                         {"stride", c.stride}, {"kernel", c.kernel},
                         {"conv_kernel", c.convKernel},
                         {"hybrid", c.hybrid}, {"causal", c.causal},
                         {"ffn", c.ffn},       {"classes", c.classes}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::json::Value(std::move(obj));
  return out;
}

namespace {
/// Builds the model's ops into one function body.
struct ModelBuilder {
  OpBuilder &b;
  Location loc;
  const ModelConfig &c;
  int64_t batch;
  Type f32;

  RankedTensorType t(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, f32);
  }
  Value empty(ArrayRef<int64_t> shape) {
    return tensor::EmptyOp::create(b, loc, shape, f32);
  }
  Value zeros(ArrayRef<int64_t> shape) {
    Value zero = arith::ConstantOp::create(b, loc, f32, b.getF32FloatAttr(0));
    return linalg::FillOp::create(b, loc, zero, empty(shape)).getResult(0);
  }
  /// x W + bias for x: N x Din (2-D), W: Din x Dout, bias: Dout.
  Value linear2d(Value x, Value w, Value bias) {
    auto xs = cast<RankedTensorType>(x.getType()).getShape();
    int64_t n = xs[0], dout = cast<RankedTensorType>(w.getType()).getDimSize(1);
    Value mm = linalg::MatmulOp::create(b, loc, ValueRange{x, w},
                                        ValueRange{zeros({n, dout})})
                   .getResult(0);
    Value wide = linalg::BroadcastOp::create(b, loc, bias, empty({n, dout}),
                                             ArrayRef<int64_t>{0})
                     .getResult()[0];
    return linalg::AddOp::create(b, loc, ValueRange{mm, wide},
                                 ValueRange{empty({n, dout})})
        .getResult(0);
  }
  /// The same on B x T x Din through a (B*T) x Din view.
  Value linear3d(Value x, Value w, Value bias) {
    auto xs = cast<RankedTensorType>(x.getType()).getShape();
    int64_t dout = cast<RankedTensorType>(w.getType()).getDimSize(1);
    SmallVector<ReassociationIndices> collapse = {{0, 1}, {2}};
    Value x2 = tensor::CollapseShapeOp::create(b, loc, x, collapse);
    Value y2 = linear2d(x2, w, bias);
    return tensor::ExpandShapeOp::create(b, loc, t({xs[0], xs[1], dout}), y2,
                                         collapse);
  }
  Value add(Value x, Value y) {
    auto shape = cast<RankedTensorType>(x.getType()).getShape();
    return linalg::AddOp::create(b, loc, ValueRange{x, y},
                                 ValueRange{empty(shape)})
        .getResult(0);
  }
  Value layerNorm(Value x, Value w, Value bias) {
    auto shape = cast<RankedTensorType>(x.getType()).getShape();
    return LayerNormOp::create(b, loc, t(shape), x, w, bias, empty(shape),
                               b.getF64FloatAttr(1e-5));
  }
};
} // namespace

namespace {
namespace attr = ::hkt::format::attr;

/// How a batched entry combines its row function's results over the rows.
enum class Combine { Rows, Mean, Sum };

/// The rows of a sum over the batch run in this many chunks in parallel.
constexpr int64_t kRowChunks = 8;

/// Builds the public entry `name` that runs the private batch-1 function
/// `row` on every row of a batch of dynamic size B: `tokens` (B x max_len)
/// and `labels` (B), if `row` takes them, are sliced one row per call, every
/// other argument is passed through, except `seed` (an argument index, if
/// any), the gradient of the mean loss, which each row receives divided by
/// B. Results: `Rows` stacks the rows' 1 x N results into B x N, `Mean`
/// averages scalar results, `Sum` adds the rest (gradients of parameters).
func::FuncOp buildBatchedEntry(OpBuilder &b, Location loc, func::FuncOp row,
                               StringRef name, int64_t maxBatch,
                               ArrayRef<Combine> combine,
                               std::optional<unsigned> seed) {
  MLIRContext *ctx = b.getContext();
  Type f32 = b.getF32Type();
  FunctionType rowType = row.getFunctionType();
  auto batched = [&](Type t) {
    auto tensor = cast<RankedTensorType>(t);
    SmallVector<int64_t> shape(tensor.getShape());
    shape[0] = ShapedType::kDynamic;
    return RankedTensorType::get(shape, tensor.getElementType());
  };
  auto symbolsOf = [&](RankedTensorType t) {
    SmallVector<Attribute> symbols(t.getRank(), b.getStringAttr(""));
    symbols[0] = b.getStringAttr("B");
    return b.getArrayAttr(symbols);
  };
  auto isRowArg = [&](unsigned i) {
    auto n = row.getArgAttrOfType<StringAttr>(i, attr::kName);
    return n && (n.getValue() == "tokens" || n.getValue() == "labels");
  };
  SmallVector<Type> inputs, results;
  for (auto [i, t] : llvm::enumerate(rowType.getInputs()))
    inputs.push_back(isRowArg(i) ? batched(t) : t);
  for (auto [i, t] : llvm::enumerate(rowType.getResults()))
    results.push_back(combine[i] == Combine::Rows ? batched(t) : t);
  auto fn = func::FuncOp::create(b, loc, name,
                                 b.getFunctionType(inputs, results));
  for (unsigned i = 0; i < inputs.size(); ++i) {
    NamedAttrList attrs(row.getArgAttrDict(i));
    if (isRowArg(i)) {
      auto t = cast<RankedTensorType>(inputs[i]);
      SmallVector<int64_t> bounds(t.getShape());
      bounds[0] = maxBatch;
      attrs.set(attr::kBounds, b.getDenseI64ArrayAttr(bounds));
      attrs.set(attr::kDims, symbolsOf(t));
    }
    fn.setArgAttrs(i, attrs.getDictionary(ctx));
  }
  for (unsigned i = 0; i < results.size(); ++i) {
    NamedAttrList attrs(row.getResultAttrDict(i));
    if (combine[i] == Combine::Rows)
      attrs.set(attr::kDims, symbolsOf(cast<RankedTensorType>(results[i])));
    fn.setResultAttrs(i, attrs.getDictionary(ctx));
  }

  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(fn.addEntryBlock());
  Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
  Value tokens = fn.getArgument(0);
  Value batch = tensor::DimOp::create(b, loc, tokens, c0);
  Value batchF32 = arith::UIToFPOp::create(
      b, loc, f32,
      arith::IndexCastUIOp::create(b, loc, b.getI64Type(), batch));
  // d loss_row = d loss / B.
  Value rowSeed;
  if (seed) {
    Value d = tensor::ExtractOp::create(b, loc, fn.getArgument(*seed));
    rowSeed = tensor::FromElementsOp::create(
        b, loc, RankedTensorType::get({}, f32),
        ValueRange{arith::DivFOp::create(b, loc, d, batchF32)});
  }
  auto index = [&](int64_t v) { return b.getIndexAttr(v); };
  auto zerosOf = [&](OpBuilder &nb, Location nloc, RankedTensorType t) {
    Value zero =
        arith::ConstantOp::create(nb, nloc, f32, nb.getF32FloatAttr(0));
    Value empty =
        tensor::EmptyOp::create(nb, nloc, t.getShape(), t.getElementType());
    return linalg::FillOp::create(nb, nloc, zero, empty).getResult(0);
  };
  /// The call of the row function on row `r`.
  auto callRow = [&](OpBuilder &nb, Location nloc, Value r) {
    SmallVector<Value> args;
    for (auto [i, t] : llvm::enumerate(rowType.getInputs())) {
      Value arg = fn.getArgument(i);
      if (seed && i == *seed) {
        args.push_back(rowSeed);
      } else if (isRowArg(i)) {
        auto rowT = cast<RankedTensorType>(t);
        int64_t rank = rowT.getRank();
        SmallVector<OpFoldResult> offsets(rank, nb.getIndexAttr(0));
        offsets[0] = r;
        SmallVector<OpFoldResult> sizes, strides(rank, nb.getIndexAttr(1));
        for (int64_t d : rowT.getShape())
          sizes.push_back(nb.getIndexAttr(d));
        args.push_back(tensor::ExtractSliceOp::create(nb, nloc, rowT, arg,
                                                      offsets, sizes, strides));
      } else {
        args.push_back(arg);
      }
    }
    return func::CallOp::create(nb, nloc, row, args);
  };
  /// Inserts `value` (rank k) at index `at` of dimension 0 of `into` (rank
  /// k + 1, the row or chunk dimension first), in a parallel terminator.
  auto insertAt = [&](OpBuilder &nb, Location nloc, Value value, Value into,
                      Value at) {
    auto t = cast<RankedTensorType>(value.getType());
    SmallVector<OpFoldResult> offsets(t.getRank() + 1, nb.getIndexAttr(0));
    offsets[0] = at;
    SmallVector<OpFoldResult> sizes = {nb.getIndexAttr(1)};
    for (int64_t d : t.getShape())
      sizes.push_back(nb.getIndexAttr(d));
    SmallVector<OpFoldResult> strides(t.getRank() + 1, nb.getIndexAttr(1));
    tensor::ParallelInsertSliceOp::create(nb, nloc, value, into, offsets,
                                          sizes, strides);
  };

  SmallVector<Value> returned;
  if (llvm::all_of(combine, [](Combine c) { return c == Combine::Rows; })) {
    // Every row on its own: one parallel loop over the rows, each writing
    // its row of the results (the row's own parallel loops then run on the
    // thread that runs the row).
    SmallVector<Value> inits;
    for (Type t : results) {
      auto tensor = cast<RankedTensorType>(t);
      inits.push_back(tensor::EmptyOp::create(b, loc, tensor.getShape(),
                                              tensor.getElementType(),
                                              ValueRange{batch}));
    }
    auto forall = scf::ForallOp::create(b, loc, ArrayRef<OpFoldResult>{batch},
                                        inits, std::nullopt);
    OpBuilder::InsertionGuard inner(b);
    b.setInsertionPointToStart(forall.getBody());
    Value r = forall.getInductionVars()[0];
    auto call = callRow(b, loc, r);
    b.setInsertionPointToStart(&forall.getTerminator().getRegion().front());
    for (auto [i, value] : llvm::enumerate(call.getResults())) {
      // The row's 1 x N result is row r of the B x N result.
      auto rowT = cast<RankedTensorType>(value.getType());
      SmallVector<OpFoldResult> offsets(rowT.getRank(), index(0));
      offsets[0] = r;
      SmallVector<OpFoldResult> sizes, strides(rowT.getRank(), index(1));
      for (int64_t d : rowT.getShape())
        sizes.push_back(index(d));
      tensor::ParallelInsertSliceOp::create(
          b, loc, value, forall.getRegionIterArgs()[i], offsets, sizes,
          strides);
    }
    llvm::append_range(returned, forall.getResults());
  } else {
    // Sums over the rows: kRowChunks chunks in parallel, chunk c summing
    // rows c, c + kRowChunks, ... in order, then the chunks summed in order:
    // the same additions whatever the thread count (a resumed run continues
    // bit for bit).
    assert(llvm::none_of(combine, [](Combine c) { return c == Combine::Rows; }));
    SmallVector<RankedTensorType> partialTypes;
    SmallVector<Value> inits;
    for (auto [i, t] : llvm::enumerate(results)) {
      auto tensor = cast<RankedTensorType>(t);
      SmallVector<int64_t> shape = {kRowChunks};
      llvm::append_range(shape, tensor.getShape());
      partialTypes.push_back(RankedTensorType::get(shape, f32));
      inits.push_back(zerosOf(b, loc, partialTypes.back()));
    }
    auto forall = scf::ForallOp::create(
        b, loc, ArrayRef<OpFoldResult>{index(kRowChunks)}, inits,
        std::nullopt);
    {
      OpBuilder::InsertionGuard inner(b);
      b.setInsertionPointToStart(forall.getBody());
      Value chunk = forall.getInductionVars()[0];
      SmallVector<Value> chunkInits;
      for (Type t : results)
        chunkInits.push_back(zerosOf(b, loc, cast<RankedTensorType>(t)));
      Value step = arith::ConstantIndexOp::create(b, loc, kRowChunks);
      auto rows = scf::ForOp::create(
          b, loc, chunk, batch, step, chunkInits,
          [&](OpBuilder &nb, Location nloc, Value r, ValueRange acc) {
            auto call = callRow(nb, nloc, r);
            SmallVector<Value> next;
            for (auto [i, value] : llvm::enumerate(call.getResults()))
              next.push_back(linalg::AddOp::create(nb, nloc,
                                                   ValueRange{value, acc[i]},
                                                   ValueRange{acc[i]})
                                 .getResult(0));
            scf::YieldOp::create(nb, nloc, next);
          });
      b.setInsertionPointToStart(&forall.getTerminator().getRegion().front());
      for (auto [i, value] : llvm::enumerate(rows.getResults()))
        insertAt(b, loc, value, forall.getRegionIterArgs()[i], chunk);
    }
    for (auto [i, partial] : llvm::enumerate(forall.getResults())) {
      auto t = cast<RankedTensorType>(results[i]);
      Value sum =
          linalg::ReduceOp::create(
              b, loc, ValueRange{partial}, ValueRange{zerosOf(b, loc, t)},
              ArrayRef<int64_t>{0},
              [&](OpBuilder &nb, Location nloc, ValueRange a) {
                linalg::YieldOp::create(
                    nb, nloc,
                    ValueRange{arith::AddFOp::create(nb, nloc, a[0], a[1])});
              })
              .getResult(0);
      if (combine[i] == Combine::Mean) {
        Value total = tensor::ExtractOp::create(b, loc, sum);
        sum = tensor::FromElementsOp::create(
            b, loc, RankedTensorType::get({}, f32),
            ValueRange{arith::DivFOp::create(b, loc, total, batchF32)});
      }
      returned.push_back(sum);
    }
  }
  func::ReturnOp::create(b, loc, returned);
  return fn;
}
} // namespace

OwningOpRef<ModuleOp> mlir::hkt::buildModelModule(MLIRContext &context,
                                                  const ModelConfig &c,
                                                  int64_t maxBatch,
                                                  Location loc) {
  context.loadDialect<HKTDialect, func::FuncDialect, tensor::TensorDialect,
                      linalg::LinalgDialect, arith::ArithDialect,
                      scf::SCFDialect>();
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  int64_t D = c.dim, H = c.heads, L = c.levels, T = c.maxLen, F = c.ffn,
          C = c.classes;
  // The rows are computed one at a time by the private functions
  // <entry>_row, whose batch is 1: every op keeps its static shapes (and
  // its tiled lowering), and one module serves any batch up to maxBatch.
  const int64_t batch = 1;
  auto t = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, f32);
  };
  // The parameters, SPEC's table order and names.
  SmallVector<std::pair<std::string, Type>> params = {{"embed", t({c.vocab, D})},
                                                      {"pos", t({T, D})}};
  for (int64_t i = 0; i < c.layers; ++i) {
    std::string p = "layers." + std::to_string(i) + ".";
    params.push_back({p + "ln1.weight", t({D})});
    params.push_back({p + "ln1.bias", t({D})});
    params.push_back({p + "attn.wq", t({L, D, D})});
    params.push_back({p + "attn.wk", t({L, D, D})});
    params.push_back({p + "attn.wv", t({D, D})});
    params.push_back({p + "attn.wo", t({D, D})});
    if (L > 1) {
      params.push_back({p + "attn.down_w", t({L - 1, D, c.kernel})});
      params.push_back({p + "attn.down_b", t({L - 1, D})});
    }
    params.push_back({p + "attn.theta", t({H, L})});
    if (c.hybrid) {
      params.push_back({p + "attn.conv_u", t({D, c.convKernel})});
      params.push_back({p + "attn.gamma", t({H})});
    }
    params.push_back({p + "ln2.weight", t({D})});
    params.push_back({p + "ln2.bias", t({D})});
    params.push_back({p + "ffn.w1", t({D, F})});
    params.push_back({p + "ffn.b1", t({F})});
    params.push_back({p + "ffn.w2", t({F, D})});
    params.push_back({p + "ffn.b2", t({D})});
  }
  params.push_back({"ln_f.weight", t({D})});
  params.push_back({"ln_f.bias", t({D})});
  params.push_back({"head.w", t({D, C})});
  params.push_back({"head.b", t({C})});

  auto build = [&](StringRef name, bool withLabels) {
    SmallVector<Type> types = {RankedTensorType::get({batch, T}, i32)};
    if (withLabels)
      types.push_back(RankedTensorType::get({batch}, i32));
    for (auto &p : params)
      types.push_back(p.second);
    Type result = withLabels ? Type(t({})) : Type(t({batch, C}));
    auto fn = func::FuncOp::create(b, loc, name,
                                   b.getFunctionType(types, {result}));
    fn.setPrivate();
    unsigned first = withLabels ? 2 : 1;
    fn.setArgAttr(0, attr::kName, b.getStringAttr("tokens"));
    fn.setArgAttr(0, attr::kRange, b.getDenseI64ArrayAttr({0, c.vocab - 1}));
    if (withLabels) {
      fn.setArgAttr(1, attr::kName, b.getStringAttr("labels"));
      fn.setArgAttr(1, attr::kRange, b.getDenseI64ArrayAttr({0, C - 1}));
    }
    for (auto [i, p] : llvm::enumerate(params)) {
      fn.setArgAttr(first + i, attr::kName, b.getStringAttr(p.first));
      fn.setArgAttr(first + i, attr::kRole,
                    b.getStringAttr(::hkt::format::role::kParameter));
    }
    fn.setResultAttr(0, attr::kName,
                     b.getStringAttr(withLabels ? "loss" : "logits"));

    Block *body = fn.addEntryBlock();
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(body);
    ModelBuilder mb{b, loc, c, batch, f32};
    unsigned next = first;
    auto param = [&]() { return body->getArgument(next++); };
    Value tokens = body->getArgument(0);
    Value lengths = TokenLengthsOp::create(
        b, loc, RankedTensorType::get({batch}, i32), tokens,
        tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{batch}, i32));
    Value embed = param(), pos = param();
    Value x = EmbedOp::create(b, loc, t({batch, T, D}), tokens, embed, pos,
                              mb.empty({batch, T, D}));
    for (int64_t i = 0; i < c.layers; ++i) {
      Value ln1w = param(), ln1b = param();
      Value wq = param(), wk = param(), wv = param(), wo = param();
      Value downW, downB, convU, gamma;
      if (L > 1) {
        downW = param();
        downB = param();
      }
      Value theta = param();
      if (c.hybrid) {
        convU = param();
        gamma = param();
      }
      Value h = mb.layerNorm(x, ln1w, ln1b);
      Value a = AttentionOp::create(b, loc, t({batch, T, D}), h, wq, wk, wv, wo,
                                    theta, downW, downB, convU, gamma, lengths,
                                    mb.empty({batch, T, D}), H, L, c.stride,
                                    c.kernel, c.convKernel, c.hybrid, c.causal);
      x = mb.add(x, a);
      Value ln2w = param(), ln2b = param();
      Value w1 = param(), b1 = param(), w2 = param(), b2 = param();
      Value h2 = mb.layerNorm(x, ln2w, ln2b);
      Value f = mb.linear3d(h2, w1, b1);
      Value g = GeluOp::create(b, loc, t({batch, T, F}), f,
                               mb.empty({batch, T, F}));
      x = mb.add(x, mb.linear3d(g, w2, b2));
    }
    Value lnfw = param(), lnfb = param(), headW = param(), headB = param();
    Value xf = mb.layerNorm(x, lnfw, lnfb);
    Value pooled = MeanPoolOp::create(b, loc, t({batch, D}), xf, lengths,
                                      mb.empty({batch, D}));
    Value logits = mb.linear2d(pooled, headW, headB);
    Value out = logits;
    if (withLabels)
      out = CrossEntropyOp::create(b, loc, t({}), logits, body->getArgument(1),
                                   mb.empty({}));
    func::ReturnOp::create(b, loc, out);
    return fn;
  };
  func::FuncOp logitsRow = build(kLogitsRow, /*withLabels=*/false);
  func::FuncOp lossRow = build(kLossRow, /*withLabels=*/true);
  buildBatchedEntry(b, loc, logitsRow, "logits", maxBatch, {Combine::Rows},
                    std::nullopt);
  buildBatchedEntry(b, loc, lossRow, "loss", maxBatch, {Combine::Mean},
                    std::nullopt);
  return module;
}

LogicalResult mlir::hkt::addModelGradientEntry(ModuleOp module,
                                               int64_t maxBatch) {
  std::string rowGradName = (Twine(kLossRow) + "_grad").str();
  auto rowGrad = module.lookupSymbol<func::FuncOp>(rowGradName);
  if (!rowGrad)
    return module.emitError() << "internal error: no '" << rowGradName
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
  func::FuncOp grad = buildBatchedEntry(b, rowGrad.getLoc(), rowGrad,
                                        "loss_grad", maxBatch, combine, seed);
  // d loss / d loss = 1 unless the caller binds another seed.
  grad.setArgAttr(*seed, attr::kDefault, b.getF32FloatAttr(1.0));
  return success();
}

LogicalResult mlir::hkt::addModelTrainStep(ModuleOp module) {
  MLIRContext *ctx = module.getContext();
  ctx->loadDialect<math::MathDialect>();
  auto grad = module.lookupSymbol<func::FuncOp>("loss_grad");
  if (!grad)
    return module.emitError("internal error: no 'loss_grad' (add the model's "
                            "gradient entry first)");
  Location loc = grad.getLoc();
  // loss_grad(tokens, labels, <parameters>, dloss) -> (loss, d<parameter>).
  unsigned numParams = grad.getNumResults() - 1;
  if (grad.getNumArguments() != numParams + 3)
    return grad.emitError("internal error: unexpected loss_grad signature");
  OpBuilder b(ctx);
  b.setInsertionPointToEnd(module.getBody());
  Type f32 = b.getF32Type(), i64 = b.getI64Type();
  auto scalarF32 = RankedTensorType::get({}, f32);
  auto scalarI64 = RankedTensorType::get({}, i64);

  // Arguments: tokens, labels, the parameters, their first and second
  // moments (in-out), then the hyper-parameters and the step number.
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
  for (StringRef prefix : {"", kAdamFirstMoment, kAdamSecondMoment})
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
  // Results: the loss (of the parameters before the step), then the new
  // values of the in-out arguments.
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

  SmallVector<Value> callArgs(body->getArguments().take_front(2 + numParams));
  callArgs.push_back(tensor::FromElementsOp::create(b, loc, scalarF32,
                                                    ValueRange{one}));
  auto call = func::CallOp::create(b, loc, grad, callArgs);
  SmallVector<Value> returned = {call.getResult(0)};
  SmallVector<Value> newParams, newFirst, newSecond;
  for (unsigned p = 0; p < numParams; ++p) {
    Value g = call.getResult(1 + p);
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
