/*
 * The stream layer's mutants (docs/design.md §10.4; like
 * src/ds/ht/ht_mutant.h): a build with -DSMART_MUTANT=<NAME> defines
 * SMART_MUTANT_<NAME> and removes that one guard; in every other build
 * each SMART_M_<NAME> is 0 and the guarded code is the code that ships.
 * CMakeLists.txt builds a STREAM_ switch into src/stream only;
 * tests/mutants/mutants.txt names the test that catches each one and
 * docs/stream.md §7 lists them.
 */
#ifndef SMART_STREAM_MUTANT_H
#define SMART_STREAM_MUTANT_H

/* take: a delta's epoch not checked to follow the source's last one */
#ifdef SMART_MUTANT_STREAM_NO_EPOCH_CHECK
#define SMART_M_STREAM_NO_EPOCH_CHECK 1
#else
#define SMART_M_STREAM_NO_EPOCH_CHECK 0
#endif

/* epoch end: the shipped partial state not cleared (shipped again) */
#ifdef SMART_MUTANT_STREAM_NO_RESET
#define SMART_M_STREAM_NO_RESET 1
#else
#define SMART_M_STREAM_NO_RESET 0
#endif

/* fire: on this executor's own watermark, not the minimum of all */
#ifdef SMART_MUTANT_STREAM_TRIGGER_OWN_WM
#define SMART_M_STREAM_TRIGGER_OWN_WM 1
#else
#define SMART_M_STREAM_TRIGGER_OWN_WM 0
#endif

/* ship: an epoch with nothing for a leader sends it nothing (its
 * watermark reaches that leader only with data or at the end) */
#ifdef SMART_MUTANT_STREAM_NO_EMPTY_DELTA
#define SMART_M_STREAM_NO_EMPTY_DELTA 1
#else
#define SMART_M_STREAM_NO_EMPTY_DELTA 0
#endif

/* take: a message's count not checked against its length */
#ifdef SMART_MUTANT_STREAM_DELTA_NO_BOUNDS
#define SMART_M_STREAM_DELTA_NO_BOUNDS 1
#else
#define SMART_M_STREAM_DELTA_NO_BOUNDS 0
#endif

/* take: a delta's keys not checked to be led here */
#ifdef SMART_MUTANT_STREAM_NO_KEY_CHECK
#define SMART_M_STREAM_NO_KEY_CHECK 1
#else
#define SMART_M_STREAM_NO_KEY_CHECK 0
#endif

/* accept: records below the watermark kept */
#ifdef SMART_MUTANT_STREAM_LATE_KEEP
#define SMART_M_STREAM_LATE_KEEP 1
#else
#define SMART_M_STREAM_LATE_KEEP 0
#endif

/* take: a watermark going backwards accepted */
#ifdef SMART_MUTANT_STREAM_WM_BACKWARDS
#define SMART_M_STREAM_WM_BACKWARDS 1
#else
#define SMART_M_STREAM_WM_BACKWARDS 0
#endif

/* push: the endpoint not polled inside a long epoch (its peers'
 * keepalive gives it up as silent) */
#ifdef SMART_MUTANT_STREAM_NO_YIELD
#define SMART_M_STREAM_NO_YIELD 1
#else
#define SMART_M_STREAM_NO_YIELD 0
#endif

/* drain, ship: a peer whose connection failed not named in the stats */
#ifdef SMART_MUTANT_STREAM_NO_DEAD_NAME
#define SMART_M_STREAM_NO_DEAD_NAME 1
#else
#define SMART_M_STREAM_NO_DEAD_NAME 0
#endif

/* take: a session bucket entry's count and times not checked (first and
 * last inside the bucket, in order) */
#ifdef SMART_MUTANT_STREAM_SESSION_NO_CHECK
#define SMART_M_STREAM_SESSION_NO_CHECK 1
#else
#define SMART_M_STREAM_SESSION_NO_CHECK 0
#endif

/* fire: a session fired once the watermark passed its last record, not
 * its last record + the gap (a later record can still extend it) */
#ifdef SMART_MUTANT_STREAM_SESSION_FIRE_EARLY
#define SMART_M_STREAM_SESSION_FIRE_EARLY 1
#else
#define SMART_M_STREAM_SESSION_FIRE_EARLY 0
#endif

/* fire: a JOIN's (window, key) emitted even when one side is missing */
#ifdef SMART_MUTANT_STREAM_JOIN_NO_FILTER
#define SMART_M_STREAM_JOIN_NO_FILTER 1
#else
#define SMART_M_STREAM_JOIN_NO_FILTER 0
#endif

/* take: a peer's JOIN row (id != 0, min = max = 0) and bucket (right
 * records <= records) not checked */
#ifdef SMART_MUTANT_STREAM_JOIN_ROW_NO_CHECK
#define SMART_M_STREAM_JOIN_ROW_NO_CHECK 1
#else
#define SMART_M_STREAM_JOIN_ROW_NO_CHECK 0
#endif

/* JOIN rows: no limit on their number (no SMART_ENOSPC) */
#ifdef SMART_MUTANT_STREAM_JOIN_ROWS_UNBOUNDED
#define SMART_M_STREAM_JOIN_ROWS_UNBOUNDED 1
#else
#define SMART_M_STREAM_JOIN_ROWS_UNBOUNDED 0
#endif

/* ckpt: a JOIN's rows left out of the checkpoint */
#ifdef SMART_MUTANT_STREAM_CKPT_NO_ROWS
#define SMART_M_STREAM_CKPT_NO_ROWS 1
#else
#define SMART_M_STREAM_CKPT_NO_ROWS 0
#endif

/* recovery: a checkpoint slot taken without its CRC matching (a torn write restored) */
#ifdef SMART_MUTANT_STREAM_CKPT_NO_CRC
#define SMART_M_STREAM_CKPT_NO_CRC 1
#else
#define SMART_M_STREAM_CKPT_NO_CRC 0
#endif

/* recovery: a checkpoint's entry count not checked against the slot */
#ifdef SMART_MUTANT_STREAM_CKPT_NO_BOUNDS
#define SMART_M_STREAM_CKPT_NO_BOUNDS 1
#else
#define SMART_M_STREAM_CKPT_NO_BOUNDS 0
#endif

/* recovery: an area taken from a live owner (no lease check) */
#ifdef SMART_MUTANT_STREAM_CKPT_TAKE_LIVE
#define SMART_M_STREAM_CKPT_TAKE_LIVE 1
#else
#define SMART_M_STREAM_CKPT_TAKE_LIVE 0
#endif

/* recovery: the checkpoint written before the results it commits */
#ifdef SMART_MUTANT_STREAM_CKPT_SLOT_FIRST
#define SMART_M_STREAM_CKPT_SLOT_FIRST 1
#else
#define SMART_M_STREAM_CKPT_SLOT_FIRST 0
#endif

/* recovery: the watermark not restored (replayed records judged late differently) */
#ifdef SMART_MUTANT_STREAM_CKPT_NO_WM
#define SMART_M_STREAM_CKPT_NO_WM 1
#else
#define SMART_M_STREAM_CKPT_NO_WM 0
#endif

/* link: the configured channel mode not passed to the channels (IMM) */
#ifdef SMART_MUTANT_STREAM_CHAN_MODE_IGNORED
#define SMART_M_STREAM_CHAN_MODE_IGNORED 1
#else
#define SMART_M_STREAM_CHAN_MODE_IGNORED 0
#endif

/* config: a channel mode set for LOCAL (no channels) accepted */
#ifdef SMART_MUTANT_STREAM_CHAN_MODE_UNCHECKED
#define SMART_M_STREAM_CHAN_MODE_UNCHECKED 1
#else
#define SMART_M_STREAM_CHAN_MODE_UNCHECKED 0
#endif

/* gen: a Pareto shape out of range, or set with Zipf, accepted */
#ifdef SMART_MUTANT_STREAM_GEN_PARETO_NO_CHECK
#define SMART_M_STREAM_GEN_PARETO_NO_CHECK 1
#else
#define SMART_M_STREAM_GEN_PARETO_NO_CHECK 0
#endif

/* a cut written before every part holds the previous one */
#ifdef SMART_MUTANT_STREAM_CKPT_NO_ALIGN
#define SMART_M_STREAM_CKPT_NO_ALIGN 1
#else
#define SMART_M_STREAM_CKPT_NO_ALIGN 0
#endif

/* a leader takes a source's epoch past the cut being built */
#ifdef SMART_MUTANT_STREAM_CKPT_TAKE_AHEAD
#define SMART_M_STREAM_CKPT_TAKE_AHEAD 1
#else
#define SMART_M_STREAM_CKPT_TAKE_AHEAD 0
#endif

/* attach restores a part ahead of the others' cut */
#ifdef SMART_MUTANT_STREAM_CKPT_NO_LINE
#define SMART_M_STREAM_CKPT_NO_LINE 1
#else
#define SMART_M_STREAM_CKPT_NO_LINE 0
#endif

/* an executor reports the end before every part holds the final cut */
#ifdef SMART_MUTANT_STREAM_CKPT_END_EARLY
#define SMART_M_STREAM_CKPT_END_EARLY 1
#else
#define SMART_M_STREAM_CKPT_END_EARLY 0
#endif

#endif
