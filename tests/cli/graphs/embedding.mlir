// An embedding lookup as torch.nn.functional.embedding(ids, weight) writes
// it: 37 int64 ids into a 1000 x 64 table, scaled by sqrt(64) as a
// transformer's input embedding is.
tir.graph @embedding(%weight: tensor<1000x64xf32>, %ids: tensor<37xsi64>) -> tensor<37x64xf32> {
  %rows = gather %weight, %ids axis = 0 : (tensor<1000x64xf32>, tensor<37xsi64>) -> tensor<37x64xf32>
  %scale = constant dense<8.0> : tensor<1x1xf32>
  %out = mul %rows, %scale : (tensor<37x64xf32>, tensor<1x1xf32>) -> tensor<37x64xf32>
  results %out : tensor<37x64xf32>
}
