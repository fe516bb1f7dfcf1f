// RUN: hkt-opt %s --split-input-file --hkt-differentiate | FileCheck %s
// The gradient IR of each op (its adjoint, AdjointOpInterface) and of a whole
// layer; the numbers are checked in test/Integration/gradients.test.

// SPEC Backward, level scores: dQ = dS K / sqrt(d), dK = dS^T Q / sqrt(d).
// CHECK-LABEL: func.func @scores_grad
// CHECK-SAME: (%[[Q:.+]]: tensor<1x4x4xf32> {hkt.name = "q"}, %[[K:.+]]: tensor<1x4x4xf32> {hkt.name = "k"}, %[[DS:.+]]: tensor<1x2x4x4xf32> {hkt.name = "ds"})
// CHECK-SAME: -> (tensor<1x4x4xf32> {hkt.name = "dq"}, tensor<1x4x4xf32> {hkt.name = "dk"})
// CHECK-NOT: hkt.level_scores
// CHECK: %[[SCALE:.+]] = arith.constant 0.7071067
// CHECK: %[[SCALED:.+]] = linalg.generic {{.*}} ins(%[[DS]] : tensor<1x2x4x4xf32>)
// CHECK: arith.mulf %{{.*}}, %[[SCALE]]
// CHECK: %[[DQ:.+]] = hkt.attend ins(%[[SCALED]], %[[K]] : tensor<1x2x4x4xf32>, tensor<1x4x4xf32>)
// CHECK: %[[T:.+]] = linalg.transpose ins(%[[SCALED]] : tensor<1x2x4x4xf32>) outs(%{{.*}} : tensor<1x2x4x4xf32>) permutation = [0, 1, 3, 2]
// CHECK: %[[DK:.+]] = hkt.attend ins(%[[T]], %[[Q]] : tensor<1x2x4x4xf32>, tensor<1x4x4xf32>)
// CHECK: return %[[DQ]], %[[DK]]
func.func @scores(%q: tensor<1x4x4xf32> {hkt.name = "q"}, %k: tensor<1x4x4xf32> {hkt.name = "k"})
    -> (tensor<1x2x4x4xf32> {hkt.name = "s"}) {
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %s = hkt.level_scores ins(%q, %k : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%e : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %s : tensor<1x2x4x4xf32>
}

// -----

// A V: dP = dO V^T per head (level_scores, times sqrt(d)), dV = P^T dO.
// CHECK-LABEL: func.func @attend_grad
// CHECK-SAME: (%[[P:.+]]: tensor<1x2x4x4xf32>, %[[V:.+]]: tensor<1x4x4xf32>, %[[DO:.+]]: tensor<1x4x4xf32> {hkt.name = "dresult0"})
// CHECK-SAME: -> (tensor<1x2x4x4xf32> {hkt.name = "darg0"}, tensor<1x4x4xf32> {hkt.name = "darg1"})
// CHECK: %[[DPS:.+]] = hkt.level_scores ins(%[[DO]], %[[V]] : tensor<1x4x4xf32>, tensor<1x4x4xf32>)
// CHECK: arith.constant 1.414213
// CHECK: %[[DP:.+]] = linalg.generic {{.*}} ins(%[[DPS]]
// CHECK: %[[PT:.+]] = linalg.transpose ins(%[[P]]
// CHECK: %[[DV:.+]] = hkt.attend ins(%[[PT]], %[[DO]]
// CHECK: return %[[DP]], %[[DV]]
func.func @attend(%p: tensor<1x2x4x4xf32>, %v: tensor<1x4x4xf32>) -> tensor<1x4x4xf32> {
  %e = tensor.empty() : tensor<1x4x4xf32>
  %a = hkt.attend ins(%p, %v : tensor<1x2x4x4xf32>, tensor<1x4x4xf32>) outs(%e : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %a : tensor<1x4x4xf32>
}

// -----

// Upsampling by 2 of a 3 x 3 block to 5 x 5: the gradient is the block sums
// of dU (zero-padded to 6 x 6, split into 2 x 2 blocks, reduced).
// CHECK-LABEL: func.func @upsample_grad
// CHECK: %[[Z:.+]] = linalg.fill {{.*}} -> tensor<1x1x6x6xf32>
// CHECK: %[[PAD:.+]] = tensor.insert_slice %{{.*}} into %[[Z]][0, 0, 0, 0] [1, 1, 5, 5] [1, 1, 1, 1] : tensor<1x1x5x5xf32> into tensor<1x1x6x6xf32>
// CHECK: %[[BLK:.+]] = tensor.expand_shape %[[PAD]] {{\[\[}}0], [1], [2, 3], [4, 5]] {{.*}} : tensor<1x1x6x6xf32> into tensor<1x1x3x2x3x2xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction", "parallel", "reduction"]} ins(%[[BLK]] : tensor<1x1x3x2x3x2xf32>) outs(%{{.*}} : tensor<1x1x3x3xf32>)
func.func @upsample(%s: tensor<1x1x3x3xf32>) -> tensor<1x1x5x5xf32> {
  %e = tensor.empty() : tensor<1x1x5x5xf32>
  %u = hkt.upsample ins(%s : tensor<1x1x3x3xf32>) outs(%e : tensor<1x1x5x5xf32>) factor = 2 -> tensor<1x1x5x5xf32>
  return %u : tensor<1x1x5x5xf32>
}

// -----

// Convex fusion: dS_l = lambda[h, l] dF, dlambda by reduction, dtheta through
// the softmax of theta.
// CHECK-LABEL: func.func @fuse_grad
// CHECK-SAME: -> (tensor<1x2x4x4xf32> {hkt.name = "darg0"}, tensor<1x2x4x4xf32> {hkt.name = "darg1"}, tensor<2x2xf32> {hkt.name = "darg2"})
// CHECK: %[[LAM:.+]] = linalg.softmax dimension(1) ins(%{{.*}} : tensor<2x2xf32>)
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel"]} ins(%[[LAM]], %{{.*}} : tensor<2x2xf32>, tensor<1x2x4x4xf32>)
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "parallel", "reduction", "reduction"]} {{.*}} outs(%{{.*}} : tensor<2xf32>)
// CHECK: tensor.insert_slice %{{.*}}[0, 0] [2, 1] [1, 1] : tensor<2xf32> into tensor<2x2xf32>
// CHECK: tensor.insert_slice %{{.*}}[0, 1] [2, 1] [1, 1] : tensor<2xf32> into tensor<2x2xf32>
// CHECK: %[[DTHETA:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2xf32>)
// CHECK: return %{{.*}}, %{{.*}}, %[[DTHETA]]
func.func @fuse(%s0: tensor<1x2x4x4xf32>, %s1: tensor<1x2x4x4xf32>, %theta: tensor<2x2xf32>) -> tensor<1x2x4x4xf32> {
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %f = hkt.convex_fuse ins(%s0, %s1 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) theta(%theta : tensor<2x2xf32>) outs(%e : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %f : tensor<1x2x4x4xf32>
}

// -----

// Masks and softmax: masked scores get no gradient, key lengths (integers)
// get none at all; softmax: dX = P (dP - rowsum(dP P)).
// CHECK-LABEL: func.func @mask_softmax_grad
// CHECK-SAME: (%{{.*}}: tensor<1x1x4x4xf32>, %[[LEN:.+]]: tensor<1xi32>, %{{.*}}: tensor<1x1x4x4xf32> {hkt.name = "dresult0"}) -> (tensor<1x1x4x4xf32> {hkt.name = "darg0"})
// CHECK: %[[P:.+]] = linalg.softmax dimension(3)
// CHECK: %[[DOT:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %[[P]] : {{.*}}) outs(%{{.*}} : tensor<1x1x4xf32>)
// CHECK: %[[DX:.+]] = linalg.generic {{.*}} ins(%[[P]], %{{.*}}, %[[DOT]] :
// CHECK: linalg.generic {{.*}} ins(%[[DX]], %[[LEN]] : tensor<1x1x4x4xf32>, tensor<1xi32>)
// CHECK: linalg.index 2
// CHECK: linalg.index 3
// CHECK: arith.cmpi sge
// CHECK: arith.cmpi sgt
// CHECK: arith.select
func.func @mask_softmax(%s: tensor<1x1x4x4xf32>, %len: tensor<1xi32>) -> tensor<1x1x4x4xf32> {
  %e = tensor.empty() : tensor<1x1x4x4xf32>
  %m = hkt.mask ins(%s : tensor<1x1x4x4xf32>) lengths(%len : tensor<1xi32>) outs(%e : tensor<1x1x4x4xf32>) {causal = true} -> tensor<1x1x4x4xf32>
  %p = linalg.softmax dimension(3) ins(%m : tensor<1x1x4x4xf32>) outs(%e : tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %p : tensor<1x1x4x4xf32>
}

// -----

// Downsampling by 2 with 3 taps: dbias and dw by reduction, dx through the
// gradient spread to every second position.
// CHECK-LABEL: func.func @downsample_grad
// CHECK-SAME: -> (tensor<1x5x2xf32> {hkt.name = "darg0"}, tensor<2x3xf32> {hkt.name = "darg1"}, tensor<2xf32> {hkt.name = "darg2"})
// CHECK: %[[DB:.+]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction", "parallel"]} {{.*}} outs(%{{.*}} : tensor<2xf32>)
// CHECK: %[[DWT:.+]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction", "parallel", "parallel"]} {{.*}} outs(%{{.*}} : tensor<3x2xf32>)
// CHECK: %[[DW:.+]] = linalg.transpose ins(%[[DWT]] : tensor<3x2xf32>) outs(%{{.*}} : tensor<2x3xf32>) permutation = [1, 0]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0, 0] [1, 3, 1, 2] [1, 1, 1, 1] : tensor<1x3x2xf32> into tensor<1x4x2x2xf32>
// CHECK: tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3]] : tensor<1x4x2x2xf32> into tensor<1x8x2xf32>
// CHECK: %[[DX:.+]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<1x5x2xf32>)
// CHECK: return %[[DX]], %[[DW]], %[[DB]]
func.func @downsample(%x: tensor<1x5x2xf32>, %w: tensor<2x3xf32>, %b: tensor<2xf32>) -> tensor<1x3x2xf32> {
  %e = tensor.empty() : tensor<1x3x2xf32>
  %y = hkt.downsample ins(%x, %w, %b : tensor<1x5x2xf32>, tensor<2x3xf32>, tensor<2xf32>) outs(%e : tensor<1x3x2xf32>) stride = 2 -> tensor<1x3x2xf32>
  return %y : tensor<1x3x2xf32>
}

// -----

// The hybrid head: the convolution branch is recomputed; gradients of attn,
// value (convolution branch), conv_u and gamma.
// CHECK-LABEL: func.func @hybrid_grad
// CHECK-SAME: -> (tensor<1x4x4xf32> {hkt.name = "darg0"}, tensor<1x4x4xf32> {hkt.name = "darg1"}, tensor<4x2xf32> {hkt.name = "darg2"}, tensor<2xf32> {hkt.name = "darg3"})
// CHECK: math.exp
// CHECK: tensor.expand_shape {{.*}} : tensor<1x4x4xf32> into tensor<1x4x2x2xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["reduction", "reduction", "parallel", "reduction"]} {{.*}} outs(%{{.*}} : tensor<2xf32>)
// CHECK: %[[DUT:.+]] = linalg.generic {{.*}} iterator_types = ["reduction", "reduction", "parallel", "parallel"]} {{.*}} outs(%{{.*}} : tensor<2x4xf32>)
// CHECK: linalg.transpose ins(%[[DUT]] : tensor<2x4xf32>) outs(%{{.*}} : tensor<4x2xf32>) permutation = [1, 0]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0, 0] [1, 4, 4] [1, 1, 1] : tensor<1x4x4xf32> into tensor<1x5x4xf32>
func.func @hybrid(%a: tensor<1x4x4xf32>, %v: tensor<1x4x4xf32>, %u: tensor<4x2xf32>, %g: tensor<2xf32>) -> tensor<1x4x4xf32> {
  %e = tensor.empty() : tensor<1x4x4xf32>
  %o = hkt.hybrid ins(%a, %v, %u, %g : tensor<1x4x4xf32>, tensor<1x4x4xf32>, tensor<4x2xf32>, tensor<2xf32>) outs(%e : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %o : tensor<1x4x4xf32>
}

// -----

// Matmul (accumulating into its destination, whose producer, a fill, takes
// nothing further) and reshapes: dA = dC B^T, dB = A^T dC through the views,
// as matmuls on transposed copies (what the CPU codegen vectorises).
// CHECK-LABEL: func.func @project_grad
// CHECK-SAME: (%[[X:.+]]: tensor<2x3x4xf32>, %[[W:.+]]: tensor<4x5xf32>, %[[DY:.+]]: tensor<2x3x5xf32> {hkt.name = "dresult0"})
// CHECK: %[[DC:.+]] = tensor.collapse_shape %[[DY]] {{\[\[}}0, 1], [2]] : tensor<2x3x5xf32> into tensor<6x5xf32>
// CHECK: %[[WT:.+]] = linalg.transpose ins(%[[W]] : tensor<4x5xf32>) outs(%{{.*}} : tensor<5x4xf32>) permutation = [1, 0]
// CHECK: %[[DA:.+]] = linalg.matmul ins(%[[DC]], %[[WT]] : tensor<6x5xf32>, tensor<5x4xf32>) outs(%{{.*}} : tensor<6x4xf32>)
// CHECK: %[[XT:.+]] = linalg.transpose ins(%{{.*}} : tensor<6x4xf32>) outs(%{{.*}} : tensor<4x6xf32>) permutation = [1, 0]
// CHECK: %[[DW:.+]] = linalg.matmul ins(%[[XT]], %[[DC]] : tensor<4x6xf32>, tensor<6x5xf32>) outs(%{{.*}} : tensor<4x5xf32>)
// CHECK: %[[DX:.+]] = tensor.expand_shape %[[DA]] {{\[\[}}0, 1], [2]] output_shape [2, 3, 4] : tensor<6x4xf32> into tensor<2x3x4xf32>
// CHECK: return %[[DX]], %[[DW]]
func.func @project(%x: tensor<2x3x4xf32>, %w: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %zero = arith.constant 0.0 : f32
  %x2 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
  %e = tensor.empty() : tensor<6x5xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x5xf32>) -> tensor<6x5xf32>
  %m = linalg.matmul ins(%x2, %w : tensor<6x4xf32>, tensor<4x5xf32>) outs(%c : tensor<6x5xf32>) -> tensor<6x5xf32>
  %y = tensor.expand_shape %m [[0, 1], [2]] output_shape [2, 3, 5] : tensor<6x5xf32> into tensor<2x3x5xf32>
  return %y : tensor<2x3x5xf32>
}

// -----

// A value used twice: its gradients are summed.
// CHECK-LABEL: func.func @twice_grad
// CHECK: %[[G:.+]] = linalg.add ins(%{{.*}}, %{{.*}} : tensor<2x2xf32>, tensor<2x2xf32>)
// CHECK: return %[[G]]
func.func @twice(%a: tensor<2x2xf32>) -> tensor<2x2xf32> {
  %e = tensor.empty() : tensor<2x2xf32>
  %s = linalg.add ins(%a, %a : tensor<2x2xf32>, tensor<2x2xf32>) outs(%e : tensor<2x2xf32>) -> tensor<2x2xf32>
  return %s : tensor<2x2xf32>
}

// -----

// A gradient reaching a value by several paths is summed without a
// whole-tensor add where the adjoints allow: dX = dY1 W1^T + dY2 W2^T is one
// matmul accumulating into the other's result.
// CHECK-LABEL: func.func @two_products_grad
// CHECK-SAME: (%[[X:[^:]+]]: tensor<6x4xf32>, %{{[^:]+}}: tensor<4x5xf32>, %{{[^:]+}}: tensor<4x5xf32>, %[[DY1:[^:]+]]: tensor<6x5xf32> {hkt.name = "dresult0"}, %[[DY2:[^:]+]]: tensor<6x5xf32> {hkt.name = "dresult1"})
// CHECK: %[[DX2:.+]] = linalg.matmul ins(%[[DY2]], %{{.+}} : tensor<6x5xf32>, tensor<5x4xf32>) outs(%{{.+}} : tensor<6x4xf32>)
// CHECK: %[[DX:.+]] = linalg.matmul ins(%[[DY1]], %{{.+}} : tensor<6x5xf32>, tensor<5x4xf32>) outs(%[[DX2]] : tensor<6x4xf32>)
// CHECK-NOT: linalg.add ins({{.*}}tensor<6x4xf32>
// CHECK: return %[[DX]],
func.func @two_products(%x: tensor<6x4xf32>, %w1: tensor<4x5xf32>, %w2: tensor<4x5xf32>) -> (tensor<6x5xf32>, tensor<6x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x5xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x5xf32>) -> tensor<6x5xf32>
  %m1 = linalg.matmul ins(%x, %w1 : tensor<6x4xf32>, tensor<4x5xf32>) outs(%c : tensor<6x5xf32>) -> tensor<6x5xf32>
  %m2 = linalg.matmul ins(%x, %w2 : tensor<6x4xf32>, tensor<4x5xf32>) outs(%c : tensor<6x5xf32>) -> tensor<6x5xf32>
  return %m1, %m2 : tensor<6x5xf32>, tensor<6x5xf32>
}

// -----

// A stacked weight (one slice per level): each slice's gradient is inserted
// into one zero-filled tensor, where it is zero; a slice read twice is
// added to in place (the slice only).
// CHECK-LABEL: func.func @stacked_grad
// CHECK: %[[DW2:.+]] = linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x6xf32>, tensor<6x5xf32>)
// CHECK: %[[DW2B:.+]] = linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x6xf32>, tensor<6x5xf32>)
// CHECK: %[[DW0:.+]] = linalg.matmul ins(%{{.+}}, %{{.+}} : tensor<4x6xf32>, tensor<6x5xf32>)
// CHECK: %[[Z:.+]] = linalg.fill ins(%{{.+}} : f32) outs(%{{.+}} : tensor<3x4x5xf32>)
// CHECK: %[[I2:.+]] = tensor.insert_slice %[[DW2]] into %[[Z]][2, 0, 0] [1, 4, 5] [1, 1, 1]
// CHECK: %[[PART:.+]] = tensor.extract_slice %[[I2]][2, 0, 0] [1, 4, 5] [1, 1, 1]
// CHECK: %[[SUM:.+]] = linalg.add ins(%[[PART]], %[[DW2B]] : tensor<4x5xf32>, tensor<4x5xf32>) outs(%[[PART]] : tensor<4x5xf32>)
// CHECK: %[[I2B:.+]] = tensor.insert_slice %[[SUM]] into %[[I2]][2, 0, 0] [1, 4, 5] [1, 1, 1]
// CHECK: %[[DW:.+]] = tensor.insert_slice %[[DW0]] into %[[I2B]][0, 0, 0] [1, 4, 5] [1, 1, 1]
// CHECK-NOT: linalg.add ins({{.*}}tensor<3x4x5xf32>
// CHECK: return %{{.+}}, %[[DW]]
func.func @stacked(%x: tensor<6x4xf32>, %w: tensor<3x4x5xf32>) -> (tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<6x5xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<6x5xf32>) -> tensor<6x5xf32>
  %w0 = tensor.extract_slice %w[0, 0, 0] [1, 4, 5] [1, 1, 1] : tensor<3x4x5xf32> to tensor<4x5xf32>
  %w2 = tensor.extract_slice %w[2, 0, 0] [1, 4, 5] [1, 1, 1] : tensor<3x4x5xf32> to tensor<4x5xf32>
  %w2b = tensor.extract_slice %w[2, 0, 0] [1, 4, 5] [1, 1, 1] : tensor<3x4x5xf32> to tensor<4x5xf32>
  %m0 = linalg.matmul ins(%x, %w0 : tensor<6x4xf32>, tensor<4x5xf32>) outs(%c : tensor<6x5xf32>) -> tensor<6x5xf32>
  %m2 = linalg.matmul ins(%x, %w2 : tensor<6x4xf32>, tensor<4x5xf32>) outs(%c : tensor<6x5xf32>) -> tensor<6x5xf32>
  %m3 = linalg.matmul ins(%x, %w2b : tensor<6x4xf32>, tensor<4x5xf32>) outs(%c : tensor<6x5xf32>) -> tensor<6x5xf32>
  return %m0, %m2, %m3 : tensor<6x5xf32>, tensor<6x5xf32>, tensor<6x5xf32>
}

// -----

// The whole layer: hkt.attention has no adjoint of its own, so it is
// decomposed into its SPEC steps, each of which has one. Key lengths get no
// gradient; every parameter does, in argument order.
// CHECK-LABEL: func.func @layer_grad
// CHECK-SAME: %{{.*}}: tensor<2xi32> {hkt.name = "lengths"}, %[[DY:.+]]: tensor<2x8x4xf32> {hkt.name = "dy"})
// CHECK-SAME: -> (tensor<2x8x4xf32> {hkt.name = "dx"}, tensor<2x4x4xf32> {hkt.name = "dwq"}, tensor<2x4x4xf32> {hkt.name = "dwk"}, tensor<4x4xf32> {hkt.name = "dwv"}, tensor<4x4xf32> {hkt.name = "dwo"}, tensor<1x4x3xf32> {hkt.name = "ddown_w"}, tensor<1x4xf32> {hkt.name = "ddown_b"}, tensor<2x2xf32> {hkt.name = "dtheta"}, tensor<4x3xf32> {hkt.name = "dconv_u"}, tensor<2xf32> {hkt.name = "dgamma"})
// CHECK-NOT: hkt.attention
// CHECK: hkt.downsample
// CHECK: hkt.convex_fuse
// CHECK: hkt.hybrid
// The adjoints, in reverse order.
// CHECK: hkt.level_scores
// CHECK: hkt.attend
// CHECK: linalg.softmax dimension(1)
// CHECK: return
func.func @layer(%x: tensor<2x8x4xf32> {hkt.name = "x"},
                 %wq: tensor<2x4x4xf32> {hkt.name = "wq", hkt.role = "parameter"},
                 %wk: tensor<2x4x4xf32> {hkt.name = "wk", hkt.role = "parameter"},
                 %wv: tensor<4x4xf32> {hkt.name = "wv", hkt.role = "parameter"},
                 %wo: tensor<4x4xf32> {hkt.name = "wo", hkt.role = "parameter"},
                 %dw: tensor<1x4x3xf32> {hkt.name = "down_w", hkt.role = "parameter"},
                 %db: tensor<1x4xf32> {hkt.name = "down_b", hkt.role = "parameter"},
                 %theta: tensor<2x2xf32> {hkt.name = "theta", hkt.role = "parameter"},
                 %u: tensor<4x3xf32> {hkt.name = "conv_u", hkt.role = "parameter"},
                 %g: tensor<2xf32> {hkt.name = "gamma", hkt.role = "parameter"},
                 %len: tensor<2xi32> {hkt.name = "lengths"})
    -> (tensor<2x8x4xf32> {hkt.name = "y"}) {
  %e = tensor.empty() : tensor<2x8x4xf32>
  %y = hkt.attention ins(%x, %wq, %wk, %wv, %wo, %theta : tensor<2x8x4xf32>, tensor<2x4x4xf32>, tensor<2x4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<2x2xf32>)
         downsample(%dw, %db : tensor<1x4x3xf32>, tensor<1x4xf32>)
         conv(%u, %g : tensor<4x3xf32>, tensor<2xf32>)
         lengths(%len : tensor<2xi32>)
         outs(%e : tensor<2x8x4xf32>) {causal = true, heads = 2 : i64, hybrid = true, levels = 2 : i64} -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

// The model ops: tokens, labels and the integer lengths get no gradient; the
// table, the positions and LayerNorm's weight and bias do. The loss's adjoint
// comes first (softmax - one-hot, times dloss / B), the embedding's last.
// CHECK-LABEL: func.func @model_ops_grad
// CHECK-SAME: %[[DL:[a-z0-9]+]]: tensor<f32> {hkt.name = "dresult0"}) -> (tensor<16x4xf32> {hkt.name = "darg1"}, tensor<32x4xf32> {hkt.name = "darg2"}, tensor<4xf32> {hkt.name = "darg3"}, tensor<4xf32> {hkt.name = "darg4"})
// CHECK: hkt.token_lengths
// CHECK: hkt.mean_pool
// CHECK: arith.constant 5.000000e-01 : f32
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}, %{{.*}}, %[[DL]] : tensor<2x4xf32>, tensor<2xf32>, tensor<2xi32>, tensor<f32>)
// CHECK: arith.select
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction", "reduction"]} ins(%{{.*}}, %{{.*}} : tensor<2x8xi32>, tensor<2x8x4xf32>) outs(%{{.*}} : tensor<16x4xf32>)
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [8, 4] [1, 1] : tensor<8x4xf32> into tensor<32x4xf32>
func.func @model_ops(%tok: tensor<2x8xi32>, %table: tensor<16x4xf32>, %pos: tensor<32x4xf32>, %w: tensor<4xf32>, %b: tensor<4xf32>, %labels: tensor<2xi32>) -> tensor<f32> {
  %li = tensor.empty() : tensor<2xi32>
  %len = hkt.token_lengths ins(%tok : tensor<2x8xi32>) outs(%li : tensor<2xi32>) -> tensor<2xi32>
  %e = tensor.empty() : tensor<2x8x4xf32>
  %x = hkt.embed ins(%tok, %table, %pos : tensor<2x8xi32>, tensor<16x4xf32>, tensor<32x4xf32>) outs(%e : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %n = hkt.layer_norm ins(%x, %w, %b : tensor<2x8x4xf32>, tensor<4xf32>, tensor<4xf32>) outs(%e : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %g = hkt.gelu ins(%n : tensor<2x8x4xf32>) outs(%e : tensor<2x8x4xf32>) -> tensor<2x8x4xf32>
  %pe = tensor.empty() : tensor<2x4xf32>
  %p = hkt.mean_pool ins(%g : tensor<2x8x4xf32>) lengths(%len : tensor<2xi32>) outs(%pe : tensor<2x4xf32>) -> tensor<2x4xf32>
  %le = tensor.empty() : tensor<f32>
  %l = hkt.cross_entropy ins(%p, %labels : tensor<2x4xf32>, tensor<2xi32>) outs(%le : tensor<f32>) -> tensor<f32>
  return %l : tensor<f32>
}

// -----

// The fused attention (what hkt-fuse makes of SPEC 3-6): its adjoint is the
// FlashAttention-2 backward. delta = per-head row sums of dout * out (the
// lse gets no gradient here, so nothing is subtracted), the scaled queries
// q_l * lambda[h, l] / sqrt(d) recomputed, hkt.online_attention_backward
// from the forward's lse, then dq_l = dsq_l * lambda / sqrt(d) and dlambda
// per level from dsq_l . q_l.
// CHECK-DAG: #[[$HEADROW:.+]] = affine_map<(d0, d1, d2) -> (d0, d2 floordiv 2, d1)>
// CHECK-LABEL: func.func @fused_attention_grad
// CHECK-SAME: (%[[Q0:[^:]+]]: tensor<1x8x4xf32>, %[[Q1:[^:]+]]: tensor<1x4x4xf32>, %[[K0:[^:]+]]: tensor<1x8x4xf32>, %[[K1:[^:]+]]: tensor<1x4x4xf32>, %[[V:[^:]+]]: tensor<1x8x4xf32>, %[[W:[^:]+]]: tensor<2x2xf32>, %[[DY:[^:]+]]: tensor<1x8x4xf32> {hkt.name = "dresult0"})
// CHECK: %[[Y:[^,]+]], %[[LSE:[^ ]+]] = hkt.fused_attention
// CHECK: %[[DELTA:.+]] = linalg.generic {indexing_maps = [#{{.+}}, #{{.+}}, #[[$HEADROW]]], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[DY]], %[[Y]] : tensor<1x8x4xf32>, tensor<1x8x4xf32>) outs(%{{.+}} : tensor<1x2x8xf32>)
// CHECK-NOT: arith.subf
// CHECK: %[[SQ0:.+]] = linalg.generic {{.*}} ins(%[[Q0]], %{{.+}} : tensor<1x8x4xf32>, tensor<4xf32>)
// CHECK: %[[SQ1:.+]] = linalg.generic {{.*}} ins(%[[Q1]], %{{.+}} : tensor<1x4x4xf32>, tensor<4xf32>)
// CHECK: %[[DQ:[^:]+]]:2, %[[DK:[^:]+]]:2, %[[DV:[^ ]+]] = hkt.online_attention_backward ins(%[[SQ0]], %[[SQ1]] : tensor<1x8x4xf32>, tensor<1x4x4xf32>) keys(%[[K0]], %[[K1]] : tensor<1x8x4xf32>, tensor<1x4x4xf32>) values(%[[V]] : tensor<1x8x4xf32>) grads(%[[DY]] : tensor<1x8x4xf32>) stats(%[[LSE]], %[[DELTA]] : tensor<1x2x8xf32>, tensor<1x2x8xf32>)
// CHECK-SAME: {causal = true, factors = array<i64: 1, 2>}
// CHECK: %[[DQ0:.+]] = linalg.generic {{.*}} ins(%[[DQ]]#0, %{{.+}} : tensor<1x8x4xf32>, tensor<4xf32>)
// CHECK: %[[DQ1:.+]] = linalg.generic {{.*}} ins(%[[DQ]]#1, %{{.+}} : tensor<1x4x4xf32>, tensor<4xf32>)
// CHECK: %[[DW0:.+]] = linalg.generic {{.*}} ins(%[[DQ]]#0, %[[Q0]] : tensor<1x8x4xf32>, tensor<1x8x4xf32>) outs(%{{.+}} : tensor<2x2xf32>)
// CHECK: %[[DW:.+]] = linalg.generic {{.*}} ins(%[[DQ]]#1, %[[Q1]] : tensor<1x4x4xf32>, tensor<1x4x4xf32>) outs(%[[DW0]] : tensor<2x2xf32>)
// CHECK: return %[[DQ0]], %[[DQ1]], %[[DK]]#0, %[[DK]]#1, %[[DV]], %[[DW]]
func.func @fused_attention(%q0: tensor<1x8x4xf32>, %q1: tensor<1x4x4xf32>, %k0: tensor<1x8x4xf32>, %k1: tensor<1x4x4xf32>, %v: tensor<1x8x4xf32>, %w: tensor<2x2xf32>) -> tensor<1x8x4xf32> {
  %o = tensor.empty() : tensor<1x8x4xf32>
  %l = tensor.empty() : tensor<1x2x8xf32>
  %y, %lse = hkt.fused_attention ins(%q0, %q1 : tensor<1x8x4xf32>, tensor<1x4x4xf32>) keys(%k0, %k1 : tensor<1x8x4xf32>, tensor<1x4x4xf32>) values(%v : tensor<1x8x4xf32>) weights(%w : tensor<2x2xf32>) outs(%o, %l : tensor<1x8x4xf32>, tensor<1x2x8xf32>) {causal = true, factors = array<i64: 1, 2>} -> tensor<1x8x4xf32>, tensor<1x2x8xf32>
  return %y : tensor<1x8x4xf32>
}

// -----

// When the lse is returned too, its gradient enters delta: delta - dlse.
// CHECK-LABEL: func.func @fused_attention_lse_grad
// CHECK: %[[D:.+]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]}
// CHECK: linalg.generic {{.*}} ins(%[[D]], %{{.+}} : tensor<1x2x8xf32>, tensor<1x2x8xf32>)
// CHECK: arith.subf
// CHECK: hkt.online_attention_backward
func.func @fused_attention_lse(%q0: tensor<1x8x4xf32>, %k0: tensor<1x8x4xf32>, %v: tensor<1x8x4xf32>, %w: tensor<2x1xf32>) -> (tensor<1x8x4xf32>, tensor<1x2x8xf32>) {
  %o = tensor.empty() : tensor<1x8x4xf32>
  %l = tensor.empty() : tensor<1x2x8xf32>
  %y, %lse = hkt.fused_attention ins(%q0 : tensor<1x8x4xf32>) keys(%k0 : tensor<1x8x4xf32>) values(%v : tensor<1x8x4xf32>) weights(%w : tensor<2x1xf32>) outs(%o, %l : tensor<1x8x4xf32>, tensor<1x2x8xf32>) {factors = array<i64: 1>} -> tensor<1x8x4xf32>, tensor<1x2x8xf32>
  return %y, %lse : tensor<1x8x4xf32>, tensor<1x2x8xf32>
}

// -----

// A dynamic sequence length: dy takes y's symbol with x's bound, dx takes
// x's symbol, and every tensor the adjoint builds takes its sizes from the
// values (the spread of dout is ceil((T + k - 1) / s) positions).
// CHECK-LABEL: func.func @dynamic_length_grad
// CHECK-SAME: (%[[X:[^:]+]]: tensor<1x?x4xf32> {hkt.bounds = array<i64: 1, 16, 4>, hkt.dims = ["", "T", ""], hkt.name = "x"}
// CHECK-SAME: %[[DY:[^:]+]]: tensor<1x?x4xf32> {hkt.bounds = array<i64: 1, 16, 4>, hkt.dims = ["", "T", ""], hkt.name = "dy"})
// CHECK-SAME: -> (tensor<1x?x4xf32> {hkt.dims = ["", "T", ""], hkt.name = "dx"}, tensor<4x3xf32> {hkt.name = "dw"}, tensor<4xf32> {hkt.name = "db"})
// CHECK: %[[T:.+]] = tensor.dim %[[X]]
// CHECK: %[[N:.+]] = arith.ceildivui
// CHECK: tensor.empty(%[[N]]) : tensor<1x?x1x4xf32>
// CHECK: tensor.insert_slice %[[DY]] into
func.func @dynamic_length(%x: tensor<1x?x4xf32> {hkt.name = "x", hkt.dims = ["", "T", ""], hkt.bounds = array<i64: 1, 16, 4>}, %w: tensor<4x3xf32> {hkt.name = "w"}, %b: tensor<4xf32> {hkt.name = "b"}) -> (tensor<1x?x4xf32> {hkt.name = "y", hkt.dims = ["", "T", ""]}) {
  %c1 = arith.constant 1 : index
  %t = tensor.dim %x, %c1 : tensor<1x?x4xf32>
  %e = tensor.empty(%t) : tensor<1x?x4xf32>
  %y = hkt.downsample ins(%x, %w, %b : tensor<1x?x4xf32>, tensor<4x3xf32>, tensor<4xf32>) outs(%e : tensor<1x?x4xf32>) stride = 1 -> tensor<1x?x4xf32>
  return %y : tensor<1x?x4xf32>
}

// -----

// A batched entry (hkt.row_function, as hkt-compile --layer --max-batch
// builds one): its row function is differentiated, and the gradient entry
// runs that gradient on each row in order, the rows of the seed in, the
// rows of dp stacked and dv (an argument without the batch) summed.
// CHECK-LABEL: func.func private @attend_row_grad(
// CHECK-LABEL: func.func @attend_rows_grad(
// CHECK-SAME: %[[P:[^:]+]]: tensor<?x2x4x4xf32> {hkt.bounds = array<i64: 8, 2, 4, 4>, hkt.dims = ["B", "", "", ""], hkt.name = "p"}
// CHECK-SAME: %[[V:[^:]+]]: tensor<1x4x4xf32> {hkt.name = "v"}
// CHECK-SAME: %[[DO:[^:]+]]: tensor<?x4x4xf32> {hkt.bounds = array<i64: 8, 4, 4>, hkt.dims = ["B", "", ""], hkt.name = "do"}
// CHECK-SAME: -> (tensor<?x2x4x4xf32> {hkt.dims = ["B", "", "", ""], hkt.name = "dp"}, tensor<1x4x4xf32> {hkt.name = "dv"})
// CHECK-SAME: attributes {hkt.row_function = @attend_row_grad}
// CHECK: %[[B:.+]] = tensor.dim %[[P]], %c0
// CHECK: scf.for %[[R:.+]] = %{{.+}} to %[[B]] step %{{.+}} iter_args(%[[DPS:.+]] = %{{.+}}, %[[DVS:.+]] = %{{.+}})
// CHECK: %[[PR:.+]] = tensor.extract_slice %[[P]][%[[R]], 0, 0, 0] [1, 2, 4, 4]
// CHECK: %[[DOR:.+]] = tensor.extract_slice %[[DO]][%[[R]], 0, 0] [1, 4, 4]
// CHECK: %[[G:.+]]:2 = func.call @attend_row_grad(%[[PR]], %[[V]], %[[DOR]])
// CHECK: tensor.insert_slice %[[G]]#0 into %[[DPS]][%[[R]], 0, 0, 0] [1, 2, 4, 4]
// CHECK: linalg.add ins(%[[G]]#1, %[[DVS]]
// CHECK: } {hkt.row_loop}
func.func private @attend_row(%p: tensor<1x2x4x4xf32> {hkt.name = "p"}, %v: tensor<1x4x4xf32> {hkt.name = "v"})
    -> (tensor<1x4x4xf32> {hkt.name = "o"}) {
  %e = tensor.empty() : tensor<1x4x4xf32>
  %a = hkt.attend ins(%p, %v : tensor<1x2x4x4xf32>, tensor<1x4x4xf32>) outs(%e : tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  return %a : tensor<1x4x4xf32>
}
func.func @attend_rows(%p: tensor<?x2x4x4xf32> {hkt.name = "p", hkt.dims = ["B", "", "", ""], hkt.bounds = array<i64: 8, 2, 4, 4>},
                       %v: tensor<1x4x4xf32> {hkt.name = "v"})
    -> (tensor<?x4x4xf32> {hkt.name = "o", hkt.dims = ["B", "", ""]}) attributes {hkt.row_function = @attend_row} {
  %c0 = arith.constant 0 : index
  %b = tensor.dim %p, %c0 : tensor<?x2x4x4xf32>
  %e = tensor.empty(%b) : tensor<?x4x4xf32>
  return %e : tensor<?x4x4xf32>
}
