//===- ModelConfig.cpp - SPEC's classifier model from a JSON config -------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "compiler/frontend/ModelConfig.h"
#include "compiler/frontend/ConfigJson.h"
#include "compiler/frontend/LayerConfig.h"
#include "dialect/HKTOps.h"
#include "dialect/Utils/BatchedEntry.h"
#include "dialect/Utils/LinalgBuilders.h"
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
  std::pair<const char *, int64_t *> ints[] = {{"vocab", &c.vocab},
                                               {"max_len", &c.maxLen},
                                               {"dim", &c.dim},
                                               {"heads", &c.heads},
                                               {"layers", &c.layers},
                                               {"levels", &c.levels},
                                               {"stride", &c.stride},
                                               {"kernel", &c.kernel},
                                               {"conv_kernel", &c.convKernel},
                                               {"ffn", &c.ffn},
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
    return llvm::createStringError("model config: " +
                                   llvm::toString(std::move(e)));
  for (auto [key, value] : {std::pair<const char *, int64_t>{"ffn", c.ffn},
                            {"classes", c.classes},
                            {"vocab", c.vocab}}) {
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
  llvm::json::Object obj{{"vocab", c.vocab},
                         {"max_len", c.maxLen},
                         {"dim", c.dim},
                         {"heads", c.heads},
                         {"layers", c.layers},
                         {"levels", c.levels},
                         {"stride", c.stride},
                         {"kernel", c.kernel},
                         {"conv_kernel", c.convKernel},
                         {"hybrid", c.hybrid},
                         {"causal", c.causal},
                         {"ffn", c.ffn},
                         {"classes", c.classes}};
  std::string out;
  llvm::raw_string_ostream os(out);
  os << llvm::json::Value(std::move(obj));
  return out;
}

namespace {
/// Builds the model's ops into one function body. The sequence length may be
/// dynamic: every tensor built here takes its sizes from the values it is
/// computed from.
struct ModelBuilder {
  OpBuilder &b;
  Location loc;
  Type f32;

  /// `like`'s type with its last dimension `width`.
  RankedTensorType withWidth(Value like, int64_t width) {
    SmallVector<int64_t> shape(
        cast<RankedTensorType>(like.getType()).getShape());
    shape.back() = width;
    return RankedTensorType::get(shape, f32);
  }
  /// A tensor.empty shaped like `like` with its last dimension `width`.
  Value emptyWithWidth(Value like, int64_t width) {
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, like);
    sizes.back() = b.getIndexAttr(width);
    return tensor::EmptyOp::create(b, loc, sizes, f32);
  }
  /// x W + bias for x: N x Din (2-D), W: Din x Dout, bias: Dout.
  Value linear2d(Value x, Value w, Value bias) {
    int64_t dout = cast<RankedTensorType>(w.getType()).getDimSize(1);
    Value zero = arith::ConstantOp::create(b, loc, f32, b.getF32FloatAttr(0));
    Value acc = linalg::FillOp::create(b, loc, zero, emptyWithWidth(x, dout))
                    .getResult(0);
    Value mm =
        linalg::MatmulOp::create(b, loc, ValueRange{x, w}, ValueRange{acc})
            .getResult(0);
    Value wide =
        linalg::BroadcastOp::create(b, loc, bias, emptyWithWidth(x, dout),
                                    ArrayRef<int64_t>{0})
            .getResult()[0];
    return linalg::AddOp::create(b, loc, ValueRange{mm, wide},
                                 ValueRange{emptyWithWidth(x, dout)})
        .getResult(0);
  }
  /// The same on B x T x Din through a (B*T) x Din view.
  Value linear3d(Value x, Value w, Value bias) {
    int64_t dout = cast<RankedTensorType>(w.getType()).getDimSize(1);
    SmallVector<ReassociationIndices> collapse = {{0, 1}, {2}};
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, x);
    sizes.back() = b.getIndexAttr(dout);
    Value x2 = tensor::CollapseShapeOp::create(b, loc, x, collapse);
    Value y2 = linear2d(x2, w, bias);
    return tensor::ExpandShapeOp::create(b, loc, withWidth(x, dout), y2,
                                         collapse, sizes);
  }
  Value add(Value x, Value y) {
    return linalg::AddOp::create(b, loc, ValueRange{x, y},
                                 ValueRange{emptyLike(b, loc, x)})
        .getResult(0);
  }
  Value layerNorm(Value x, Value w, Value bias) {
    return LayerNormOp::create(b, loc, x.getType(), x, w, bias,
                               emptyLike(b, loc, x), b.getF64FloatAttr(1e-5));
  }
};
} // namespace

namespace attr = ::hkt::format::attr;

namespace {

using ParameterList = SmallVector<std::pair<std::string, Type>>;

/// The rows are computed one at a time by the private functions
/// <entry>_row, whose batch is 1: every op keeps its static shapes (and its
/// tiled lowering), and one module serves any batch up to the bound.
constexpr int64_t kRowBatch = 1;

/// The parameters, SPEC's table order and names.
ParameterList modelParameters(OpBuilder &b, const ModelConfig &c) {
  int64_t D = c.dim, H = c.heads, L = c.levels, T = c.maxLen, F = c.ffn,
          C = c.classes;
  auto t = [&](ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  };
  ParameterList params = {{"embed", t({c.vocab, D})}, {"pos", t({T, D})}};
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
  return params;
}

/// The row function's declaration: tokens [, labels], the parameters, with
/// the argument attributes of the module format; logits or the loss.
func::FuncOp declareRowFunction(OpBuilder &b, Location loc,
                                const ModelConfig &c,
                                const ParameterList &params, StringRef name,
                                bool withLabels, bool dynamicLength) {
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  SmallVector<Type> types = {RankedTensorType::get(
      {kRowBatch, dynamicLength ? ShapedType::kDynamic : c.maxLen}, i32)};
  if (withLabels)
    types.push_back(RankedTensorType::get({kRowBatch}, i32));
  for (auto &p : params)
    types.push_back(p.second);
  Type result = withLabels
                    ? Type(RankedTensorType::get({}, f32))
                    : Type(RankedTensorType::get({kRowBatch, c.classes}, f32));
  auto fn =
      func::FuncOp::create(b, loc, name, b.getFunctionType(types, {result}));
  fn.setPrivate();
  unsigned first = withLabels ? 2 : 1;
  fn.setArgAttr(0, attr::kName, b.getStringAttr("tokens"));
  fn.setArgAttr(0, attr::kRange, b.getDenseI64ArrayAttr({0, c.vocab - 1}));
  if (dynamicLength) {
    // T, bounded by max_len (the rows of pos).
    fn.setArgAttr(0, attr::kDims, b.getStrArrayAttr({"", "T"}));
    fn.setArgAttr(0, attr::kBounds,
                  b.getDenseI64ArrayAttr({kRowBatch, c.maxLen}));
  }
  if (withLabels) {
    fn.setArgAttr(1, attr::kName, b.getStringAttr("labels"));
    fn.setArgAttr(1, attr::kRange, b.getDenseI64ArrayAttr({0, c.classes - 1}));
  }
  for (auto [i, p] : llvm::enumerate(params)) {
    fn.setArgAttr(first + i, attr::kName, b.getStringAttr(p.first));
    fn.setArgAttr(first + i, attr::kRole,
                  b.getStringAttr(::hkt::format::role::kParameter));
  }
  fn.setResultAttr(0, attr::kName,
                   b.getStringAttr(withLabels ? "loss" : "logits"));
  return fn;
}

/// SPEC's classifier on one row: embedding, the layers (LayerNorm, the HKT
/// attention, the FFN, residuals), the final LayerNorm, the masked mean
/// pool, the head [, the cross-entropy]. The row's length T may be dynamic.
void buildRowBody(OpBuilder &b, Location loc, const ModelConfig &c,
                  func::FuncOp fn, bool withLabels) {
  Type f32 = b.getF32Type(), i32 = b.getI32Type();
  int64_t D = c.dim, H = c.heads, L = c.levels;
  const int64_t batch = kRowBatch;
  Block *body = fn.addEntryBlock();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(body);
  ModelBuilder mb{b, loc, f32};
  unsigned next = withLabels ? 2 : 1;
  auto param = [&]() { return body->getArgument(next++); };
  Value tokens = body->getArgument(0);
  Value lengths = TokenLengthsOp::create(
      b, loc, RankedTensorType::get({batch}, i32), tokens,
      tensor::EmptyOp::create(b, loc, ArrayRef<int64_t>{batch}, i32));
  Value embed = param(), pos = param();
  int64_t T = cast<RankedTensorType>(tokens.getType()).getDimSize(1);
  auto activation = RankedTensorType::get({batch, T, D}, f32);
  SmallVector<OpFoldResult> activationSizes = {
      b.getIndexAttr(batch), tensor::getMixedSize(b, loc, tokens, 1),
      b.getIndexAttr(D)};
  Value x =
      EmbedOp::create(b, loc, activation, tokens, embed, pos,
                      tensor::EmptyOp::create(b, loc, activationSizes, f32));
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
    Value a = AttentionOp::create(b, loc, activation, h, wq, wk, wv, wo, theta,
                                  downW, downB, convU, gamma, lengths,
                                  emptyLike(b, loc, h), H, L, c.stride,
                                  c.kernel, c.convKernel, c.hybrid, c.causal);
    x = mb.add(x, a);
    Value ln2w = param(), ln2b = param();
    Value w1 = param(), b1 = param(), w2 = param(), b2 = param();
    Value h2 = mb.layerNorm(x, ln2w, ln2b);
    Value f = mb.linear3d(h2, w1, b1);
    Value g = GeluOp::create(b, loc, f.getType(), f, emptyLike(b, loc, f));
    x = mb.add(x, mb.linear3d(g, w2, b2));
  }
  Value lnfw = param(), lnfb = param(), headW = param(), headB = param();
  Value xf = mb.layerNorm(x, lnfw, lnfb);
  auto pooledType = RankedTensorType::get({batch, D}, f32);
  Value pooled = MeanPoolOp::create(b, loc, pooledType, xf, lengths,
                                    emptyOf(b, loc, pooledType));
  Value logits = mb.linear2d(pooled, headW, headB);
  Value out = logits;
  if (withLabels) {
    auto scalar = RankedTensorType::get({}, f32);
    out = CrossEntropyOp::create(b, loc, scalar, logits, body->getArgument(1),
                                 emptyOf(b, loc, scalar));
  }
  func::ReturnOp::create(b, loc, out);
}

} // namespace

OwningOpRef<ModuleOp> mlir::hkt::buildModelModule(MLIRContext &context,
                                                  const ModelConfig &c,
                                                  int64_t maxBatch,
                                                  bool dynamicLength,
                                                  Location loc) {
  context.loadDialect<HKTDialect, func::FuncDialect, tensor::TensorDialect,
                      linalg::LinalgDialect, arith::ArithDialect,
                      scf::SCFDialect>();
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  ParameterList params = modelParameters(b, c);
  auto build = [&](StringRef name, bool withLabels) {
    func::FuncOp fn =
        declareRowFunction(b, loc, c, params, name, withLabels, dynamicLength);
    buildRowBody(b, loc, c, fn, withLabels);
    return fn;
  };
  func::FuncOp logitsRow = build(kLogitsRow, /*withLabels=*/false);
  func::FuncOp lossRow = build(kLossRow, /*withLabels=*/true);
  buildBatchedEntry(b, loc, logitsRow, "logits", maxBatch, {Combine::Rows},
                    std::nullopt, kModelRowArgs);
  buildBatchedEntry(b, loc, lossRow, "loss", maxBatch, {Combine::Mean},
                    std::nullopt, kModelRowArgs);
  return module;
}
