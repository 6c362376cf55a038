// mpi_allreduce: MPI_Allreduce (float32, sum, out-of-place) swept over message sizes, printing
// rows in tutti-bench's (nccl-tests') format so that bench/compare-peers can set the two side by
// side. Run it under mpirun: `mpirun -np 2 mpi_allreduce -b 8 -e 256M -f 2`.
//
// Method, as tutti-bench's: for each size, `warmup` untimed calls, an MPI_Barrier, then `iters`
// calls timed together with MPI_Wtime; the reported time is each rank's loop time / iters,
// averaged over the ranks. busbw = algbw * 2(n-1)/n. The iteration count is scaled down for
// large sizes so that one size takes about `-s` seconds (but never fewer than 3 iterations);
// every rank agrees on the count. One more call on fresh inputs then checks the result
// (-c 0 skips it; the column then reads N/A like nccl-tests').
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { kMinIters = 3 };

typedef struct {
  size_t min_bytes, max_bytes, step_factor;
  int iters, warmup, check;
  double budget_s;  // target seconds per size when scaling iters down; <= 0: never scale
} Options;

static int g_rank = 0;

static void die(const char* format, ...) {
  if (g_rank == 0) {
    va_list args;
    va_start(args, format);
    fputs("mpi_allreduce: ", stderr);
    vfprintf(stderr, format, args);
    fputc('\n', stderr);
    va_end(args);
  }
  MPI_Finalize();
  exit(2);
}

// "8", "64K", "1M", "2G" (powers of 1024, as tutti-bench and nccl-tests read them).
static int parse_size(const char* text, size_t* out) {
  char* end = NULL;
  errno = 0;
  unsigned long long value = strtoull(text, &end, 10);
  if (errno || end == text || text[0] == '-') return 0;
  unsigned long long unit = 1;
  switch (*end) {
    case '\0': break;
    case 'k': case 'K': unit = 1ULL << 10; ++end; break;
    case 'm': case 'M': unit = 1ULL << 20; ++end; break;
    case 'g': case 'G': unit = 1ULL << 30; ++end; break;
    default: return 0;
  }
  if (*end == 'B' || *end == 'b') ++end;
  if (*end != '\0' || (value && unit > ULLONG_MAX / value)) return 0;
  *out = (size_t)(value * unit);
  return 1;
}

static int parse_int(const char* text, int min, int* out) {
  char* end = NULL;
  errno = 0;
  long value = strtol(text, &end, 10);
  if (errno || end == text || *end != '\0' || value < min || value > INT_MAX) return 0;
  *out = (int)value;
  return 1;
}

static void usage(void) {
  if (g_rank != 0) return;
  fputs(
      "usage: mpirun -np N mpi_allreduce [-b MINBYTES] [-e MAXBYTES] [-f FACTOR] [-n ITERS]\n"
      "                                  [-w WARMUP] [-c 0|1] [-s SECONDS]\n"
      "  -b  smallest size (default 8; K/M/G suffixes)   -e  largest size (default 256M)\n"
      "  -f  size factor per step (default 2)            -n  timed iterations (default 20)\n"
      "  -w  warm-up iterations (default 5)              -c  check the result (default 1)\n"
      "  -s  scale -n down so that a size takes about this many seconds, never below 3\n"
      "      iterations (default 0.5; 0: always -n)\n",
      stdout);
}

static Options parse_options(int argc, char** argv) {
  Options o = {8, 256u << 20, 2, 20, 5, 1, 0.5};
  for (int i = 1; i < argc; ++i) {
    const char* flag = argv[i];
    if (!strcmp(flag, "-h") || !strcmp(flag, "--help")) {
      usage();
      MPI_Finalize();
      exit(0);
    }
    if (i + 1 >= argc) die("%s needs a value (-h for help)", flag);
    const char* value = argv[++i];
    int ok = 1, n = 0;
    if (!strcmp(flag, "-b")) {
      ok = parse_size(value, &o.min_bytes);
    } else if (!strcmp(flag, "-e")) {
      ok = parse_size(value, &o.max_bytes);
    } else if (!strcmp(flag, "-f")) {
      ok = parse_int(value, 2, &n);
      o.step_factor = (size_t)n;
    } else if (!strcmp(flag, "-n")) {
      ok = parse_int(value, 1, &o.iters);
    } else if (!strcmp(flag, "-w")) {
      ok = parse_int(value, 0, &o.warmup);
    } else if (!strcmp(flag, "-c")) {
      ok = parse_int(value, 0, &o.check);
    } else if (!strcmp(flag, "-s")) {
      char* end = NULL;
      o.budget_s = strtod(value, &end);
      ok = end != value && *end == '\0' && o.budget_s >= 0;
    } else {
      die("unknown option %s (-h for help)", flag);
    }
    if (!ok) die("%s %s: bad value", flag, value);
  }
  if (o.min_bytes < sizeof(float)) o.min_bytes = sizeof(float);
  if (o.max_bytes < o.min_bytes) die("-e is smaller than -b");
  return o;
}

static const char* format_time(double us, char* buf, size_t len) {
  if (us >= 10000.0) {
    snprintf(buf, len, "%7.0f", us);
  } else if (us >= 100.0) {
    snprintf(buf, len, "%7.1f", us);
  } else {
    snprintf(buf, len, "%7.2f", us);
  }
  return buf;
}

// Fills the input with small integers, so that the float sum over ranks is exact, and counts the
// elements of the output that differ from the expected sum (summed over ranks).
static long long check_result(float* in, float* out, size_t count, int nranks, MPI_Comm comm) {
  for (size_t i = 0; i < count; ++i) in[i] = (float)((g_rank + 1) * (int)(i % 7 + 1));
  memset(out, 0, count * sizeof(float));
  MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, comm);
  long long wrong = 0;
  const int rank_sum = nranks * (nranks + 1) / 2;
  for (size_t i = 0; i < count; ++i) {
    if (out[i] != (float)(rank_sum * (int)(i % 7 + 1))) ++wrong;
  }
  long long total = 0;
  MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, comm);
  return total;
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm comm = MPI_COMM_WORLD;
  int nranks = 1;
  MPI_Comm_rank(comm, &g_rank);
  MPI_Comm_size(comm, &nranks);
  Options o = parse_options(argc, argv);

  size_t max_count = o.max_bytes / sizeof(float);
  if (max_count > (size_t)INT_MAX) die("-e: at most %d floats per call", INT_MAX);
  float* in = aligned_alloc(4096, (max_count * sizeof(float) + 4095) / 4096 * 4096);
  float* out = aligned_alloc(4096, (max_count * sizeof(float) + 4095) / 4096 * 4096);
  if (!in || !out) die("out of memory for %zu bytes", o.max_bytes);
  for (size_t i = 0; i < max_count; ++i) in[i] = (float)(g_rank + 1);
  memset(out, 0, max_count * sizeof(float));

  char host[256] = "?";
  gethostname(host, sizeof host);
  int version = 0, subversion = 0;
  MPI_Get_version(&version, &subversion);
  char library[MPI_MAX_LIBRARY_VERSION_STRING] = "";
  int library_len = 0;
  MPI_Get_library_version(library, &library_len);
  char* newline = strchr(library, '\n');
  if (newline) *newline = '\0';
  if (g_rank == 0) {
    printf("# mpi_allreduce: MPI %d.%d: %s\n", version, subversion, library);
    printf("# Command line:");
    for (int i = 0; i < argc; ++i) printf(" %s", argv[i]);
    printf("\n# nranks %d minBytes %zu maxBytes %zu step: %zu(factor) warmup iters: %d iters: %d "
           "(scaled to ~%gs per size, at least %d) validation: %d\n#\n",
           nranks, o.min_bytes, o.max_bytes, o.step_factor, o.warmup, o.iters, o.budget_s,
           kMinIters, o.check);
    printf("# %10s  %12s  %8s  %6s  %6s           out-of-place\n", "", "", "", "", "");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s %6s\n", "size", "count", "type", "redop",
           "root", "time", "algbw", "busbw", "#wrong");
    printf("# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %5s\n", "(B)", "(elements)", "", "", "",
           "(us)", "(GB/s)", "(GB/s)", "");
    fflush(stdout);
  }

  long long total_wrong = 0;
  double busbw_sum = 0;
  int rows = 0;
  for (size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= o.step_factor) {
    const size_t count = bytes / sizeof(float);
    const size_t real_bytes = count * sizeof(float);

    // Warm-up; the slowest rank's time for the last warm-up call sizes the timed loop.
    double one = 0;
    for (int i = 0; i < o.warmup || i < 1; ++i) {
      double t0 = MPI_Wtime();
      MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, comm);
      one = MPI_Wtime() - t0;
    }
    double slowest = 0;
    MPI_Allreduce(&one, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
    int iters = o.iters;
    if (o.budget_s > 0 && slowest > 0 && slowest * iters > o.budget_s) {
      iters = (int)(o.budget_s / slowest);
      if (iters < kMinIters) iters = kMinIters;
      if (iters > o.iters) iters = o.iters;
    }

    MPI_Barrier(comm);
    double t0 = MPI_Wtime();
    for (int i = 0; i < iters; ++i) {
      MPI_Allreduce(in, out, (int)count, MPI_FLOAT, MPI_SUM, comm);
    }
    double mine = (MPI_Wtime() - t0) / iters;
    double sum = 0;
    MPI_Reduce(&mine, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, comm);
    const double seconds = sum / nranks;

    long long wrong = -1;
    if (o.check) {
      wrong = check_result(in, out, count, nranks, comm);
      total_wrong += wrong;
      for (size_t i = 0; i < count; ++i) in[i] = (float)(g_rank + 1);
    }

    if (g_rank == 0) {
      double algbw = seconds > 0 ? (double)real_bytes / 1.0e9 / seconds : 0;
      double busbw = algbw * (2.0 * (nranks - 1)) / nranks;
      busbw_sum += busbw;
      ++rows;
      char time[32], wrong_text[32] = "N/A";
      if (wrong >= 0) snprintf(wrong_text, sizeof wrong_text, "%lld", wrong);
      printf("%12zu  %12zu  %8s  %6s  %6i  %7s  %6.2f  %6.2f  %5s\n", real_bytes, count, "float",
             "sum", -1, format_time(seconds * 1.0e6, time, sizeof time), algbw, busbw,
             wrong_text);
      fflush(stdout);
    }
    if (bytes > SIZE_MAX / o.step_factor) break;
  }
  if (g_rank == 0) {
    printf("# Out of bounds values : %lld %s\n", total_wrong, total_wrong ? "FAILED" : "OK");
    printf("# Avg bus bandwidth    : %g\n#\n", rows ? busbw_sum / rows : 0.0);
  }
  free(in);
  free(out);
  MPI_Finalize();
  return total_wrong ? 1 : 0;
}
