// RUN: hkt-opt %s --split-input-file --verify-diagnostics --hkt-nvvm-lower-online-attention
// RUN: not hkt-opt %s --split-input-file --hkt-nvvm-lower-online-attention="precision=tf32" 2>&1 | FileCheck %s --check-prefix=TF32
// TF32-DAG: error: 'hkt.online_attention' op cannot be lowered for the GPU: tf32 tensor cores need a head width that is a multiple of 16 (got 8); use --precision f32
// TF32-DAG: error: 'hkt.online_attention' op cannot be lowered for the GPU: tf32 tensor cores need query tiles of whole warps and whole coarse rows: level factors up to 9 make them 288 rows; use --precision f32
// TF32-DAG: error: 'hkt.online_attention' op cannot be lowered for the GPU: even tiles of 32 x 16 need {{[0-9]+}} bytes of shared memory, more than the 48 KiB a block has (head width 128); use --precision f32

// What the attention kernel of the NVVM path does not take yet, each with
// the reason.

// The batch and the lengths may be dynamic (hkt-nvvm-lower-online-attention.mlir);
// the columns (heads x head width) size the tiles and the registers.
func.func @dynamic_columns(%q0: tensor<1x?x?xf32>, %k0: tensor<1x?x?xf32>, %v: tensor<1x?x?xf32>, %a: tensor<1x?x?xf32>, %m: tensor<1x1x?xf32>, %s: tensor<1x1x?xf32>) -> tensor<1x?x?xf32> {
  // expected-error @+1 {{cannot be lowered for the GPU: a dynamic number of heads or columns is not supported (the batch and the sequence lengths may be dynamic)}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<1x?x?xf32>) keys(%k0 : tensor<1x?x?xf32>) values(%v : tensor<1x?x?xf32>) outs(%a, %m, %s : tensor<1x?x?xf32>, tensor<1x1x?xf32>, tensor<1x1x?xf32>) {factors = array<i64: 1>} -> tensor<1x?x?xf32>, tensor<1x1x?xf32>, tensor<1x1x?xf32>
  return %acc : tensor<1x?x?xf32>
}

// -----

func.func @double(%q0: tensor<1x64x8xf64>, %k0: tensor<1x64x8xf64>, %v: tensor<1x64x8xf64>, %a: tensor<1x64x8xf64>, %m: tensor<1x1x64xf64>, %s: tensor<1x1x64xf64>) -> tensor<1x64x8xf64> {
  // expected-error @+1 {{only f32 is supported (got 'f64')}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<1x64x8xf64>) keys(%k0 : tensor<1x64x8xf64>) values(%v : tensor<1x64x8xf64>) outs(%a, %m, %s : tensor<1x64x8xf64>, tensor<1x1x64xf64>, tensor<1x1x64xf64>) {factors = array<i64: 1>} -> tensor<1x64x8xf64>, tensor<1x1x64xf64>, tensor<1x1x64xf64>
  return %acc : tensor<1x64x8xf64>
}

// -----

func.func @wide_heads(%q0: tensor<1x64x256xf32>, %k0: tensor<1x64x256xf32>, %v: tensor<1x64x256xf32>, %a: tensor<1x64x256xf32>, %m: tensor<1x1x64xf32>, %s: tensor<1x1x64xf32>) -> tensor<1x64x256xf32> {
  // expected-error @+1 {{head width 256 > 128 (the row state lives in registers)}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<1x64x256xf32>) keys(%k0 : tensor<1x64x256xf32>) values(%v : tensor<1x64x256xf32>) outs(%a, %m, %s : tensor<1x64x256xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>) {factors = array<i64: 1>} -> tensor<1x64x256xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>
  return %acc : tensor<1x64x256xf32>
}

// -----

// Head width 128: the f32 kernel fits its tiles in a block's 48 KiB of
// shared memory (smaller key tiles), the tensor-core one cannot even at
// 32 x 16 (its scores and accumulator are in shared memory too): an error
// of the precision=tf32 RUN line only.
func.func @shared_memory(%q0: tensor<1x64x128xf32>, %q1: tensor<1x32x128xf32>, %q2: tensor<1x16x128xf32>, %k0: tensor<1x64x128xf32>, %k1: tensor<1x32x128xf32>, %k2: tensor<1x16x128xf32>, %v: tensor<1x64x128xf32>, %a: tensor<1x64x128xf32>, %m: tensor<1x1x64xf32>, %s: tensor<1x1x64xf32>) -> tensor<1x64x128xf32> {
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1, %q2 : tensor<1x64x128xf32>, tensor<1x32x128xf32>, tensor<1x16x128xf32>) keys(%k0, %k1, %k2 : tensor<1x64x128xf32>, tensor<1x32x128xf32>, tensor<1x16x128xf32>) values(%v : tensor<1x64x128xf32>) outs(%a, %m, %s : tensor<1x64x128xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>) {factors = array<i64: 1, 2, 4>} -> tensor<1x64x128xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>
  return %acc : tensor<1x64x128xf32>
}

// -----

// Stride 3 with three levels (factors 1, 3, 9): fine for f32; for tf32
// whole warps and whole coarse rows would take 288-row tiles.
func.func @stride3(%q0: tensor<1x81x16xf32>, %q1: tensor<1x27x16xf32>, %q2: tensor<1x9x16xf32>, %k0: tensor<1x81x16xf32>, %k1: tensor<1x27x16xf32>, %k2: tensor<1x9x16xf32>, %v: tensor<1x81x16xf32>, %a: tensor<1x81x16xf32>, %m: tensor<1x1x81xf32>, %s: tensor<1x1x81xf32>) -> tensor<1x81x16xf32> {
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1, %q2 : tensor<1x81x16xf32>, tensor<1x27x16xf32>, tensor<1x9x16xf32>) keys(%k0, %k1, %k2 : tensor<1x81x16xf32>, tensor<1x27x16xf32>, tensor<1x9x16xf32>) values(%v : tensor<1x81x16xf32>) outs(%a, %m, %s : tensor<1x81x16xf32>, tensor<1x1x81xf32>, tensor<1x1x81xf32>) {factors = array<i64: 1, 3, 9>} -> tensor<1x81x16xf32>, tensor<1x1x81xf32>, tensor<1x1x81xf32>
  return %acc : tensor<1x81x16xf32>
}

// -----

// Head width 8: fine for the f32 kernel, not whole fragments for tf32.
func.func @narrow(%q0: tensor<1x64x8xf32>, %k0: tensor<1x64x8xf32>, %v: tensor<1x64x8xf32>, %a: tensor<1x64x8xf32>, %m: tensor<1x1x64xf32>, %s: tensor<1x1x64xf32>) -> tensor<1x64x8xf32> {
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<1x64x8xf32>) keys(%k0 : tensor<1x64x8xf32>) values(%v : tensor<1x64x8xf32>) outs(%a, %m, %s : tensor<1x64x8xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>) {factors = array<i64: 1>} -> tensor<1x64x8xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>
  return %acc : tensor<1x64x8xf32>
}
