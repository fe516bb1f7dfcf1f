/* bf16 peak of one core, for hkt-compile --precision bf16's matmuls
 * (docs/performance.md), on the instructions they use:
 *
 *   amx          Intel AMX: tdpbf16ps on tile registers only (no memory in
 *                the loop), four independent 16 x 16 f32 accumulators fed
 *                by two 16 x 32 bf16 tiles each, 2 x 16 x 16 x 32 flops an
 *                instruction;
 *   avx512bf16   AVX512-BF16: vdpbf16ps on zmm registers, twelve
 *                independent chains, 2 x 16 x 2 flops an instruction.
 *
 * Built for the x86-64 baseline: each kernel carries its own target
 * attribute and runs only where the CPU (and, for AMX, Linux: arch_prctl
 * ARCH_REQ_XCOMP_PERM) allows. Without --isa: AMX where it runs, else
 * AVX512-BF16. Prints "<GFLOP/s> amx-bf16" or "<GFLOP/s> avx512-bf16" on one
 * line; scripts/bench.py --precision bf16 runs one copy per thread at once
 * and adds them up. Exits 2 where the chosen kernel cannot run.
 *
 *   cc -O2 scripts/bf16_peak.c -o bf16_peak
 *   bf16_peak [--isa amx|avx512bf16] [--steps N] */
#include <immintrin.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The tile configuration: palette 1, eight 16-row x 64-byte tiles. */
struct TileConfig {
  uint8_t palette, startRow;
  uint8_t reserved[14];
  uint16_t bytesPerRow[16];
  uint8_t rows[16];
};

static int amxRuns(void) {
  return __builtin_cpu_supports("amx-bf16") &&
         syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */,
                 18 /* XFEATURE_XTILEDATA */) == 0;
}

/* GFLOP/s of `steps` steps of four tdpbf16ps. */
__attribute__((target("amx-tile,amx-bf16"))) static double runAmx(long steps) {
  struct TileConfig config;
  memset(&config, 0, sizeof config);
  config.palette = 1;
  for (int t = 0; t < 8; ++t) {
    config.rows[t] = 16;
    config.bytesPerRow[t] = 64;
  }
  _tile_loadconfig(&config);
  static __attribute__((aligned(64))) uint16_t operand[16 * 32];
  for (int i = 0; i < 16 * 32; ++i)
    operand[i] = 0x3c00; /* bf16 2^-7: sums stay finite */
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  double start = now();
  for (long i = 0; i < steps; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  static float sink[16 * 16];
  _tile_stored(0, sink, 64);
  double seconds = now() - start;
  _tile_release();
  if (sink[0] < 0) /* keeps the store */
    return 0;
  return 4.0 * steps * 2 * 16 * 16 * 32 / seconds / 1e9;
}

enum { CHAINS = 12 };

/* GFLOP/s of `steps` steps of CHAINS vdpbf16ps. */
__attribute__((target("avx512f,avx512bf16"))) static double
runAvx512Bf16(long steps) {
  __m512 acc[CHAINS];
  for (int i = 0; i < CHAINS; ++i)
    acc[i] = _mm512_set1_ps(0.001f * (float)i);
  /* Pairs of bf16 1.0 and 2^-24: sums stay finite. */
  __m512bh a = (__m512bh)_mm512_set1_epi32(0x3f803f80);
  __m512bh b = (__m512bh)_mm512_set1_epi32(0x33803380);
  double start = now();
  for (long s = 0; s < steps; ++s)
    for (int i = 0; i < CHAINS; ++i)
      acc[i] = _mm512_dpbf16_ps(acc[i], a, b);
  double seconds = now() - start;
  float lanes[16], sum = 0;
  for (int i = 0; i < CHAINS; ++i) {
    _mm512_storeu_ps(lanes, acc[i]);
    sum += lanes[0];
  }
  if (sum < 0) /* keeps the chains */
    return 0;
  return (double)steps * CHAINS * 2 * 16 * 2 / seconds / 1e9;
}

int main(int argc, char **argv) {
  long steps = 0;
  const char *isa = NULL;
  for (int i = 1; i < argc; ++i) {
    if (!strcmp(argv[i], "--steps") && i + 1 < argc && atol(argv[i + 1]) > 0)
      steps = atol(argv[++i]);
    else if (!strcmp(argv[i], "--isa") && i + 1 < argc &&
             (!strcmp(argv[i + 1], "amx") ||
              !strcmp(argv[i + 1], "avx512bf16")))
      isa = argv[++i];
    else {
      fprintf(stderr, "usage: bf16_peak [--isa amx|avx512bf16] [--steps N]\n");
      return 1;
    }
  }
  int amx = amxRuns();
  int dot = __builtin_cpu_supports("avx512bf16");
  if (!isa)
    isa = amx ? "amx" : "avx512bf16";
  if (!strcmp(isa, "amx")) {
    if (!amx) {
      fprintf(stderr, "bf16_peak: no AMX bf16 here (CPU or kernel)\n");
      return 2;
    }
    printf("%.1f amx-bf16\n", runAmx(steps ? steps : 2000000));
    return 0;
  }
  if (!dot) {
    fprintf(stderr, "bf16_peak: no AVX512-BF16 here\n");
    return 2;
  }
  printf("%.1f avx512-bf16\n", runAvx512Bf16(steps ? steps : 20000000));
  return 0;
}
