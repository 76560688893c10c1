/** The soak's printed report: counts of what happened, then each violation. */
import type { CheckReport, Violation, ViolationKind } from './checker.js';

/**
 * A readable report: counts, then each violation (at most `maxPerKind` of a
 * kind; 0: all, and then each note too).
 */
export function formatReport({ stats: s, violations, notes }: CheckReport, maxPerKind = 0): string {
  const f = s.faults;
  const fl = s.flows;
  const x = s.extras;
  const lines = [
    `jobs: ${s.jobs} acknowledged, ${s.completed} completed, ${s.failed} failed (${s.failedByStallLimit} by the stall limit); ` +
      `${s.unacked} enqueues unacknowledged (${s.unackedCommitted} of them committed); ${s.readds} re-adds of custom ids`,
    `attempts: ${s.starts} processor starts, ${s.completionAcks} completions acknowledged, ${s.failedAttempts} failed attempts, ` +
      `${s.lostAttempts} lost (revoked) attempts, ${s.stalls} stalls detected, ${s.sessionLosses} session losses, ${s.workerErrors} worker errors`,
    `faults: kill ${f.kill}, stop ${f.stop}, freeze ${f.freeze}, cut ${f.cut}, lose-replies ${f['lose-replies']}, ` +
      `expire ${f.expire}, restart ${f.restart}` +
      (f['kill-restart'] + f['restart-kill'] > 0
        ? `, kill-restart ${f['kill-restart']}, restart-kill ${f['restart-kill']}`
        : ''),
    `flows: ${fl.acked} acknowledged, ${fl.unacked} unacknowledged (${fl.unackedCommitted} of them committed); ` +
      `parents: ${fl.parentsCompleted} completed, ${fl.parentsFailedByChild} failed by a child (failParentOnFailure), ` +
      `${fl.parentsFailedOwn} by their own attempts, ` +
      `${fl.parentsWaitingOnFailedChild} left waiting-children by a child's plain failure (allowed); ` +
      `${fl.childrenIgnored} children failures ignored`,
    `duplicates: ${s.runsAfterFinish} processor runs after the job had finished`,
    `extras: ${x.bigErrors} oversized errors, ${x.tooLarge} results too large, ${x.logJobs} jobs that logged; ` +
      `${x.dedupAdds} deduplicated adds (${x.deduplicated} resolved with the kept job); ${x.ticks} scheduler iterations; ` +
      `${x.claims} rate-limited claims; ${x.promoted} due jobs started, the latest ${x.latestPromotionMs} ms past due`,
  ];
  const byKind = new Map<ViolationKind, Violation[]>();
  for (const v of violations) byKind.set(v.kind, [...(byKind.get(v.kind) ?? []), v]);
  const summary = [...byKind].map(([k, vs]) => `${k} ${vs.length}`).join(', ');
  lines.push(`violations: ${violations.length}${summary ? ` (${summary})` : ''}`);
  for (const [kind, vs] of byKind) {
    const shown = maxPerKind > 0 ? vs.slice(0, maxPerKind) : vs;
    for (const v of shown) lines.push(`  [${kind}] ${v.q} job ${v.job}: ${v.detail}`);
    if (shown.length < vs.length) lines.push(`  [${kind}] ... and ${vs.length - shown.length} more`);
  }
  if (maxPerKind === 0) for (const n of notes) lines.push(`  [note] ${n.q} job ${n.job}: ${n.detail}`);
  return lines.join('\n');
}
