/* The ring backend's process side: MPI's start and end, the ranks other
 * than 0 serving rank 0's harness, and the hooks for tests. */
#ifndef ATTN_RING_H
#define ATTN_RING_H

#include <stdbool.h>

/* Called first thing in main. Under an MPI launcher (mpirun sets the
 * environment) this starts MPI and checks that every rank was given the
 * same command line; without one it does nothing and the ring backend runs
 * as one rank. Returns -1 to go on, else the exit code after one line on
 * stderr (every rank refuses a mismatched command line). */
int attn_ring_init(int *argc, char ***argv);

/* The ranks: 1 without MPI. */
int attn_ring_size(void);
int attn_ring_rank(void);

/* Ranks above 0 do not run the harness: they serve rank 0's ring cases
 * (prepare, bind, run, read, release), waiting without spinning between
 * them, until rank 0 calls attn_ring_finish. Returns the exit code:
 * ATTN_EXIT_ERROR if a case of this rank ended in ERROR, else 0. */
int attn_ring_serve(void);

/* What main does first: attn_ring_init, then on ranks above 0
 * attn_ring_serve and attn_ring_finish. Returns -1 on rank 0 (and without
 * MPI): go on, and call attn_ring_finish at the end; else the exit code. */
int attn_ring_main(int *argc, char ***argv);

/* Rank 0: sends the other ranks home; every rank: ends MPI. Safe to call
 * without MPI. */
void attn_ring_finish(void);

/* A bug to plant in the ring cases after this call (on rank 0; the other
 * ranks receive it with each case), so tests can prove the checker
 * rejects it. */
enum {
    ATTN_RING_PLANT_NONE = 0,
    ATTN_RING_PLANT_NO_RESCALE,   /* a block from another rank merged without rescaling
                                     the accumulator by 2^(m_old - m_new) */
    ATTN_RING_PLANT_SKIP_BLOCK,   /* the block that arrives at step 1 is not computed */
};
void attn_ring_plant(int bug);

#endif
