/* What libcollkit_pmpi (the interposition library) exports besides the MPI_* collectives: for
 * tools and tests. Look them up with dlsym where the library may be absent (LD_PRELOAD).
 */
#ifndef COLLKIT_PMPI_H
#define COLLKIT_PMPI_H

#ifdef __cplusplus
extern "C" {
#endif

/* Reads a tuning table as the library reads COLLKIT_TUNING (the one reader `collkit run` uses
 * too): the number of rules, or -1 with the reason in `message` (NUL-terminated, at most
 * `length` bytes). No MPI call: works before MPI_Init. */
int collkit_pmpi_check_table(const char* path, char* message, int length);

/* Replaces the table in use by the one at `path` (a table that does not load: none, with the
 * message on stderr, as at start-up) and returns its number of rules. Every rank of every
 * communicator must call it alike, between collectives. */
int collkit_pmpi_use_table(const char* path);

/* Calls a rule covered so far: run by collkit's algorithm, and declined by collkit (then run by
 * the MPI's own collective). */
void collkit_pmpi_counts(long long* ran, long long* declined);

#ifdef __cplusplus
}
#endif

#endif /* COLLKIT_PMPI_H */
