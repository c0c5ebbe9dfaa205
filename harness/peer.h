/* Peers: implementations outside attnbench (PyTorch, NumPy; scripts/peers)
 * measured on the same cases. attnbench gives them the case's inputs
 * (--dump-inputs DIR) and takes back their output, times and memory
 * (--check-output FILE.npy --peer NAME [--peer-times FILE]): the output is
 * checked against the same reference with the same checker, and the row is
 * reported, appended to the CSV and the JSON as any backend's. */
#ifndef ATTN_PEER_H
#define ATTN_PEER_H

#include "cli.h"
#include "machine.h"

/* --dump-inputs DIR: the one case's Q, K, V as DIR/q.npy, k.npy, v.npy. */
int attn_peer_dump_inputs(const attn_opts *o);

/* --peer NAME with --check-output FILE.npy (or --peer-skip WHY): the one
 * case's row for that peer. Returns the exit code (1 when the output FAILED
 * its check, as for a backend; 5 when it was skipped). */
int attn_peer_check(const attn_opts *o, const attn_machine *m);

#endif
