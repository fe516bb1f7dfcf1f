//===- Passes.td - differentiation -------------------------*- tablegen -*-===//

#ifndef HKT_PASSES_AUTODIFF_PASSES_TD
#define HKT_PASSES_AUTODIFF_PASSES_TD

include "mlir/Pass/PassBase.td"

def HktDifferentiatePass : Pass<"hkt-differentiate", "::mlir::ModuleOp"> {
  let summary = "Generate the reverse-mode gradient function of hkt functions";
  let description = [{
    For each function named in `functions` (every public function when the
    list is empty), adds `<name>_grad`: the vector-Jacobian product of the
    function. It takes the function's arguments followed by one gradient per
    float tensor result (named `d<result>`: `dy` for a result named `y`), and
    returns the gradient of `sum_r <result_r, d<result_r>>` with respect to
    every float tensor argument, in argument order (named `d<argument>`:
    `dx`, `dwq`, ...). Integer arguments (key lengths) get none.

    The forward body is cloned into the gradient function (everything is
    recomputed), ops that implement no adjoint but `AggregatedOpInterface`
    are decomposed (`hkt.attention` into its SPEC steps), then every op from
    the last to the first builds its adjoint through `AdjointOpInterface`
    (each op its own; the pass knows no op by name), and gradients reaching a
    value more than once are summed with `linalg.add`. The function must be
    one block on ranked tensors of static shape.

    Before:

    ```mlir
    func.func @f(%q: tensor<1x4x2xf32>, %k: tensor<1x4x2xf32>) -> tensor<1x1x4x4xf32> {
      %e = tensor.empty() : tensor<1x1x4x4xf32>
      %s = hkt.level_scores ins(%q, %k : ...) outs(%e : ...) -> tensor<1x1x4x4xf32>
      return %s : tensor<1x1x4x4xf32>
    }
    ```

    After (the gradient function, abridged):

    ```mlir
    func.func @f_grad(%q: ..., %k: ..., %ds: tensor<1x1x4x4xf32> {hkt.name = "dresult0"})
        -> (tensor<1x4x2xf32> {hkt.name = "darg0"}, tensor<1x4x2xf32> {hkt.name = "darg1"}) {
      %s = hkt.level_scores ins(%q, %k : ...) outs(...)
      %scaled = linalg.generic ... // ds / sqrt(d)
      %dq = hkt.attend ins(%scaled, %k : ...) outs(...)
      %t = linalg.transpose ins(%scaled : ...) outs(...) permutation = [0, 1, 3, 2]
      %dk = hkt.attend ins(%t, %q : ...) outs(...)
      return %dq, %dk : ...
    }
    ```
  }];
  let options = [
    ListOption<"functions", "functions", "std::string",
               "Functions to differentiate (default: every public function)">,
    Option<"returnValues", "return-values", "bool", /*default=*/"false",
           "The gradient function also returns the function's results, "
           "first (value and gradient in one call)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::tensor::TensorDialect"];
}

def HktModelTrainingEntriesPass
    : Pass<"hkt-model-training-entries", "::mlir::ModuleOp"> {
  let summary = "Add the model's batched gradient entry and its AdamW train step";
  let description = [{
    Runs after `hkt-differentiate` has built `loss_row_grad` (the gradient
    of the model's private batch-1 loss, with `return-values`). Adds
    `loss_grad(tokens, labels, <parameters>, dloss) -> (loss, d<p>...)`,
    which runs `loss_row_grad` on every row of a batch of dynamic size B in
    [1, max-batch] (each row gets dloss / B, gradients are summed over the
    rows, the loss is their mean), and `train_step(tokens, labels,
    <parameters>, adam.m.<p>..., adam.v.<p>..., lr, beta1, beta2, eps,
    weight_decay, step) -> loss`: one AdamW step on that gradient, the
    parameters and moments updated in place (in-out arguments).

    With `ranks` = N > 0 (`hkt-compile --model --ranks N`), `train_step`
    is one rank's share of a data-parallel step (docs/training.md,
    "Several processes"): it runs `loss_grad` on its own rows with dloss =
    its row count n, so that the gradients are sums over its rows, sums
    them and `[n * loss, n]` over the ranks of `shard.grid
    @data_parallel(shape = N)` (one `shard.all_reduce` of all of them,
    flattened and concatenated; lowered by `convert-shard-to-mpi`), and
    updates with the sums divided by the
    total row count: the step, and the loss it returns, of one process on
    the whole batch, up to the order of the float sums.

    ```mlir
    shard.grid @data_parallel(shape = 2)
    func.func @train_step(...) {
      %rows = ... tensor.dim %tokens, %c0 ...
      %r:N = call @loss_grad(%tokens, %labels, ..., %rows_as_dloss)
      %flat = tensor.concat dim(0) %loss_and_rows, %dw_flat, ... : (...) -> tensor<1036xf32>
      %sum = shard.all_reduce %flat on @data_parallel grid_axes = [0] : tensor<1036xf32> -> tensor<1036xf32>
      ... tensor.extract_slice / expand_shape of %sum; AdamW on each / total rows
    }
    ```
  }];
  let options = [
    Option<"maxBatch", "max-batch", "int64_t",
           /*default=*/"::mlir::hkt::kDefaultMaxBatch",
           "The largest batch the entries take (the bound of B)">,
    Option<"ranks", "ranks", "int64_t", /*default=*/"0",
           "A data-parallel train step for this many ranks (0: one process)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::shard::ShardDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // HKT_PASSES_AUTODIFF_PASSES_TD
