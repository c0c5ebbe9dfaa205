/* The sweep: every shape of the run, case by case, with every finished case
 * reported, appended to the CSV and to the JSON. */
#ifndef ATTN_SWEEP_H
#define ATTN_SWEEP_H

#include "cli.h"
#include "inputs.h"
#include "machine.h"

/* Before any work: the options that need one case (--inputs, --dump-*),
 * and for a run of one shape whether it fits in memory and, with --inputs,
 * its inputs read and checked into *ready. Returns -1 to go on, or an exit
 * code after one line on stderr. *ready is the caller's to free. */
int attn_sweep_check(const attn_opts *o, attn_inputs *ready);

/* Runs everything and returns the exit code; ready: attn_sweep_check's. */
int attn_sweep_run(const attn_opts *o, const attn_machine *m, const char *prog,
                   attn_inputs *ready);

#endif
