// RUN: hkt-opt %s --split-input-file --verify-diagnostics --hkt-nvvm-lower-bf16-mma | FileCheck %s

// Each row of a bf16 operand becomes one i32 register (a bitcast of its
// pair, lower column in the low half); the accumulator's rows g and g + 8
// are C's registers 0-1 and 2-3; the struct comes back as the vector.
// CHECK-LABEL: func.func @mma
// CHECK-SAME: (%[[A:.+]]: vector<4x2xbf16>, %[[B:.+]]: vector<2x2xbf16>, %[[C:.+]]: vector<2x2xf32>)
// CHECK-DAG: %[[C0:.+]] = vector.extract %[[C]][0, 0]
// CHECK-DAG: %[[C3:.+]] = vector.extract %[[C]][1, 1]
// CHECK-DAG: %[[A0P:.+]] = vector.extract %[[A]][0] : vector<2xbf16> from vector<4x2xbf16>
// CHECK-DAG: %[[A0W:.+]] = vector.bitcast %[[A0P]] : vector<2xbf16> to vector<1xi32>
// CHECK-DAG: %[[A0:.+]] = vector.extract %[[A0W]][0] : i32 from vector<1xi32>
// CHECK-DAG: %[[B1P:.+]] = vector.extract %[[B]][1] : vector<2xbf16> from vector<2x2xbf16>
// CHECK: %[[D:.+]] = nvvm.mma.sync A[%[[A0]], %{{.+}}, %{{.+}}, %{{.+}}] B[%{{.+}}, %{{.+}}] C[%[[C0]], %{{.+}}, %{{.+}}, %[[C3]]]
// CHECK-SAME: layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>
// CHECK-SAME: multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>
// CHECK-SAME: shape = #nvvm.shape<m = 16, n = 8, k = 16>
// CHECK-SAME: (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[D0:.+]] = llvm.extractvalue %[[D]][0]
// CHECK: %[[D3:.+]] = llvm.extractvalue %[[D]][3]
// CHECK: %[[R:.+]] = vector.from_elements %[[D0]], %{{.+}}, %{{.+}}, %[[D3]] : vector<2x2xf32>
// CHECK: return %[[R]]
func.func @mma(%a: vector<4x2xbf16>, %b: vector<2x2xbf16>, %c: vector<2x2xf32>) -> vector<2x2xf32> {
  %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xbf16>, vector<2x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
  return %d : vector<2x2xf32>
}

// -----

// f16 is upstream's (convert-nvgpu-to-nvvm): left alone.
// CHECK-LABEL: func.func @f16
// CHECK: nvgpu.mma.sync
func.func @f16(%a: vector<4x2xf16>, %b: vector<2x2xf16>, %c: vector<2x2xf32>) -> vector<2x2xf32> {
  %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 16]} : (vector<4x2xf16>, vector<2x2xf16>, vector<2x2xf32>) -> vector<2x2xf32>
  return %d : vector<2x2xf32>
}

// -----

// A bf16 shape it does not lower is an error, not a crash later.
func.func @m16n8k8(%a: vector<2x2xbf16>, %b: vector<1x2xbf16>, %c: vector<2x2xf32>) -> vector<2x2xf32> {
  // expected-error @below {{bf16 mma.sync is lowered only as m16n8k16 with f32 accumulators}}
  %d = nvgpu.mma.sync(%a, %b, %c) {mmaShape = [16, 8, 8]} : (vector<2x2xbf16>, vector<1x2xbf16>, vector<2x2xf32>) -> vector<2x2xf32>
  return %d : vector<2x2xf32>
}
