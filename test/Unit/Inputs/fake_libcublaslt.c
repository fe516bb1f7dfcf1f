// A fake cuBLASLt (the libcublasLt.so.13 functions hktCublasLtGemmBf16
// uses; no GPU). Under the fake driver device memory is host memory, so
// cublasLtMatmul computes D = alpha op(A) op(B) + beta C right here,
// column-major as cuBLASLt reads its arguments, with A and B rounded to
// bf16 (CUBLAS_COMPUTE_32F_FAST_16BF) and f32 sums. It refuses what the
// runtime must not pass (another compute or scale type, layouts that do
// not fit together) with CUBLAS_STATUS_INVALID_VALUE and reports each call,
// so a test sees the row-major to column-major mapping in the numbers.
// Built by test/Tools/nvvm-cublaslt.test.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int type; uint64_t rows, cols; int64_t ld; } Layout;
typedef struct { int compute, scale; } Desc;
enum { kInvalidValue = 7, kComputeFast16Bf = 75, kRealF32 = 0 };

static float bf16(float x) {
  uint32_t u;
  memcpy(&u, &x, 4);
  u = (u + 0x7fff + ((u >> 16) & 1)) & 0xffff0000u;
  memcpy(&x, &u, 4);
  return x;
}

int cublasLtCreate(void **h) { *h = (void *)7; return 0; }
int cublasLtMatmulDescCreate(void **d, int compute, int scale) {
  Desc *x = malloc(sizeof(Desc));
  x->compute = compute;
  x->scale = scale;
  *d = x;
  return 0;
}
int cublasLtMatmulDescDestroy(void *d) { free(d); return 0; }
int cublasLtMatrixLayoutCreate(void **l, int type, uint64_t rows,
                               uint64_t cols, int64_t ld) {
  Layout *x = malloc(sizeof(Layout));
  x->type = type;
  x->rows = rows;
  x->cols = cols;
  x->ld = ld;
  *l = x;
  return 0;
}
int cublasLtMatrixLayoutDestroy(void *l) { free(l); return 0; }
int cublasLtMatmul(void *h, void *desc, const void *alpha, const void *a,
                   void *aDesc, const void *b, void *bDesc, const void *beta,
                   const void *c, void *cDesc, void *d, void *dDesc,
                   const void *algo, void *ws, size_t wsBytes, void *stream) {
  const Desc *op = desc;
  const Layout *la = aDesc, *lb = bDesc, *lc = cDesc, *ld = dDesc;
  if (op->compute != kComputeFast16Bf || op->scale != kRealF32 ||
      la->type != kRealF32 || lb->type != kRealF32 || lc->type != kRealF32 ||
      la->rows != lc->rows || lb->cols != lc->cols || la->cols != lb->rows ||
      memcmp(lc, ld, sizeof(Layout)) != 0 || la->ld < (int64_t)la->rows ||
      lb->ld < (int64_t)lb->rows || lc->ld < (int64_t)lc->rows)
    return kInvalidValue;
  uint64_t m = lc->rows, n = lc->cols, k = la->cols;
  const float *A = a, *B = b, *C = c;
  float *D = d, al = *(const float *)alpha, be = *(const float *)beta;
  for (uint64_t j = 0; j < n; ++j)
    for (uint64_t i = 0; i < m; ++i) {
      float sum = 0.0f;
      for (uint64_t p = 0; p < k; ++p)
        sum += bf16(A[i + p * la->ld]) * bf16(B[p + j * lb->ld]);
      D[i + j * ld->ld] = al * sum + be * C[i + j * lc->ld];
    }
  fprintf(stderr, "fake-cublaslt: matmul m=%llu n=%llu k=%llu\n",
          (unsigned long long)m, (unsigned long long)n, (unsigned long long)k);
  return 0;
}
