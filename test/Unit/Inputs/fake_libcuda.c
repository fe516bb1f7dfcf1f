// A fake CUDA driver (libcuda.so.1's API, no GPU): FAKE_CUDA_MODE picks a
// device (sm90, the default, or sm80), no device (nodevice), an image that
// does not load (badimage), a failing launch (launchfail) or allocations
// above 4 KiB that fail (oom). Memory is host memory (zeroed), copies are
// memcpy, kernels do nothing; live allocations, launches and copies (by
// direction, with their bytes), streams created and kernels looked up are
// counted and reported at exit; with FAKE_CUDA_LAUNCHES set, each launch
// prints its kernel's name and grid. Built by CudaDriverTest.cpp,
// test/Tools/nvvm.test (a compiled layer's host side, run end to end) and
// nvvm-cublaslt.test.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int live, launches, streams, lookups;
/* The live allocations, to tell the direction of a copy: host to device,
   device to host or device to device, counted with their bytes. */
#define MAX_BUFFERS 65536
static struct { uint64_t begin, end; } buffers[MAX_BUFFERS];
static int nbuffers;
static long copies[3];
static unsigned long long copied[3];
static int onDevice(uint64_t p) {
  for (int i = 0; i < nbuffers; ++i)
    if (p >= buffers[i].begin && p < buffers[i].end) return 1;
  return 0;
}
static const char *mode(void) { const char *m = getenv("FAKE_CUDA_MODE"); return m ? m : "sm90"; }
__attribute__((destructor)) static void report(void) {
  fprintf(stderr, "fake-cuda: %d allocations outstanding, %d launches\n", live, launches);
  fprintf(stderr, "fake-cuda: copies host->device %ld (%llu bytes), device->host %ld (%llu bytes), device->device %ld (%llu bytes)\n",
          copies[0], copied[0], copies[1], copied[1], copies[2], copied[2]);
  fprintf(stderr, "fake-cuda: %d streams created, %d kernel lookups\n", streams, lookups);
}
int cuInit(unsigned f) { return strcmp(mode(), "nodevice") == 0 ? 100 : 0; }
int cuDriverGetVersion(int *v) { *v = 13000; return 0; }
int cuDeviceGetCount(int *n) { *n = 1; return 0; }
int cuDeviceGet(int *d, int i) { *d = 0; return 0; }
int cuDeviceGetAttribute(int *v, int attr, int d) {
  int sm80 = strcmp(mode(), "sm80") == 0;
  /* 75: the major compute capability; 97: shared memory a block may opt
     in to (FAKE_CUDA_MODE=smallsmem: 64 KiB, as on sm_75). */
  *v = attr == 75 ? (sm80 ? 8 : 9)
     : attr == 97 ? (strcmp(mode(), "smallsmem") == 0 ? 65536 : sm80 ? 166912 : 232448)
     : 0;
  return 0;
}
int cuDeviceGetName(char *name, int len, int d) {
  snprintf(name, len, "%s", strcmp(mode(), "sm80") == 0 ? "Fake A100" : "Fake H200"); return 0;
}
int cuDevicePrimaryCtxRetain(void **c, int d) { *c = (void *)1; return 0; }
int cuCtxSetCurrent(void *c) { return 0; }
int cuModuleLoadData(void **m, const void *image) {
  if (strcmp(mode(), "badimage") == 0) return 200;
  *m = (void *)2; return 0;
}
int cuModuleLoadDataEx(void **m, const void *i, unsigned n, int *o, void **v) { return cuModuleLoadData(m, i); }
int cuModuleUnload(void *m) { return 0; }
/* The function handle is its name (a copy, kept for the process), which
   FAKE_CUDA_LAUNCHES prints at each launch. */
int cuModuleGetFunction(void **f, void *m, const char *name) { *f = strdup(name); ++lookups; return 0; }
/* The dynamic shared memory the kernels opted in to (one fake function for
   all): a launch asking for more than 48 KiB beyond it fails, as on a GPU. */
static int optedIn;
int cuFuncSetAttribute(void *f, int attr, int v) {
  if (attr == 8) {
    optedIn = v;
    fprintf(stderr, "fake-cuda: kernel opted in to %d bytes of shared memory\n", v);
  }
  return 0;
}
int cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                   unsigned by, unsigned bz, unsigned smem, void *s, void **p, void **e) {
  if (smem > 48 * 1024 && (int)smem > optedIn) return 1; /* CUDA_ERROR_INVALID_VALUE */
  if (strcmp(mode(), "launchfail") == 0) return 719;
  if (getenv("FAKE_CUDA_LAUNCHES"))
    fprintf(stderr, "fake-cuda: launch %s grid %u x %u x %u block %u\n",
            (const char *)f, gx, gy, gz, bx);
  ++launches;
  return 0;
}
int cuStreamCreate(void **s, unsigned f) { *s = (void *)4; ++streams; return 0; }
int cuStreamSynchronize(void *s) { return 0; }
int cuStreamDestroy_v2(void *s) { return 0; }
int cuStreamWaitEvent(void *s, void *e, unsigned f) { return 0; }
int cuEventCreate(void **e, unsigned f) { *e = (void *)5; return 0; }
int cuEventDestroy_v2(void *e) { return 0; }
int cuEventRecord(void *e, void *s) { return 0; }
int cuEventSynchronize(void *e) { return 0; }
int cuEventElapsedTime(float *ms, void *a, void *b) { *ms = 0; return 0; }
/* Zeroed: the kernels do nothing, so a buffer a zero-fill kernel would
   clear must already be zero (nvvm-cublaslt.test adds into one). */
int cuMemAlloc_v2(uint64_t *p, size_t n) {
  if (strcmp(mode(), "oom") == 0 && n > 4096) return 2; /* CUDA_ERROR_OUT_OF_MEMORY */
  *p = (uint64_t)calloc(n ? n : 1, 1); ++live;
  if (nbuffers < MAX_BUFFERS) { buffers[nbuffers].begin = *p; buffers[nbuffers].end = *p + (n ? n : 1); ++nbuffers; }
  return 0;
}
int cuMemAllocManaged(uint64_t *p, size_t n, unsigned f) { return cuMemAlloc_v2(p, n); }
int cuMemFree_v2(uint64_t p) {
  for (int i = 0; i < nbuffers; ++i)
    if (buffers[i].begin == p) { buffers[i] = buffers[--nbuffers]; break; }
  free((void *)p); --live; return 0;
}
int cuMemcpyAsync(uint64_t d, uint64_t s, size_t n, void *st) {
  int kind = onDevice(s) ? (onDevice(d) ? 2 : 1) : 0;
  ++copies[kind]; copied[kind] += n;
  memcpy((void *)d, (void *)s, n); return 0;
}
int cuMemsetD32Async(uint64_t d, unsigned v, size_t n, void *s) { return 0; }
int cuMemHostRegister_v2(void *p, size_t n, unsigned f) { return 0; }
int cuMemHostUnregister(void *p) { return 0; }
int cuGetErrorName(int e, const char **s) {
  *s = e == 100 ? "CUDA_ERROR_NO_DEVICE" : e == 719 ? "CUDA_ERROR_LAUNCH_FAILED"
     : e == 200 ? "CUDA_ERROR_INVALID_IMAGE" : e == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_UNKNOWN";
  return 0;
}
int cuGetErrorString(int e, const char **s) {
  *s = e == 100 ? "no CUDA-capable device is detected"
     : e == 719 ? "unspecified launch failure" : e == 2 ? "out of memory"
     : "device kernel image is invalid";
  return 0;
}
