// LevelDB sizes for the hub's own databases (the engine's runs, the embedded broker's persistence).
// classic-level's defaults — an 8 MB block cache and a 4 MB write buffer per database — are sized
// for a server reading a big data set; the hub's hot data is small (in-flight QoS 1 messages,
// retained messages, sessions; the runs admitted lately), and each open database keeps a full
// memtable (up to writeBufferSize, twice while one is flushed) and its cache resident for good
// once it has been busy. Measured on `svc hub` with 50 SOPs after 3,000 runs and 8 s idle:
// 123 MB RSS with the defaults, 98 MB with these. A read that misses the smaller cache is served
// from the OS page cache; a smaller write buffer means smaller, more frequent level-0 flushes,
// which for these write sizes is not measurable in bench/hub.bench.ts.
export const HUB_LEVELDB_SIZES = { cacheSize: 1024 * 1024, writeBufferSize: 1024 * 1024 } as const

/**
 * The engine's index beside its history log (hub/engine/README.md, "The write budget") takes
 * LevelDB's own default write buffer, 4 MB. Every level-0 table LevelDB writes is merged with
 * the level-1 tables its keys overlap, and keys by random run id (`run!`, `fin!`, before run ids
 * were time-ordered) overlapped all of them, so each flush of the write buffer rewrote up to
 * 10 MB: with 1 MB tables that was 4.5 KB of tables per event in bursts at 100,000-200,000 stored
 * runs, with 4 MB 2.2 KB (bench/README.md, "endurance", when the run index was in LevelDB too). The cost is up to twice 3 MB more resident while a full buffer is written out.
 */
export const ENGINE_LEVELDB_SIZES = { ...HUB_LEVELDB_SIZES, writeBufferSize: 4 * 1024 * 1024 } as const
