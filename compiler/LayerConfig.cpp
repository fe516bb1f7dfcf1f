//===- LayerConfig.cpp - one HKT layer from a JSON config -----------------===//

#include "compiler/LayerConfig.h"
#include "compiler/ModuleCompiler.h"
#include "dialect/HKTOps.h"
#include "runtime/ModuleFormat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"

using namespace mlir;
using namespace mlir::hkt;

llvm::Expected<LayerConfig> mlir::hkt::parseLayerConfig(llvm::StringRef text) {
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
    if (!v) {
      if (k.required)
        return llvm::createStringError(
            "layer config needs the key '%s' (required: batch, seq_len, dim, "
            "heads)",
            k.name);
      continue;
    }
    std::optional<int64_t> i = v->getAsInteger();
    if (!i || *i < 1)
      return llvm::createStringError(
          "layer config key '%s' must be an integer >= 1", k.name);
    *k.field = *i;
  }
  for (BoolKey &k : bools) {
    if (const llvm::json::Value *v = obj->get(k.name)) {
      std::optional<bool> b = v->getAsBoolean();
      if (!b)
        return llvm::createStringError(
            "layer config key '%s' must be true or false", k.name);
      *k.field = *b;
    }
  }
  if (config.dim % config.heads != 0)
    return llvm::createStringError(
        "layer config: 'dim' (%lld) must be divisible by 'heads' (%lld)",
        static_cast<long long>(config.dim),
        static_cast<long long>(config.heads));
  return config;
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
  auto t = [&](ArrayRef<int64_t> shape, Type elt) {
    return RankedTensorType::get(shape, elt);
  };
  // (name, type) in SPEC's parameter-table order.
  SmallVector<std::pair<std::string, Type>> args = {
      {"x", t({c.batch, c.seqLen, D}, f32)},
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
  args.push_back({"lengths", t({c.batch}, b.getI32Type())});

  SmallVector<Type> argTypes;
  for (auto &arg : args)
    argTypes.push_back(arg.second);
  Type yType = args.front().second;
  auto fn = func::FuncOp::create(b, loc, "layer",
                                 b.getFunctionType(argTypes, {yType}));
  namespace attr = ::hkt::format::attr;
  // The weights are parameters; x and lengths are inputs (the default role).
  for (auto [i, arg] : llvm::enumerate(args)) {
    fn.setArgAttr(i, attr::kName, b.getStringAttr(arg.first));
    if (arg.first != "x" && arg.first != "lengths")
      fn.setArgAttr(i, attr::kRole,
                    b.getStringAttr(::hkt::format::role::kParameter));
  }
  unsigned lengthsIndex = args.size() - 1;
  fn.setArgAttr(lengthsIndex, attr::kDefault, b.getI32IntegerAttr(c.seqLen));
  fn.setArgAttr(lengthsIndex, attr::kRange,
                b.getDenseI64ArrayAttr({1, c.seqLen}));
  fn.setResultAttr(0, attr::kName, b.getStringAttr("y"));

  Block *body = fn.addEntryBlock();
  b.setInsertionPointToStart(body);
  auto arg = [&](StringRef name) -> Value {
    for (auto [i, a] : llvm::enumerate(args))
      if (a.first == name)
        return body->getArgument(i);
    return Value();
  };
  Value init = tensor::EmptyOp::create(b, loc, cast<RankedTensorType>(yType).getShape(), f32);
  Value y = AttentionOp::create(
      b, loc, yType, arg("x"), arg("wq"), arg("wk"), arg("wv"), arg("wo"),
      arg("theta"), arg("down_w"), arg("down_b"), arg("conv_u"), arg("gamma"),
      arg("lengths"), init, c.heads, c.levels, c.stride, c.kernel,
      c.convKernel, c.hybrid, c.causal);
  func::ReturnOp::create(b, loc, y);
  return module;
}
