/*
 * The tools' mutants (docs/design.md §10.4, as src/util/mutant.h is the
 * library's): compile-time switches that each remove one guard of the
 * tools (tools/, bench/), so that `make mutants` can prove their tests
 * catch its absence.  CMake builds the tools, and only them, with
 * -DSMART_MUTANT_<NAME> for a mutant whose name starts with TOOL_; every
 * other build has all of them 0 and the compiler drops the dead branches.
 * The list, with the test that must catch each, is tests/mutants/mutants.txt.
 */
#ifndef SMART_TOOL_MUTANT_H
#define SMART_TOOL_MUTANT_H

#ifdef SMART_MUTANT_TOOL_COUNT_FAILED /* ycsb: a failed op counted as an op
				       * of the rate */
#define SMART_M_TOOL_COUNT_FAILED 1
#else
#define SMART_M_TOOL_COUNT_FAILED 0
#endif

#ifdef SMART_MUTANT_TOOL_NO_FATAL_STOP /* a run going on after a fatal
					* error (a dead blade) */
#define SMART_M_TOOL_NO_FATAL_STOP 1
#else
#define SMART_M_TOOL_NO_FATAL_STOP 0
#endif

#ifdef SMART_MUTANT_TOOL_ADDR_UNCHECKED /* HOST:PORT taken without a
					* port (refused only by the connect) */
#define SMART_M_TOOL_ADDR_UNCHECKED 1
#else
#define SMART_M_TOOL_ADDR_UNCHECKED 0
#endif

#ifdef SMART_MUTANT_TOOL_CSV_UNCHECKED /* --csv's file checked only when
				       * the run is over */
#define SMART_M_TOOL_CSV_UNCHECKED 1
#else
#define SMART_M_TOOL_CSV_UNCHECKED 0
#endif

#ifdef SMART_MUTANT_TOOL_CSV_ACCESS_ONLY /* --csv judged by access(2)
					  * alone, never opened: root
					  * passes a directory or /proc */
#define SMART_M_TOOL_CSV_ACCESS_ONLY 1
#else
#define SMART_M_TOOL_CSV_ACCESS_ONLY 0
#endif

#ifdef SMART_MUTANT_TOOL_SIM_UNCHECKED /* a bad --sim spec found only
				       * when the run starts (exit 1) */
#define SMART_M_TOOL_SIM_UNCHECKED 1
#else
#define SMART_M_TOOL_SIM_UNCHECKED 0
#endif

#ifdef SMART_MUTANT_TOOL_CAUSE_TWICE /* a failed setup step said, then the
				     * library's held messages said again
				     * at close (two lines, no cause) */
#define SMART_M_TOOL_CAUSE_TWICE 1
#else
#define SMART_M_TOOL_CAUSE_TWICE 0
#endif

#ifdef SMART_MUTANT_TOOL_STAT_SILENT_NONE /* smart-stat finding no
					   * endpoint prints a bare header */
#define SMART_M_TOOL_STAT_SILENT_NONE 1
#else
#define SMART_M_TOOL_STAT_SILENT_NONE 0
#endif

#ifdef SMART_MUTANT_TOOL_PING_BOTH_LINES /* smart-ping: the failed
					  * connect's line printed beside
					  * what answered */
#define SMART_M_TOOL_PING_BOTH_LINES 1
#else
#define SMART_M_TOOL_PING_BOTH_LINES 0
#endif

#ifdef SMART_MUTANT_TOOL_HOST_UNCHECKED /* HOST:PORT's host taken as
				       * is: a name, which the library
				       * never resolves, failed at the
				       * connect ("invalid argument") */
#define SMART_M_TOOL_HOST_UNCHECKED 1
#else
#define SMART_M_TOOL_HOST_UNCHECKED 0
#endif

#ifdef SMART_MUTANT_TOOL_ENV_UNCHECKED /* a bad SMART_* value found by the
				       * ctx, not named at parse */
#define SMART_M_TOOL_ENV_UNCHECKED 1
#else
#define SMART_M_TOOL_ENV_UNCHECKED 0
#endif

#ifdef SMART_MUTANT_TOOL_PHASE_BACKWARDS /* the runner's phase set as
					   * asked: main's KIT_RUN undoes
					   * a KIT_STOP of a thread's
					   * failed setup */
#define SMART_M_TOOL_PHASE_BACKWARDS 1
#else
#define SMART_M_TOOL_PHASE_BACKWARDS 0
#endif

#endif
