// Waits that tests of per-second quotas and allotments share: an
// organization's quota and an allotment's admissions count wall-clock
// seconds, so a burst meant to land in one second starts just after one turns.

/** Resolves `marginMs` after the next wall-clock second begins. */
export function secondBegun(marginMs = 5): Promise<void> {
  return new Promise((r) => setTimeout(r, 1000 - (Date.now() % 1000) + marginMs));
}
