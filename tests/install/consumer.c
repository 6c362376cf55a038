/* A program outside the tree, in plain C, built against an installed tutti through pkg-config:
 * a one-rank world all-reduces, a split with a config (C's initializer) all-reduces too, and a bad
 * call reports its error. */
#include <stdio.h>
#include <string.h>
#include <tutti/tutti.h>

int main(void) {
  tuttiComm_t comms[1];
  if (tutti_comm_init_all(comms, 1) != tuttiSuccess) {
    fprintf(stderr, "init: %s\n", tutti_get_last_error());
    return 1;
  }
  double data[4] = {1, 2, 3, 4};
  if (tutti_allreduce(data, data, 4, tuttiFloat64, tuttiSum, comms[0], NULL) != tuttiSuccess)
    return 1;
  if (tutti_allreduce(data, NULL, 4, tuttiFloat64, tuttiSum, comms[0], NULL) !=
          tuttiInvalidArgument ||
      strstr(tutti_get_last_error(), "recvbuf is NULL") == NULL)
    return 1;
  tuttiConfig_t config = TUTTI_CONFIG_INITIALIZER;
  config.socket_ifname = "lo";
  tuttiComm_t pinned = NULL;
  if (tutti_comm_split_config(comms[0], 0, 0, &config, &pinned) != tuttiSuccess ||
      tutti_allreduce(data, data, 4, tuttiFloat64, tuttiMax, pinned, NULL) != tuttiSuccess) {
    fprintf(stderr, "split with a config: %s\n", tutti_get_last_error());
    return 1;
  }
  tutti_comm_destroy(pinned);
  tutti_comm_destroy(comms[0]);
  printf("consumer ok: %g %g %g %g\n", data[0], data[1], data[2], data[3]);
  return data[3] == 4 ? 0 : 1;
}
