/**
 * Last-resort cleanups for what a harness starts outside this process (servers, processes, temp
 * dirs): run synchronously when the process exits, also on SIGINT/SIGTERM, so a failed or
 * interrupted run leaves nothing behind. Each is registered by what started it and unregistered
 * when it was stopped the normal way.
 */
const cleanups = new Set<() => void>();
let exitHooked = false;

export function onExitCleanup(fn: () => void): () => void {
  if (!exitHooked) {
    exitHooked = true;
    process.on('exit', () => {
      for (const f of cleanups) {
        try {
          f();
        } catch {}
      }
    });
    for (const sig of ['SIGINT', 'SIGTERM'] as const) {
      process.once(sig, () => {
        // A program with a handler of its own (the bench tears down first) exits itself, which
        // runs the cleanups; exiting here would cut its teardown short.
        if (process.listenerCount(sig) === 0) process.exit(130);
      });
    }
  }
  cleanups.add(fn);
  return () => cleanups.delete(fn);
}
