//===- LayerConfig.cpp - one HKT layer from a JSON config -----------------===//

#include "compiler/frontend/LayerConfig.h"
#include "compiler/ModuleCompiler.h"
#include "compiler/frontend/ConfigJson.h"
#include "dialect/HKTOps.h"
#include "dialect/Utils/BatchedEntry.h"
#include "dialect/Utils/LinalgBuilders.h"
#include "runtime/ModuleFormat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::hkt;

llvm::Expected<LayerConfig> mlir::hkt::parseLayerConfig(llvm::StringRef text,
                                                        int64_t maxSeqLen,
                                                        int64_t maxBatch) {
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(text);
  if (!parsed)
    return llvm::createStringError("layer config is not valid JSON: " +
                                   llvm::toString(parsed.takeError()));
  const llvm::json::Object *obj = parsed->getAsObject();
  if (!obj)
    return llvm::createStringError("layer config must be a JSON object");

  LayerConfig config;
  struct IntKey {
    const char *name;
    int64_t *field;
    bool required;
  };
  IntKey ints[] = {{"batch", &config.batch, true},
                   {"seq_len", &config.seqLen, true},
                   {"dim", &config.dim, true},
                   {"heads", &config.heads, true},
                   {"levels", &config.levels, false},
                   {"stride", &config.stride, false},
                   {"kernel", &config.kernel, false},
                   {"conv_kernel", &config.convKernel, false}};
  struct BoolKey {
    const char *name;
    bool *field;
  };
  BoolKey bools[] = {{"hybrid", &config.hybrid}, {"causal", &config.causal}};
  // The dimensions that may be dynamic: a bound (hkt-compile's flag)
  // replaces the key, which may then be absent or null; a given value must
  // lie within the bound.
  struct DynamicKey {
    const char *name, *flag, *what;
    int64_t *field, bound;
    bool *dynamic;
  };
  DynamicKey dynamics[] = {{"batch", "--max-batch", "batch", &config.batch,
                            maxBatch, &config.dynamicBatch},
                           {"seq_len", "--max-seq-len", "length",
                            &config.seqLen, maxSeqLen, &config.dynamicSeqLen}};
  auto dynamicKey = [&](const char *name) -> DynamicKey * {
    for (DynamicKey &k : dynamics)
      if (llvm::StringRef(k.name) == name)
        return &k;
    return nullptr;
  };

  for (const auto &kv : *obj) {
    llvm::StringRef key = kv.first;
    bool known = llvm::any_of(ints, [&](auto &k) { return key == k.name; }) ||
                 llvm::any_of(bools, [&](auto &k) { return key == k.name; });
    if (!known)
      return llvm::createStringError(
          "unknown key '%s' in layer config (known keys: batch, seq_len, dim, "
          "heads, levels, stride, kernel, conv_kernel, hybrid, causal)",
          key.str().c_str());
  }
  for (IntKey &k : ints) {
    const llvm::json::Value *v = obj->get(k.name);
    if (DynamicKey *d = dynamicKey(k.name)) {
      bool null = v && v->kind() == llvm::json::Value::Null;
      if (null && d->bound <= 0)
        return llvm::createStringError(
            "layer config: '%s' is null (a dynamic %s): give its bound "
            "with hkt-compile %s N",
            k.name, d->what, d->flag);
      if (d->bound > 0 && (!v || null))
        continue;
    }
    if (!v) {
      if (k.required)
        return llvm::createStringError(
            "layer config needs the key '%s' (required: batch, seq_len, dim, "
            "heads)",
            k.name);
      continue;
    }
    llvm::Expected<int64_t> i = readPositiveInteger(*v, "layer config", k.name);
    if (!i)
      return i.takeError();
    *k.field = *i;
  }
  for (BoolKey &k : bools) {
    if (const llvm::json::Value *v = obj->get(k.name)) {
      llvm::Expected<bool> b = readBoolean(*v, "layer config", k.name);
      if (!b)
        return b.takeError();
      *k.field = *b;
    }
  }
  for (DynamicKey &d : dynamics) {
    if (d.bound <= 0)
      continue;
    if (*d.field > d.bound)
      return llvm::createStringError("layer config '%s' = %lld exceeds %s %lld",
                                     d.name, static_cast<long long>(*d.field),
                                     d.flag, static_cast<long long>(d.bound));
    *d.field = d.bound;
    *d.dynamic = true;
  }
  if (config.dim % config.heads != 0)
    return llvm::createStringError(
        "layer config: 'dim' (%lld) must be divisible by 'heads' (%lld)",
        static_cast<long long>(config.dim),
        static_cast<long long>(config.heads));
  if (llvm::Error e = checkLayerConfigLimits(config))
    return std::move(e);
  return config;
}

// The limits of docs/limits.md. Every product is computed with overflow
// checks, so no value (each already in [1, 2^63)) can wrap.
llvm::Error mlir::hkt::checkLayerConfigLimits(const LayerConfig &c) {
  auto err = [](const char *key, int64_t value, const std::string &why) {
    return llvm::createStringError("layer config '%s' = %lld: %s", key,
                                   static_cast<long long>(value),
                                   why.c_str());
  };
  auto str = [](int64_t v) { return std::to_string(v); };
  struct Cap {
    const char *key;
    int64_t value, max;
    const char *why;
  };
  Cap caps[] = {
      {"batch", c.batch, kMaxTensorElements, "exceeds the tensor element limit"},
      {"seq_len", c.seqLen, kMaxSeqLen,
       "exceeds the largest sequence length, the int32 range of 'lengths'"},
      {"dim", c.dim, kMaxDim, "exceeds the largest model width"},
      {"heads", c.heads, kMaxDim, "exceeds the largest model width"},
      {"levels", c.levels, kMaxLevels, "exceeds the largest number of levels"},
      {"stride", c.stride, kMaxStrideProduct,
       "exceeds the largest stride"},
      {"kernel", c.kernel, kMaxKernel, "exceeds the largest kernel size"},
      {"conv_kernel", c.convKernel, kMaxKernel,
       "exceeds the largest kernel size"}};
  for (const Cap &cap : caps)
    if (cap.value > cap.max)
      return err(cap.key, cap.value,
                 std::string(cap.why) + " (at most " + str(cap.max) +
                     ", see docs/limits.md)");

  // stride^(levels-1): the coarsest level's block and the alignment of the
  // fused tiles. Bounded so that tiles stay small and nothing overflows.
  auto power = [](int64_t base, int64_t exp, int64_t &out) {
    out = 1;
    for (int64_t l = 0; l < exp; ++l)
      if (llvm::MulOverflow(out, base, out) || out > kMaxStrideProduct)
        return false;
    return true;
  };
  int64_t product;
  if (!power(c.stride, c.levels - 1, product)) {
    int64_t maxLevels = 1, maxStride = 1, p;
    while (power(c.stride, maxLevels, p) && maxLevels < kMaxLevels)
      ++maxLevels;
    while (power(maxStride + 1, c.levels - 1, p))
      ++maxStride;
    return llvm::createStringError(
        "layer config 'levels' = %lld, 'stride' = %lld: stride^(levels-1) = "
        "%lld^%lld exceeds %lld (2^10): at most %lld levels for stride %lld, "
        "or a stride of at most %lld for %lld levels (see docs/limits.md)",
        static_cast<long long>(c.levels), static_cast<long long>(c.stride),
        static_cast<long long>(c.stride), static_cast<long long>(c.levels - 1),
        static_cast<long long>(kMaxStrideProduct),
        static_cast<long long>(maxLevels), static_cast<long long>(c.stride),
        static_cast<long long>(maxStride), static_cast<long long>(c.levels));
  }

  // Every tensor of the layer: element count and bytes (f32).
  auto tensor = [&](const char *name,
                    std::initializer_list<int64_t> shape) -> llvm::Error {
    int64_t n = 1;
    for (int64_t d : shape)
      if (llvm::MulOverflow(n, d, n) || n > kMaxTensorElements)
        return llvm::createStringError(
            "layer config: tensor '%s' would have more than %lld elements "
            "(the per-tensor limit, %lld GiB of f32; see docs/limits.md): "
            "batch %lld, seq_len %lld, dim %lld, levels %lld",
            name, static_cast<long long>(kMaxTensorElements),
            static_cast<long long>(kMaxTensorElements * 4 >> 30),
            static_cast<long long>(c.batch), static_cast<long long>(c.seqLen),
            static_cast<long long>(c.dim), static_cast<long long>(c.levels));
    return llvm::Error::success();
  };
  int64_t L = c.levels, D = c.dim;
  if (auto e = tensor("x", {c.batch, c.seqLen, D}))
    return e;
  if (auto e = tensor("wq", {L, D, D}))
    return e;
  if (auto e = tensor("down_w", {L, D, c.kernel}))
    return e;
  if (auto e = tensor("theta", {c.heads, L}))
    return e;
  if (auto e = tensor("conv_u", {D, c.convKernel}))
    return e;
  return llvm::Error::success();
}

OwningOpRef<ModuleOp> mlir::hkt::buildLayerModule(MLIRContext &context,
                                                  const LayerConfig &c,
                                                  Location loc) {
  context.loadDialect<HKTDialect, func::FuncDialect, tensor::TensorDialect>();
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());

  Type f32 = b.getF32Type();
  int64_t L = c.levels, D = c.dim, H = c.heads;
  // With a dynamic batch, the layer is built for one row (layer_row) and
  // `layer` runs it on every row, one after the other (each row's heads in
  // parallel): a dynamic B through the whole lowering would need two
  // dynamic sizes in one reshape group, which MLIR 22's
  // expand-strided-metadata does not take.
  int64_t batch = c.dynamicBatch ? 1 : c.batch;
  StringRef name = c.dynamicBatch ? "layer_row" : "layer";
  int64_t T = c.dynamicSeqLen ? ShapedType::kDynamic : c.seqLen;
  auto t = [&](ArrayRef<int64_t> shape, Type elt) {
    return RankedTensorType::get(shape, elt);
  };
  // (name, type) in SPEC's parameter-table order.
  SmallVector<std::pair<std::string, Type>> args = {
      {"x", t({batch, T, D}, f32)},
      {"wq", t({L, D, D}, f32)},
      {"wk", t({L, D, D}, f32)},
      {"wv", t({D, D}, f32)},
      {"wo", t({D, D}, f32)}};
  if (L > 1) {
    args.push_back({"down_w", t({L - 1, D, c.kernel}, f32)});
    args.push_back({"down_b", t({L - 1, D}, f32)});
  }
  args.push_back({"theta", t({H, L}, f32)});
  if (c.hybrid) {
    args.push_back({"conv_u", t({D, c.convKernel}, f32)});
    args.push_back({"gamma", t({H}, f32)});
  }
  args.push_back({"lengths", t({batch}, b.getI32Type())});

  SmallVector<Type> argTypes;
  for (auto &arg : args)
    argTypes.push_back(arg.second);
  Type yType = args.front().second;
  auto fn =
      func::FuncOp::create(b, loc, name, b.getFunctionType(argTypes, {yType}));
  if (c.dynamicBatch)
    fn.setPrivate();
  namespace attr = ::hkt::format::attr;
  // The weights are parameters; x and lengths are inputs (the default role).
  for (auto [i, arg] : llvm::enumerate(args)) {
    fn.setArgAttr(i, attr::kName, b.getStringAttr(arg.first));
    if (arg.first != "x" && arg.first != "lengths")
      fn.setArgAttr(i, attr::kRole,
                    b.getStringAttr(::hkt::format::role::kParameter));
  }
  // With a dynamic T the default and the range are the bound: a key length
  // at or above the call's T masks no key (docs/module-format.md).
  unsigned lengthsIndex = args.size() - 1;
  fn.setArgAttr(lengthsIndex, attr::kDefault, b.getI32IntegerAttr(c.seqLen));
  fn.setArgAttr(lengthsIndex, attr::kRange,
                b.getDenseI64ArrayAttr({1, c.seqLen}));
  fn.setResultAttr(0, attr::kName, b.getStringAttr("y"));
  if (c.dynamicSeqLen) {
    ArrayAttr dims = b.getStrArrayAttr({"", "T", ""});
    fn.setArgAttr(0, attr::kDims, dims);
    fn.setArgAttr(0, attr::kBounds,
                  b.getDenseI64ArrayAttr({batch, c.seqLen, D}));
    fn.setResultAttr(0, attr::kDims, dims);
  }

  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto arg = [&](StringRef name) -> Value {
    for (auto [i, a] : llvm::enumerate(args))
      if (a.first == name)
        return body->getArgument(i);
    return Value();
  };
  Value init = emptyLike(b, loc, arg("x"));
  Value y = AttentionOp::create(
      b, loc, yType, arg("x"), arg("wq"), arg("wk"), arg("wv"), arg("wo"),
      arg("theta"), arg("down_w"), arg("down_b"), arg("conv_u"), arg("gamma"),
      arg("lengths"), init, c.heads, c.levels, c.stride, c.kernel,
      c.convKernel, c.hybrid, c.causal);
  func::ReturnOp::create(b, loc, y);
  if (c.dynamicBatch) {
    b.setInsertionPointToEnd(module->getBody());
    const StringRef rowArgs[] = {"x", "lengths"};
    buildBatchedEntry(b, loc, fn, "layer", c.batch, {Combine::Rows},
                      std::nullopt, rowArgs, RowOrder::InOrder);
  }
  return module;
}
