// RUN: hkt-opt %s --split-input-file --verify-diagnostics --hkt-gpu-lower-online-attention
// RUN: not hkt-opt %s --split-input-file --hkt-gpu-lower-online-attention="tile-q=1024" 2>&1 | FileCheck %s --check-prefix=SHARED
// SHARED: error: 'hkt.online_attention' op cannot be lowered for the GPU: tiles of 1024 x 2 need 268804 bytes of shared memory, more than the 48 KiB a block has; use a smaller tile-q

// What the attention kernel of the NVVM path does not take yet, each with
// the reason.

func.func @dynamic(%q0: tensor<1x?x8xf32>, %k0: tensor<1x?x8xf32>, %v: tensor<1x?x8xf32>, %a: tensor<1x?x8xf32>, %m: tensor<1x1x?xf32>, %s: tensor<1x1x?xf32>) -> tensor<1x?x8xf32> {
  // expected-error @+1 {{cannot be lowered for the GPU: dynamic shapes are not supported yet}}
  %acc, %max, %sum = hkt.online_attention ins(%q0 : tensor<1x?x8xf32>) keys(%k0 : tensor<1x?x8xf32>) values(%v : tensor<1x?x8xf32>) outs(%a, %m, %s : tensor<1x?x8xf32>, tensor<1x1x?xf32>, tensor<1x1x?xf32>) {factors = array<i64: 1>} -> tensor<1x?x8xf32>, tensor<1x1x?xf32>, tensor<1x1x?xf32>
  return %acc : tensor<1x?x8xf32>
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

// Tiles too large for a block's shared memory even at the smallest key tile
// (only with tile-q=1024; the default tiles fit). The op at the default
// tiles lowers, so the diagnostic is produced only by the second RUN line.
func.func @shared_memory(%q0: tensor<1x64x128xf32>, %q1: tensor<1x32x128xf32>, %k0: tensor<1x64x128xf32>, %k1: tensor<1x32x128xf32>, %v: tensor<1x64x128xf32>, %a: tensor<1x64x128xf32>, %m: tensor<1x1x64xf32>, %s: tensor<1x1x64xf32>) -> tensor<1x64x128xf32> {
  %acc, %max, %sum = hkt.online_attention ins(%q0, %q1 : tensor<1x64x128xf32>, tensor<1x32x128xf32>) keys(%k0, %k1 : tensor<1x64x128xf32>, tensor<1x32x128xf32>) values(%v : tensor<1x64x128xf32>) outs(%a, %m, %s : tensor<1x64x128xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>) {factors = array<i64: 1, 2>} -> tensor<1x64x128xf32>, tensor<1x1x64xf32>, tensor<1x1x64xf32>
  return %acc : tensor<1x64x128xf32>
}
