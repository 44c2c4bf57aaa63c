// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference" | FileCheck %s --check-prefix=ON
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference outside-regions=false" | FileCheck %s --check-prefix=OFF
// RUN: ampc-opt %s --ampc-auto-mixed-precision="policy=reference outside-regions=false" --ampc-auto-mixed-precision="policy=reference outside-regions=false" | FileCheck %s --check-prefix=OFF

// Autocast regions (`tg.region`, the innermost `autocast(MODE)` block of an
// op): `off` computes as if pinned f32, `fp16`/`bf16` apply the classes with
// that low type whatever `low-type` is, a pin wins over the region. With
// `outside-regions=false` (--amp=off) ops outside regions, and their pins,
// stay as written.

// ON-LABEL: func.func @regions
// ON: %[[X16:.+]] = tg.cast %arg0 {tg.role = "amp"} : tensor<4x8xf32> to tensor<4x8xf16>
// ON: %[[W16:.+]] = tg.cast %arg1 {tg.role = "amp"} : tensor<8x8xf32> to tensor<8x8xf16>
// ON: %[[A:.+]] = tg.matmul %[[X16]], %[[W16]] : tensor<4x8xf16>, tensor<8x8xf16> -> tensor<4x8xf16>
// ON: %[[XB:.+]] = tg.cast %arg0 {tg.role = "amp"} : tensor<4x8xf32> to tensor<4x8xbf16>
// ON: %[[WB:.+]] = tg.cast %arg1 {tg.role = "amp"} : tensor<8x8xf32> to tensor<8x8xbf16>
// ON: %[[B:.+]] = tg.matmul %[[XB]], %[[WB]] {tg.region = "bf16"} : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
// ON: %[[BW:.+]] = tg.cast %[[B]] {tg.role = "amp"} : tensor<4x8xbf16> to tensor<4x8xf32>
// ON: %[[R:.+]] = tg.relu %[[BW]] {tg.region = "off"} : tensor<4x8xf32>
// ON: %[[P:.+]] = tg.matmul %arg0, %arg1 {tg.pin = f32, tg.region = "fp16"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// ON: %[[AW:.+]] = tg.cast %[[A]] {tg.role = "amp"} : tensor<4x8xf16> to tensor<4x8xf32>
// ON: tg.add %[[AW]], %[[R]] {tg.region = "off"} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// ON: tg.matmul {{.+}} {tg.region = "fp16"} : tensor<4x8xf16>, tensor<8x8xf16> -> tensor<4x8xf16>

// OFF-LABEL: func.func @regions
// OFF: %[[A:.+]] = tg.matmul %arg0, %arg1 : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// OFF: %[[XB:.+]] = tg.cast %arg0 {tg.role = "amp"} : tensor<4x8xf32> to tensor<4x8xbf16>
// OFF: %[[WB:.+]] = tg.cast %arg1 {tg.role = "amp"} : tensor<8x8xf32> to tensor<8x8xbf16>
// OFF: %[[B:.+]] = tg.matmul %[[XB]], %[[WB]] {tg.region = "bf16"} : tensor<4x8xbf16>, tensor<8x8xbf16> -> tensor<4x8xbf16>
// OFF: %[[BW:.+]] = tg.cast %[[B]] {tg.role = "amp"} : tensor<4x8xbf16> to tensor<4x8xf32>
// OFF: tg.relu %[[BW]] {tg.region = "off"} : tensor<4x8xf32>
// OFF: tg.matmul %arg0, %arg1 {tg.pin = f32, tg.region = "fp16"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// OFF: tg.add %[[A]], %{{.+}} {tg.region = "off"} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
// OFF: tg.matmul {{.+}} {tg.region = "fp16"} : tensor<4x8xf16>, tensor<8x8xf16> -> tensor<4x8xf16>
// A pin outside every region is inert under --amp=off.
// OFF: tg.exp %{{.+}} {tg.pin = f16} : tensor<4x8xf32>
func.func @regions(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %a = tg.matmul %x, %w : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %b = tg.matmul %x, %w {tg.region = "bf16"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %r = tg.relu %b {tg.region = "off"} : tensor<4x8xf32>
  %p = tg.matmul %x, %w {tg.pin = f32, tg.region = "fp16"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %s = tg.add %a, %r {tg.region = "off"} : tensor<4x8xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  %q = tg.matmul %s, %w {tg.region = "fp16"} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  %e = tg.exp %x {tg.pin = f16} : tensor<4x8xf32>
  return %s, %p, %q, %e : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// A function without regions is left alone under outside-regions=false.
// OFF-LABEL: func.func @no_regions
// OFF-NEXT: tg.matmul %arg0, %arg1 {tg.pin = f16} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
// OFF-NEXT: return
func.func @no_regions(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %a = tg.matmul %x, %w {tg.pin = f16} : tensor<4x8xf32>, tensor<8x8xf32> -> tensor<4x8xf32>
  return %a : tensor<4x8xf32>
}
