func.func @inout_scalar(%x: f32 {hkt.role = "inout"}) -> (f32 {hkt.inout = 0 : i64}) {
  return %x : f32
}
