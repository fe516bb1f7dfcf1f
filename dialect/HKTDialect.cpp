//===- HKTDialect.cpp - The hkt dialect -----------------------------------===//

#include "dialect/HKTDialect.h"
#include "dialect/HKTOps.h"

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Transforms/InliningUtils.h"
#include "runtime/ModuleFormat.h"

using namespace mlir;
using namespace mlir::hkt;

#include "dialect/HKTOpsDialect.cpp.inc"

namespace {
/// hkt ops are value semantics without regions: a call of a function made
/// of them can always be inlined (the GPU path inlines a model's row
/// functions into its entries).
struct HKTInlinerInterface : public DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};
} // namespace

void HKTDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialect/HKTOps.cpp.inc"
      >();
  addInterfaces<HKTInlinerInterface>();
}

//===----------------------------------------------------------------------===//
// Function argument and result attributes
//===----------------------------------------------------------------------===//
//
// The attributes from which hkt-compile writes an entry's manifest
// (docs/module-format.md). Each is checked on its own here, and against the
// function where it pairs with others (an in-out argument and its result,
// symbols shared by arguments), so that a mistake is reported at the
// function, in hkt-opt as in hkt-compile.

namespace {
namespace attr = ::hkt::format::attr;
namespace role = ::hkt::format::role;

/// The element type of a ranked tensor, or the type itself.
Type elementTypeOf(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    return shaped.getElementType();
  return type;
}

/// `name` is one of the attributes this dialect defines on arguments or
/// results: the message for an unknown one lists them.
constexpr const char *kArgAttrs[] = {attr::kName, attr::kDefault, attr::kRange,
                                     attr::kRole, attr::kBounds,  attr::kDims};
constexpr const char *kResultAttrs[] = {attr::kName, attr::kInOut, attr::kDims};

/// The bound of `symbol` where argument `arg` of `fn` names it in its
/// `hkt.dims` (at a dynamic dimension), if it does and its attributes are
/// well formed (a malformed one is reported on its own).
std::optional<int64_t> symbolBound(FunctionOpInterface fn, unsigned arg,
                                   StringRef symbol) {
  auto tensor = dyn_cast<RankedTensorType>(fn.getArgumentTypes()[arg]);
  auto dims = fn.getArgAttrOfType<ArrayAttr>(arg, attr::kDims);
  auto bounds = fn.getArgAttrOfType<DenseI64ArrayAttr>(arg, attr::kBounds);
  if (!tensor || !dims || !bounds ||
      dims.size() != static_cast<size_t>(bounds.size()) ||
      dims.size() != static_cast<size_t>(tensor.getRank()))
    return std::nullopt;
  for (auto [d, a] : llvm::enumerate(dims))
    if (auto s = dyn_cast<StringAttr>(a);
        s && s.getValue() == symbol && tensor.isDynamicDim(d))
      return bounds[d];
  return std::nullopt;
}

/// What `hkt.dims` must be on an argument and on a result alike: one string
/// per dimension of a ranked tensor, a symbol exactly for each dynamic one.
LogicalResult verifyDimsShape(Type type, Attribute value,
                              function_ref<InFlightDiagnostic()> emit) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return emit() << "'" << attr::kDims << "' applies to ranked tensors, not "
                  << type;
  auto dims = dyn_cast<ArrayAttr>(value);
  if (!dims || dims.size() != static_cast<size_t>(tensor.getRank()) ||
      !llvm::all_of(dims, [](Attribute a) { return isa<StringAttr>(a); }))
    return emit() << "'" << attr::kDims
                  << "' must be an array of strings, one per dimension ("
                  << tensor.getRank() << " for " << type << ")";
  for (int64_t d = 0; d < tensor.getRank(); ++d) {
    StringRef symbol = cast<StringAttr>(dims[d]).getValue();
    if (!tensor.isDynamicDim(d) && !symbol.empty())
      return emit() << "'" << attr::kDims << "' names static dimension " << d
                    << " ('" << symbol << "'); give \"\" for static "
                    << "dimensions";
    if (tensor.isDynamicDim(d) && symbol.empty())
      return emit() << "'" << attr::kDims << "' leaves dynamic dimension " << d
                    << " without a symbol";
  }
  return success();
}

std::string knownList(ArrayRef<const char *> names) {
  std::string s;
  for (const char *n : names)
    s += (s.empty() ? "" : ", ") + std::string(n);
  return s;
}

/// Checks the attributes of argument `index` of `fn`; `emit` reports at the
/// function, prefixed with the argument.
class ArgAttrVerifier {
public:
  ArgAttrVerifier(FunctionOpInterface fn, unsigned index)
      : fn(fn), index(index), type(fn.getArgumentTypes()[index]) {}

  LogicalResult verify(NamedAttribute named) {
    StringRef name = named.getName().getValue();
    Attribute value = named.getValue();
    if (name == attr::kName)
      return verifyName(value);
    if (name == attr::kDefault)
      return verifyDefault(value);
    if (name == attr::kRange)
      return verifyRange(value);
    if (name == attr::kRole)
      return verifyRole(value);
    if (name == attr::kBounds)
      return verifyBounds(value);
    if (name == attr::kDims)
      return verifyDims(value);
    if (name == attr::kInOut)
      return emit() << "'" << attr::kInOut
                    << "' is a result attribute: mark the argument with '"
                    << attr::kRole << "' = \"" << role::kInOut
                    << "\" and its new value, a result, with '" << attr::kInOut
                    << "' = " << index;
    return emit() << "unknown argument attribute '" << name
                  << "' (known: " << knownList(kArgAttrs) << ")";
  }

private:
  FunctionOpInterface fn;
  unsigned index;
  Type type;

  InFlightDiagnostic emit() {
    return fn->emitError() << "argument #" << index << ": ";
  }
  template <typename T> T argAttr(StringRef name) {
    return fn.getArgAttrOfType<T>(index, name);
  }

  LogicalResult verifyName(Attribute value) {
    auto str = dyn_cast<StringAttr>(value);
    if (!str || str.getValue().empty())
      return emit() << "'" << attr::kName << "' must be a non-empty string";
    return success();
  }

  LogicalResult verifyDefault(Attribute value) {
    Type elt = elementTypeOf(type);
    auto i = dyn_cast<IntegerAttr>(value);
    bool ok = (i && elt.isSignlessInteger()) ||
              (isa<FloatAttr>(value) && isa<FloatType>(elt));
    if (!ok)
      return emit() << "'" << attr::kDefault
                    << "' must be an integer for integer elements or a float "
                       "for float elements, got "
                    << value << " for elements of type " << elt;
    if (auto range = argAttr<DenseI64ArrayAttr>(attr::kRange);
        i && range && range.size() == 2 &&
        (i.getInt() < range[0] || i.getInt() > range[1]))
      return emit() << "'" << attr::kDefault << "' " << i.getInt()
                    << " lies outside '" << attr::kRange << "' [" << range[0]
                    << ", " << range[1] << "]";
    return success();
  }

  LogicalResult verifyRange(Attribute value) {
    auto range = dyn_cast<DenseI64ArrayAttr>(value);
    if (!range || range.size() != 2 || range[0] > range[1])
      return emit() << "'" << attr::kRange
                    << "' must be an array of two integers [lo, hi] with lo "
                       "<= hi (array<i64: lo, hi>)";
    if (!elementTypeOf(type).isSignlessInteger())
      return emit() << "'" << attr::kRange
                    << "' applies to integer elements, not "
                    << elementTypeOf(type);
    return success();
  }

  LogicalResult verifyRole(Attribute value) {
    auto str = dyn_cast<StringAttr>(value);
    StringRef r = str ? str.getValue() : "";
    if (r != role::kInput && r != role::kParameter && r != role::kInOut)
      return emit() << "'" << attr::kRole << "' must be \"" << role::kInput
                    << "\", \"" << role::kParameter << "\" or \""
                    << role::kInOut << "\" (results are the outputs)";
    if (r != role::kInOut)
      return success();
    if (!isa<RankedTensorType>(type))
      return emit() << "an in-out argument must be a ranked tensor, not "
                    << type;
    for (unsigned i = 0; i < fn.getNumResults(); ++i)
      if (auto inOut = fn.getResultAttrOfType<IntegerAttr>(i, attr::kInOut))
        if (inOut.getInt() == index)
          return success();
    return emit() << "'" << attr::kRole << "' is \"" << role::kInOut
                  << "\" but no result carries its new value ('" << attr::kInOut
                  << "' = " << index << ")";
  }

  LogicalResult verifyBounds(Attribute value) {
    auto tensor = dyn_cast<RankedTensorType>(type);
    if (!tensor)
      return emit() << "'" << attr::kBounds
                    << "' applies to ranked tensors, not " << type;
    auto bounds = dyn_cast<DenseI64ArrayAttr>(value);
    if (!bounds || bounds.size() != tensor.getRank())
      return emit() << "'" << attr::kBounds
                    << "' must be an array<i64> with one bound per dimension ("
                    << tensor.getRank() << " for " << type << ")";
    for (int64_t d = 0; d < tensor.getRank(); ++d) {
      if (!tensor.isDynamicDim(d) && bounds[d] != tensor.getDimSize(d))
        return emit() << "'" << attr::kBounds << "' gives " << bounds[d]
                      << " for dimension " << d << ", whose size is "
                      << tensor.getDimSize(d);
      if (tensor.isDynamicDim(d) && bounds[d] < 1)
        return emit() << "'" << attr::kBounds << "' gives " << bounds[d]
                      << " for dynamic dimension " << d
                      << "; a bound is at least 1";
    }
    return success();
  }

  LogicalResult verifyDims(Attribute value) {
    if (failed(verifyDimsShape(type, value, [&] { return emit(); })))
      return failure();
    auto tensor = cast<RankedTensorType>(type);
    auto dims = cast<ArrayAttr>(value);
    auto bounds = argAttr<DenseI64ArrayAttr>(attr::kBounds);
    if (!bounds)
      return emit() << "'" << attr::kDims << "' needs '" << attr::kBounds
                    << "' on the same argument";
    if (bounds.size() != tensor.getRank())
      return success(); // a malformed hkt.bounds is reported on its own
    // A symbol has one bound in the function.
    for (int64_t d = 0; d < tensor.getRank(); ++d) {
      StringRef symbol = cast<StringAttr>(dims[d]).getValue();
      if (symbol.empty())
        continue;
      for (unsigned other = 0; other < fn.getNumArguments(); ++other) {
        std::optional<int64_t> bound = symbolBound(fn, other, symbol);
        if (bound && *bound != bounds[d])
          return emit() << "symbol '" << symbol << "' has bound " << bounds[d]
                        << " in dimension " << d << " but bound " << *bound
                        << " on argument #" << other;
      }
    }
    return success();
  }
};

/// Checks the attributes of result `index` of `fn`.
class ResultAttrVerifier {
public:
  ResultAttrVerifier(FunctionOpInterface fn, unsigned index)
      : fn(fn), index(index) {}

  LogicalResult verify(NamedAttribute named) {
    StringRef name = named.getName().getValue();
    Attribute value = named.getValue();
    if (name == attr::kName) {
      auto str = dyn_cast<StringAttr>(value);
      if (!str || str.getValue().empty())
        return emit() << "'" << attr::kName << "' must be a non-empty string";
      if (fn.getResultAttr(index, attr::kInOut))
        return emit() << "an in-out result takes the name of its argument: "
                      << "drop '" << attr::kName << "'";
      return success();
    }
    if (name == attr::kInOut)
      return verifyInOut(value);
    if (name == attr::kDims)
      return verifyDims(value);
    if (llvm::is_contained(kArgAttrs, name))
      return emit() << "'" << name << "' applies to arguments, not results";
    return emit() << "unknown result attribute '" << name
                  << "' (known: " << knownList(kResultAttrs) << ")";
  }

private:
  FunctionOpInterface fn;
  unsigned index;

  InFlightDiagnostic emit() {
    return fn->emitError() << "result #" << index << ": ";
  }

  /// A result's dynamic dimensions take their sizes from the arguments
  /// (the caller allocates the results): each names a symbol that an
  /// argument's `hkt.dims` defines.
  LogicalResult verifyDims(Attribute value) {
    Type type = fn.getResultTypes()[index];
    if (failed(verifyDimsShape(type, value, [&] { return emit(); })))
      return failure();
    auto tensor = cast<RankedTensorType>(type);
    auto dims = cast<ArrayAttr>(value);
    for (int64_t d = 0; d < tensor.getRank(); ++d) {
      StringRef symbol = cast<StringAttr>(dims[d]).getValue();
      if (symbol.empty())
        continue;
      bool defined = false;
      for (unsigned arg = 0; arg < fn.getNumArguments() && !defined; ++arg)
        defined = symbolBound(fn, arg, symbol).has_value();
      if (!defined)
        return emit() << "'" << attr::kDims << "' gives dimension " << d
                      << " the symbol '" << symbol
                      << "', which no argument's '" << attr::kDims
                      << "' defines (a result's sizes come from the "
                         "arguments)";
    }
    return success();
  }

  LogicalResult verifyInOut(Attribute value) {
    auto inOut = dyn_cast<IntegerAttr>(value);
    if (!inOut || !inOut.getType().isInteger())
      return emit() << "'" << attr::kInOut
                    << "' must be an integer: the index of the in-out "
                       "argument whose new value this result is";
    int64_t arg = inOut.getInt();
    if (arg < 0 || arg >= fn.getNumArguments())
      return emit() << "'" << attr::kInOut << "' = " << arg
                    << " is not an argument index (the function has "
                    << fn.getNumArguments() << " arguments)";
    Type argType = fn.getArgumentTypes()[arg];
    Type resultType = fn.getResultTypes()[index];
    if (argType != resultType)
      return emit() << "'" << attr::kInOut << "' = " << arg
                    << ": the result's type " << resultType
                    << " differs from the argument's " << argType;
    auto r = fn.getArgAttrOfType<StringAttr>(arg, attr::kRole);
    if (!r || r.getValue() != role::kInOut)
      return emit() << "'" << attr::kInOut << "' = " << arg
                    << " names argument #" << arg << ", which needs '"
                    << attr::kRole << "' = \"" << role::kInOut << "\"";
    for (unsigned i = 0; i < index; ++i)
      if (auto other = fn.getResultAttrOfType<IntegerAttr>(i, attr::kInOut);
          other && other.getInt() == arg)
        return emit() << "results #" << i << " and #" << index
                      << " both carry '" << attr::kInOut << "' = " << arg;
    return success();
  }
};
} // namespace

LogicalResult HKTDialect::verifyRegionArgAttribute(Operation *op,
                                                   unsigned regionIndex,
                                                   unsigned argIndex,
                                                   NamedAttribute attribute) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn || regionIndex != 0)
    return op->emitError() << "'" << attribute.getName().getValue()
                           << "' applies to function arguments only";
  return ArgAttrVerifier(fn, argIndex).verify(attribute);
}

LogicalResult
HKTDialect::verifyRegionResultAttribute(Operation *op, unsigned regionIndex,
                                        unsigned resultIndex,
                                        NamedAttribute attribute) {
  auto fn = dyn_cast<FunctionOpInterface>(op);
  if (!fn || regionIndex != 0)
    return op->emitError() << "'" << attribute.getName().getValue()
                           << "' applies to function results only";
  return ResultAttrVerifier(fn, resultIndex).verify(attribute);
}
