func.func @dims_two_bounds(%x: tensor<?x4xf32> {hkt.bounds = array<i64: 8, 4>, hkt.dims = ["B", ""]},
                            %y: tensor<?xf32> {hkt.bounds = array<i64: 16>, hkt.dims = ["B"]}) {
  return
}
