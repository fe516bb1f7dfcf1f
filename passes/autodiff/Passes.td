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

#endif // HKT_PASSES_AUTODIFF_PASSES_TD
