// A fake NCCL (the libnccl.so.2 functions runtime/Nccl.cpp uses; no GPU),
// to run a data-parallel GPU module's host side under mpirun with the fake
// driver (fake_libcuda.c), whose device memory is host memory. The unique
// id is rank 0's pid; ncclCommInitRank reports the id each rank received
// (so a test sees that MPI broadcast rank 0's); ncclAllReduce checks its
// arguments and sums through the MPI job's MPI_Allreduce (Open MPI, which
// the runtime loaded global), so the ranks really get the sums (one rank
// alone: a copy, without MPI). Each rank
// reports at exit how many all-reduces of how many floats it ran and
// whether its communicator was destroyed. FAKE_NCCL_MODE=initfail makes
// ncclCommInitRank fail as a broken network would. Built by
// test/Tools/nvvm-data-parallel.test.
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct { char internal[128]; } ncclUniqueId;
typedef struct { int nranks, rank, destroyed; } Comm;
enum { kSuccess = 0, kSystemError = 2, kInvalidArgument = 4, kFloat32 = 7 };

static Comm *theComm;
static long reductions;
static unsigned long long lastCount;
static int badCalls;
static const char *lastError = "";

__attribute__((destructor)) static void report(void) {
  if (!theComm) return;
  fprintf(stderr, "fake-nccl: rank %d: %ld all-reduces of %llu floats (sum), %d refused, communicator %s\n",
          theComm->rank, reductions, lastCount, badCalls,
          theComm->destroyed ? "destroyed" : "NOT destroyed");
}

int ncclGetVersion(int *v) { *v = 22805; return kSuccess; }
const char *ncclGetErrorString(int r) {
  return r == kSystemError ? "unhandled system error"
       : r == kInvalidArgument ? "invalid argument" : "fake error";
}
const char *ncclGetLastError(void *comm) { return lastError; }

int ncclGetUniqueId(ncclUniqueId *id) {
  memset(id, 0, sizeof *id);
  snprintf(id->internal, sizeof id->internal, "fake-nccl-id-%ld", (long)getpid());
  return kSuccess;
}

int ncclCommInitRank(void **comm, int nranks, ncclUniqueId id, int rank) {
  const char *mode = getenv("FAKE_NCCL_MODE");
  if (mode && strcmp(mode, "initfail") == 0) {
    lastError = "fake: no network interface";
    return kSystemError;
  }
  if (nranks < 1 || rank < 0 || rank >= nranks || strncmp(id.internal, "fake-nccl-id-", 13) != 0) {
    lastError = "fake: bad rank or id";
    return kInvalidArgument;
  }
  Comm *c = calloc(1, sizeof *c);
  c->nranks = nranks;
  c->rank = rank;
  theComm = c;
  *comm = c;
  fprintf(stderr, "fake-nccl: rank %d of %d joined %s\n", rank, nranks, id.internal);
  return kSuccess;
}

int ncclCommDestroy(void *comm) {
  ((Comm *)comm)->destroyed = 1;
  return kSuccess;
}

int ncclAllReduce(const void *send, void *recv, size_t count, int type, int op,
                  void *comm, void *stream) {
  Comm *c = comm;
  if (c != theComm || c->destroyed || type != kFloat32 || op != 0 || count == 0) {
    ++badCalls;
    lastError = "fake: bad all-reduce arguments";
    return kInvalidArgument;
  }
  if (c->nranks == 1) { /* the sum over one rank, without MPI */
    if (send != recv) memmove(recv, send, count * sizeof(float));
    ++reductions;
    lastCount = count;
    return kSuccess;
  }
  typedef int (*Allreduce)(const void *, void *, int, void *, void *, void *);
  Allreduce allreduce = (Allreduce)dlsym(RTLD_DEFAULT, "MPI_Allreduce");
  void *f32 = dlsym(RTLD_DEFAULT, "ompi_mpi_float");
  void *sum = dlsym(RTLD_DEFAULT, "ompi_mpi_op_sum");
  void *world = dlsym(RTLD_DEFAULT, "ompi_mpi_comm_world");
  if (!allreduce || !f32 || !sum || !world) {
    lastError = "fake: no MPI in the process to sum with";
    return kSystemError;
  }
  void *in = send == recv ? (void *)1 /* MPI_IN_PLACE in Open MPI */ : (void *)send;
  if (allreduce(in, recv, (int)count, f32, sum, world) != 0) {
    lastError = "fake: MPI_Allreduce failed";
    return kSystemError;
  }
  ++reductions;
  lastCount = count;
  return kSuccess;
}
