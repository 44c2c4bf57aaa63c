//===- TargetTest.cpp - --amp=auto's table and warnings -------------------===//
//
// ampc::chooseAmp against every row of amp.md's table ("Precision from the
// target"), the rows the command line cannot reach included (a GPU below
// sm_60 is only ever read from the device), the warnings for explicit modes,
// and the parsing of --cuda-arch and --cpu-features.
//
//===----------------------------------------------------------------------===//

#include "ampc/Pipelines/Target.h"

#include <gtest/gtest.h>

using namespace ampc;

namespace {

Target cuda(int sm) {
  Target t;
  t.kind = Target::Kind::CUDA;
  t.sm = sm;
  return t;
}

Target cpu(std::set<std::string> features) {
  Target t;
  t.cpuFeatures = std::move(features);
  return t;
}

TEST(AmpAuto, CudaRows) {
  for (int sm : {35, 50, 52, 53, 61})
    EXPECT_EQ(chooseAmp(cuda(sm)).mode, amp::Mode::Off) << sm;
  for (int sm : {60, 62, 70, 72, 75})
    EXPECT_EQ(chooseAmp(cuda(sm)).mode, amp::Mode::FP16) << sm;
  for (int sm : {80, 86, 87, 89, 90, 100, 103, 110, 120})
    EXPECT_EQ(chooseAmp(cuda(sm)).mode, amp::Mode::BF16) << sm;
  EXPECT_NE(chooseAmp(cuda(52)).reason.find("below sm_60"), std::string::npos);
  EXPECT_NE(chooseAmp(cuda(75)).reason.find("dynamic loss scaling"),
            std::string::npos);
  EXPECT_NE(chooseAmp(cuda(90)).reason.find("no loss scaling"),
            std::string::npos);
}

TEST(AmpAuto, CpuRows) {
  EXPECT_EQ(chooseAmp(cpu({"avx512f", "amx_bf16"})).mode, amp::Mode::BF16);
  EXPECT_EQ(chooseAmp(cpu({"avx512_bf16"})).mode, amp::Mode::BF16);
  EXPECT_EQ(chooseAmp(cpu({"avx512_fp16", "f16c"})).mode, amp::Mode::Off);
  EXPECT_EQ(chooseAmp(cpu({})).mode, amp::Mode::Off);
  EXPECT_EQ(cpu({"avx2", "f16c", "avx512_bf16"}).describe(),
            "cpu:avx512_bf16");
  EXPECT_EQ(cpu({"avx2"}).describe(), "cpu");
  EXPECT_EQ(cuda(61).describe(), "cuda:sm_61");
}

TEST(AmpAuto, Warnings) {
  // Slows the target down, or no hardware support: a warning with figures.
  EXPECT_NE(ampWarning(amp::Mode::FP16, cuda(61)).find("0.17 TFLOPS"),
            std::string::npos);
  EXPECT_NE(ampWarning(amp::Mode::FP16, cuda(52)), "");
  EXPECT_NE(ampWarning(amp::Mode::BF16, cuda(75)).find("20.14"),
            std::string::npos);
  EXPECT_NE(ampWarning(amp::Mode::BF16, cuda(70)), "");
  EXPECT_NE(ampWarning(amp::Mode::BF16, cpu({"avx2"})), "");
  EXPECT_NE(ampWarning(amp::Mode::FP16, cpu({"avx512_bf16"})), "");
  // fp16 units the CPU backend has no kernels for (oneDNN 2.x has no f16
  // GEMMs or convolutions on CPUs): a warning too.
  EXPECT_NE(ampWarning(amp::Mode::FP16, cpu({"avx512_fp16"}))
                .find("no fp16 kernels for this CPU's fp16 units"),
            std::string::npos);
  // Where the mode pays, none; off never warns.
  EXPECT_EQ(ampWarning(amp::Mode::FP16, cuda(60)), "");
  EXPECT_EQ(ampWarning(amp::Mode::FP16, cuda(75)), "");
  EXPECT_EQ(ampWarning(amp::Mode::FP16, cuda(90)), "");
  EXPECT_EQ(ampWarning(amp::Mode::BF16, cuda(80)), "");
  EXPECT_EQ(ampWarning(amp::Mode::BF16, cpu({"amx_bf16"})), "");
  EXPECT_EQ(ampWarning(amp::Mode::Off, cuda(61)), "");
}

TEST(AmpAuto, ParseCudaArch) {
  std::string error;
  EXPECT_EQ(parseCudaArch("sm_61", error), 61);
  EXPECT_EQ(parseCudaArch("sm_120", error), 120);
  for (const char *bad : {"sm_59", "sm_65", "sm_121", "sm_", "61", "sm_8a",
                          "SM_80", "sm_080", "sm_80 ", ""}) {
    error.clear();
    EXPECT_FALSE(parseCudaArch(bad, error).has_value()) << bad;
    EXPECT_NE(error.find("--cuda-arch"), std::string::npos) << bad;
  }
}

TEST(AmpAuto, ParseCpuFeatures) {
  std::string error;
  auto features = parseCpuFeatures("avx2, AVX512_BF16,f16c", error);
  ASSERT_TRUE(features.has_value());
  EXPECT_EQ(features->count("avx512_bf16"), 1u);
  EXPECT_EQ(features->size(), 3u);
  EXPECT_FALSE(parseCpuFeatures("", error).has_value());
  EXPECT_FALSE(parseCpuFeatures("avx2,,f16c", error).has_value());
  EXPECT_FALSE(parseCpuFeatures("avx2;f16c", error).has_value());
}

} // namespace
