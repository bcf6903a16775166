/* The time a transfer landed, which SimGrid's C API does not give: the replay starts a received
 * frame's decode then, as the executor's decode stream does (it waits on the receive, not on the
 * host). SimGrid 3.32's C waits with a timeout release the comm, so the replay cannot poll for
 * arrivals in C; s4u's Activity keeps its finish time. The one C++ file of the project. */
#include <simgrid/s4u/Comm.hpp>

extern "C" double sim_comm_wait_landed(sg_comm_t comm) {
  comm->wait();
  const double t = comm->get_finish_time();
  comm->unref(); /* the reference sg_mailbox_get_async took for the C caller */
  return t;
}
