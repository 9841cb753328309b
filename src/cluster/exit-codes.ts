// Exit codes a worker tells the primary something with. Its own module: the
// worker must not import primary.ts (each role loads only its own graph).

/** A worker that cannot listen: the primary stops instead of restarting it (a busy port stays busy). */
export const EXIT_CANNOT_LISTEN = 78;
