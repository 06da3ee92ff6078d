/* tests/tools/mpi_fault.c - a rank that misbehaves, for tests/tools/mpi_test.sh (case misbehave).
 *
 * Preloaded into one rank of a split run (`mpirun ... : -np 1 env
 * LD_PRELOAD=libtxlc_mpi_fault.so TXLC_TEST_MPI_FAULT=MODE txlc ...`), it
 * wraps MPI_Isend through MPI's profiling interface (PMPI_Isend is the real
 * one) and changes what that rank sends rank 0, as a bug or a corrupted
 * message would, without any hook in txlc itself. A results message is one of
 * tag 1 (documents) with at least one document or of tag 3 (streams) with at
 * least one stream; the layouts are driver/rank_messages.cpp's. MODE:
 *
 *   duplicate  the first results message is sent twice
 *   foreign    the first results message claims work of rank 0's share
 *              (documents: the first index + 1; streams: first stream 0)
 *   drop       every results message is dropped (heartbeats and the final
 *              "done" still go)
 *   truncate   the first results message loses its last byte
 */
#include <mpi.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { kTagDocuments = 1, kTagStreams = 3 }; /* driver/rank_messages.h */

static int resultsMessage(const unsigned char* bytes, int count, int tag) {
  if (tag == kTagDocuments && count >= 12) { /* int64 predicted, uint32 count, then the documents */
    uint32_t n;
    memcpy(&n, bytes + 8, sizeof n);
    return n > 0;
  }
  if (tag == kTagStreams && count >= 16) { /* int64 first, uint64 streams, then their NLLs */
    uint64_t n;
    memcpy(&n, bytes + 8, sizeof n);
    return n > 0;
  }
  return 0;
}

int MPI_Isend(const void* buf, int count, MPI_Datatype type, int dest, int tag, MPI_Comm comm, MPI_Request* request) {
  static int changed = 0; /* the first results message only, but for drop */
  const char* mode = getenv("TXLC_TEST_MPI_FAULT");
  if (!mode || type != MPI_BYTE || !resultsMessage((const unsigned char*)buf, count, tag) ||
      (changed && strcmp(mode, "drop") != 0))
    return PMPI_Isend(buf, count, type, dest, tag, comm, request);
  changed = 1;
  if (strcmp(mode, "duplicate") == 0) {
    const int rc = PMPI_Send(buf, count, type, dest, tag, comm);
    if (rc != MPI_SUCCESS) return rc;
  } else if (strcmp(mode, "foreign") == 0) {
    unsigned char* bytes = (unsigned char*)buf; /* the sender's own buffer, kept until the send completes */
    if (tag == kTagDocuments) {
      uint64_t index;
      memcpy(&index, bytes + 12, sizeof index);
      ++index;
      memcpy(bytes + 12, &index, sizeof index);
    } else {
      const int64_t first = 0;
      memcpy(bytes, &first, sizeof first);
    }
  } else if (strcmp(mode, "drop") == 0) {
    *request = MPI_REQUEST_NULL; /* complete at once */
    return MPI_SUCCESS;
  } else if (strcmp(mode, "truncate") == 0) {
    --count;
  } else {
    abort(); /* an unknown mode is the test's mistake */
  }
  return PMPI_Isend(buf, count, type, dest, tag, comm, request);
}
