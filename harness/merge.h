/* attnbench merge: the CSVs of a sweep's shards joined into one. */
#ifndef ATTN_MERGE_H
#define ATTN_MERGE_H

/* argv[0] is "merge"; returns the exit code. */
int attn_merge_main(int argc, char **argv);

#endif
