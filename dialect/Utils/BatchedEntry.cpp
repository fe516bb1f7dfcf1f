//===- BatchedEntry.cpp - entries that run a row function per row --------===//
//
// Part of the HKT compiler project.
//
//===----------------------------------------------------------------------===//

#include "dialect/Utils/BatchedEntry.h"
#include "dialect/HKTOps.h"
#include "runtime/ModuleFormat.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::hkt;

namespace attr = ::hkt::format::attr;

namespace {
/// Builds one batched entry (see buildBatchedEntry): its declaration, then a
/// body that runs the rows in parallel, every row on its own (results
/// stacked) or in chunks summed in a fixed order (results summed or
/// averaged), or one row after the other (any mix of the three).
class BatchedEntryBuilder {
public:
  BatchedEntryBuilder(OpBuilder &b, Location loc, func::FuncOp row,
                      ArrayRef<Combine> combine, std::optional<unsigned> seed,
                      ArrayRef<StringRef> rowArgs, RowOrder order)
      : b(b), loc(loc), row(row), rowType(row.getFunctionType()),
        combine(combine), seed(seed), rowArgs(rowArgs), order(order),
        f32(b.getF32Type()) {}

  func::FuncOp build(StringRef name, int64_t maxBatch) {
    declare(name, maxBatch);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(fn.addEntryBlock());
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    for (unsigned i = 0; i < fn.getNumArguments() && !batch; ++i)
      if (isRowArg(i))
        batch = tensor::DimOp::create(b, loc, fn.getArgument(i), c0);
    assert(batch && "a batched entry needs a row argument");
    batchF32 = arith::UIToFPOp::create(
        b, loc, f32,
        arith::IndexCastUIOp::create(b, loc, b.getI64Type(), batch));
    // d loss_row = d loss / B.
    if (seed) {
      Value d = tensor::ExtractOp::create(b, loc, fn.getArgument(*seed));
      rowSeed = tensor::FromElementsOp::create(
          b, loc, RankedTensorType::get({}, f32),
          ValueRange{arith::DivFOp::create(b, loc, d, batchF32)});
    }
    SmallVector<Value> returned;
    if (order == RowOrder::InOrder)
      returned = rowsInOrder();
    else if (llvm::all_of(combine,
                          [](Combine c) { return c == Combine::Rows; }))
      returned = stackRows();
    else
      returned = sumRows();
    func::ReturnOp::create(b, loc, returned);
    fn->setAttr(attr::kRowFunction, FlatSymbolRefAttr::get(row));
    return fn;
  }

private:
  RankedTensorType batched(Type t) {
    auto tensor = cast<RankedTensorType>(t);
    SmallVector<int64_t> shape(tensor.getShape());
    shape[0] = ShapedType::kDynamic;
    return RankedTensorType::get(shape, tensor.getElementType());
  }
  /// The row argument `i`'s dimension symbols (hkt.dims; "" for a static
  /// dimension), with "B" for the batch.
  ArrayAttr symbolsOf(RankedTensorType t, DictionaryAttr rowAttrs) {
    SmallVector<Attribute> symbols(t.getRank(), b.getStringAttr(""));
    if (rowAttrs)
      if (auto dims = rowAttrs.getAs<ArrayAttr>(attr::kDims))
        symbols.assign(dims.begin(), dims.end());
    symbols[0] = b.getStringAttr("B");
    return b.getArrayAttr(symbols);
  }
  /// The bounds of a row argument's dimensions (hkt.bounds, or its static
  /// shape), with `maxBatch` for the batch.
  DenseI64ArrayAttr boundsOf(RankedTensorType t, DictionaryAttr rowAttrs,
                             int64_t maxBatch) {
    SmallVector<int64_t> bounds(t.getShape());
    if (rowAttrs)
      if (auto given = rowAttrs.getAs<DenseI64ArrayAttr>(attr::kBounds))
        bounds.assign(given.asArrayRef().begin(), given.asArrayRef().end());
    bounds[0] = maxBatch;
    return b.getDenseI64ArrayAttr(bounds);
  }
  bool isRowArg(unsigned i) {
    auto n = row.getArgAttrOfType<StringAttr>(i, attr::kName);
    return n && llvm::is_contained(rowArgs, n.getValue());
  }
  /// The size of the entry's dynamic dimension `symbol`, read from an
  /// argument that has it.
  OpFoldResult sizeOf(OpBuilder &nb, Location nloc, StringRef symbol) {
    if (symbol == "B")
      return batch;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (auto dims = fn.getArgAttrOfType<ArrayAttr>(i, attr::kDims))
        for (auto [d, s] : llvm::enumerate(dims))
          if (cast<StringAttr>(s).getValue() == symbol)
            return tensor::getMixedSize(nb, nloc, fn.getArgument(i), d);
    llvm_unreachable("a result's symbol that no argument has");
  }
  /// An empty tensor of the stacked result `i` (B x ...).
  Value stackedInit(OpBuilder &nb, Location nloc, unsigned i) {
    auto t = cast<RankedTensorType>(results[i]);
    auto dims = fn.getResultAttrOfType<ArrayAttr>(i, attr::kDims);
    SmallVector<OpFoldResult> sizes;
    for (int64_t d = 0; d < t.getRank(); ++d)
      sizes.push_back(
          t.isDynamicDim(d)
              ? sizeOf(nb, nloc, cast<StringAttr>(dims[d]).getValue())
              : nb.getIndexAttr(t.getDimSize(d)));
    return tensor::EmptyOp::create(nb, nloc, sizes, t.getElementType());
  }
  /// `value` (a row's 1 x ... result) as row `r` of `into`.
  Value insertRow(OpBuilder &nb, Location nloc, Value value, Value into,
                  Value r) {
    int64_t rank = cast<RankedTensorType>(value.getType()).getRank();
    SmallVector<OpFoldResult> offsets(rank, nb.getIndexAttr(0));
    offsets[0] = r;
    return tensor::InsertSliceOp::create(
        nb, nloc, value, into, offsets, tensor::getMixedSizes(nb, nloc, value),
        SmallVector<OpFoldResult>(rank, nb.getIndexAttr(1)));
  }
  OpFoldResult index(int64_t v) { return b.getIndexAttr(v); }
  Value zerosOf(OpBuilder &nb, Location nloc, RankedTensorType t) {
    Value zero =
        arith::ConstantOp::create(nb, nloc, f32, nb.getF32FloatAttr(0));
    Value empty =
        tensor::EmptyOp::create(nb, nloc, t.getShape(), t.getElementType());
    return linalg::FillOp::create(nb, nloc, zero, empty).getResult(0);
  }

  /// The entry's declaration: row arguments (tokens, labels) and stacked
  /// results get a dynamic batch dimension B with its bound.
  void declare(StringRef name, int64_t maxBatch) {
    MLIRContext *ctx = b.getContext();
    for (auto [i, t] : llvm::enumerate(rowType.getInputs()))
      inputs.push_back(isRowArg(i) ? batched(t) : t);
    for (auto [i, t] : llvm::enumerate(rowType.getResults()))
      results.push_back(combine[i] == Combine::Rows ? batched(t) : t);
    fn = func::FuncOp::create(b, loc, name, b.getFunctionType(inputs, results));
    for (unsigned i = 0; i < inputs.size(); ++i) {
      DictionaryAttr rowAttrs = row.getArgAttrDict(i);
      NamedAttrList attrs(rowAttrs);
      if (isRowArg(i)) {
        auto t = cast<RankedTensorType>(inputs[i]);
        attrs.set(attr::kBounds, boundsOf(t, rowAttrs, maxBatch));
        attrs.set(attr::kDims, symbolsOf(t, rowAttrs));
      }
      fn.setArgAttrs(i, attrs.getDictionary(ctx));
    }
    for (unsigned i = 0; i < results.size(); ++i) {
      NamedAttrList attrs(row.getResultAttrDict(i));
      if (combine[i] == Combine::Rows)
        attrs.set(attr::kDims, symbolsOf(cast<RankedTensorType>(results[i]),
                                         row.getResultAttrDict(i)));
      fn.setResultAttrs(i, attrs.getDictionary(ctx));
    }
  }

  /// Row `r` of the row argument `arg` (rank k + 1 -> 1 x ...); a dynamic
  /// length is the row's own: its tokens before the first padding token (at
  /// least one), which gives the row's valid positions exactly
  /// (BatchedEntry.h).
  Value rowOf(OpBuilder &nb, Location nloc, Value arg, RankedTensorType rowT,
              Value r, bool ownLength) {
    int64_t rank = rowT.getRank();
    SmallVector<OpFoldResult> offsets(rank, nb.getIndexAttr(0));
    offsets[0] = r;
    SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(nb, nloc, arg),
                              strides(rank, nb.getIndexAttr(1));
    sizes[0] = nb.getIndexAttr(1);
    SmallVector<int64_t> wholeShape(
        cast<RankedTensorType>(arg.getType()).getShape());
    wholeShape[0] = 1;
    auto wholeT = RankedTensorType::get(wholeShape, rowT.getElementType());
    Value whole = tensor::ExtractSliceOp::create(nb, nloc, wholeT, arg, offsets,
                                                 sizes, strides);
    if (!ownLength || rowT.hasStaticShape())
      return whole;
    assert(rank == 2 && "a row's own length is the tokens'");
    auto lengthsT = RankedTensorType::get({1}, rowT.getElementType());
    Value lengths = TokenLengthsOp::create(
        nb, nloc, lengthsT, whole,
        tensor::EmptyOp::create(nb, nloc, lengthsT.getShape(),
                                lengthsT.getElementType()));
    Value c0 = arith::ConstantIndexOp::create(nb, nloc, 0);
    Value length = arith::IndexCastUIOp::create(
        nb, nloc, nb.getIndexType(),
        tensor::ExtractOp::create(nb, nloc, lengths, ValueRange{c0}));
    length = arith::MaxUIOp::create(
        nb, nloc, length, arith::ConstantIndexOp::create(nb, nloc, 1));
    SmallVector<OpFoldResult> zeros(rank, nb.getIndexAttr(0));
    SmallVector<OpFoldResult> own = {nb.getIndexAttr(1), length};
    return tensor::ExtractSliceOp::create(nb, nloc, rowT, whole, zeros, own,
                                          strides);
  }

  /// The call of the row function on row `r`.
  func::CallOp callRow(OpBuilder &nb, Location nloc, Value r) {
    SmallVector<Value> args;
    for (auto [i, t] : llvm::enumerate(rowType.getInputs())) {
      Value arg = fn.getArgument(i);
      if (seed && i == *seed)
        args.push_back(rowSeed);
      else if (isRowArg(i))
        args.push_back(rowOf(nb, nloc, arg, cast<RankedTensorType>(t), r,
                             row.getArgAttrOfType<StringAttr>(i, attr::kName) ==
                                 "tokens"));
      else
        args.push_back(arg);
    }
    return func::CallOp::create(nb, nloc, row, args);
  }

  /// Inserts `value` (rank k) at index `at` of dimension 0 of `into` (rank
  /// k + 1, the row or chunk dimension first), in a parallel terminator.
  void insertAt(OpBuilder &nb, Location nloc, Value value, Value into,
                Value at) {
    auto t = cast<RankedTensorType>(value.getType());
    SmallVector<OpFoldResult> offsets(t.getRank() + 1, nb.getIndexAttr(0));
    offsets[0] = at;
    SmallVector<OpFoldResult> sizes = {nb.getIndexAttr(1)};
    for (int64_t d : t.getShape())
      sizes.push_back(nb.getIndexAttr(d));
    SmallVector<OpFoldResult> strides(t.getRank() + 1, nb.getIndexAttr(1));
    tensor::ParallelInsertSliceOp::create(nb, nloc, value, into, offsets, sizes,
                                          strides);
  }

  SmallVector<Value> stackRows() {
    SmallVector<Value> returned;
    // Every row on its own: one parallel loop over the rows, each writing
    // its row of the results (the row's own parallel loops then run on the
    // thread that runs the row).
    SmallVector<Value> inits;
    for (unsigned i = 0; i < results.size(); ++i)
      inits.push_back(stackedInit(b, loc, i));
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
      SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, value),
                                strides(rowT.getRank(), index(1));
      tensor::ParallelInsertSliceOp::create(b, loc, value,
                                            forall.getRegionIterArgs()[i],
                                            offsets, sizes, strides);
    }
    llvm::append_range(returned, forall.getResults());
    return returned;
  }

  /// `acc + value`, into `acc` (a sum over the rows).
  Value accumulate(OpBuilder &nb, Location nloc, Value value, Value acc) {
    return linalg::AddOp::create(nb, nloc, ValueRange{value, acc},
                                 ValueRange{acc})
        .getResult(0);
  }
  /// A scalar sum over the rows divided by B.
  Value meanOverBatch(Value sum) {
    Value total = tensor::ExtractOp::create(b, loc, sum);
    return tensor::FromElementsOp::create(
        b, loc, RankedTensorType::get({}, f32),
        ValueRange{arith::DivFOp::create(b, loc, total, batchF32)});
  }

  /// One row after the other (each row's own parallel loops use every
  /// thread): stacked results row by row, sums and means in row order.
  SmallVector<Value> rowsInOrder() {
    SmallVector<Value> inits;
    for (auto [i, t] : llvm::enumerate(results))
      inits.push_back(combine[i] == Combine::Rows
                          ? stackedInit(b, loc, i)
                          : zerosOf(b, loc, cast<RankedTensorType>(t)));
    Value c0 = arith::ConstantIndexOp::create(b, loc, 0);
    Value c1 = arith::ConstantIndexOp::create(b, loc, 1);
    auto rows = scf::ForOp::create(
        b, loc, c0, batch, c1, inits,
        [&](OpBuilder &nb, Location nloc, Value r, ValueRange acc) {
          auto call = callRow(nb, nloc, r);
          SmallVector<Value> next;
          for (auto [i, value] : llvm::enumerate(call.getResults()))
            next.push_back(combine[i] == Combine::Rows
                               ? insertRow(nb, nloc, value, acc[i], r)
                               : accumulate(nb, nloc, value, acc[i]));
          scf::YieldOp::create(nb, nloc, next);
        });
    rows->setAttr(attr::kRowLoop, b.getUnitAttr());
    SmallVector<Value> returned;
    for (auto [i, result] : llvm::enumerate(rows.getResults()))
      returned.push_back(combine[i] == Combine::Mean ? meanOverBatch(result)
                                                     : Value(result));
    return returned;
  }

  SmallVector<Value> sumRows() {
    SmallVector<Value> returned;
    // Sums over the rows: kRowChunks chunks in parallel, chunk c summing
    // rows c, c + kRowChunks, ... in order, then the chunks summed in order:
    // the same additions whatever the thread count (a resumed run continues
    // bit for bit).
    assert(
        llvm::none_of(combine, [](Combine c) { return c == Combine::Rows; }));
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
        b, loc, ArrayRef<OpFoldResult>{index(kRowChunks)}, inits, std::nullopt);
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
              next.push_back(accumulate(nb, nloc, value, acc[i]));
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
      sum.getDefiningOp()->setAttr(kKernelAttr,
                                   b.getStringAttr("sum_row_chunks"));
      returned.push_back(combine[i] == Combine::Mean ? meanOverBatch(sum)
                                                     : sum);
    }
    return returned;
  }

  OpBuilder &b;
  Location loc;
  func::FuncOp row, fn;
  FunctionType rowType;
  ArrayRef<Combine> combine;
  std::optional<unsigned> seed;
  ArrayRef<StringRef> rowArgs;
  RowOrder order;
  Type f32;
  SmallVector<Type> inputs, results;
  Value batch, batchF32, rowSeed;
};
} // namespace

func::FuncOp mlir::hkt::buildBatchedEntry(
    OpBuilder &b, Location loc, func::FuncOp row, StringRef name,
    int64_t maxBatch, ArrayRef<Combine> combine, std::optional<unsigned> seed,
    ArrayRef<StringRef> rowArgs, RowOrder order) {
  return BatchedEntryBuilder(b, loc, row, combine, seed, rowArgs, order)
      .build(name, maxBatch);
}
