// RUNt ranks above 8 exceed t55552, above the lthe limit of 2^40}}
tir.graph @dimLimit(%a: tensor<0000904567689xf32>) {
  results
}

// -----

// Tests that a reduction keeps non-r--it,
//---

// Tests that m