/* A program outside the tree, in plain C, built against the installed bucketing layer through
 * pkg-config (tutti-bucketing.pc): a one-rank world averages a gradient through the reducer, and a
 * bad call reports its error. */
#include <stdio.h>
#include <string.h>
#include <tutti/tutti_bucketing.h>

static int failed(const char* what) {
  fprintf(stderr, "%s: %s\n", what, tutti_get_last_error());
  return 1;
}

int main(void) {
  tuttiComm_t comms[1];
  if (tutti_comm_init_all(comms, 1) != tuttiSuccess) return 1;
  float grad[3] = {1, 2, 3};
  const int64_t shape[1] = {3};
  const tuttiTensor tensor = {"w", shape, 1, tuttiFloat32, grad};
  tuttiReducer_t reducer;
  if (tutti_reducer_create(comms[0], &tensor, 1, NULL, &reducer) != tuttiSuccess)
    return failed("create");
  if (tutti_reducer_prepare(reducer, NULL, 0) != tuttiSuccess ||
      tutti_reducer_mark_ready(reducer, 0) != tuttiSuccess ||
      tutti_reducer_finalize(reducer) != tuttiSuccess)
    return failed("iteration");
  if (tutti_reducer_mark_ready(reducer, 5) == tuttiSuccess ||
      strstr(tutti_get_last_error(), "no parameter 5") == NULL)
    return failed("a bad parameter index was not reported");
  tutti_reducer_destroy(reducer);
  tutti_comm_destroy(comms[0]);
  printf("bucketing consumer ok: %g %g %g\n", grad[0], grad[1], grad[2]);
  return grad[2] == 3 ? 0 : 1;
}
