/**
 * Checks of global limits on what ZooKeeper recorded, never on this
 * machine's clock: a claim node's czxid and ctime (the claim transaction's
 * zxid and ZooKeeper's time), the rate-limit window that counted it (named
 * in the claim node), and the czxid of a finished pointer (the finish
 * transaction, which deleted the claim and its slot).
 */
import assert from 'node:assert/strict';
import type { Session } from '@zkq/core';
import type { QueueLayout } from '@zkq/core/internal';

/** One attempt's claim, as the processor read it from its claim node. */
export interface ClaimSeen {
  id: string;
  czxid: number;
  ctime: number;
  window: string | undefined;
  slot: string | undefined;
  pid: string;
}

/** Reads a claim node while its job runs (from any session: synced first). */
export async function readClaim(session: Session, layout: QueueLayout, id: string): Promise<ClaimSeen> {
  await session.sync(layout.claim(id));
  const { data, stat } = await session.getData(layout.claim(id));
  const info = JSON.parse(data.toString()) as { window?: string; slot?: string };
  return { id, czxid: stat.czxid, ctime: stat.ctime, window: info.window, slot: info.slot, pid: String(process.pid) };
}

/** Parses the `claim <id> <czxid> <ctime> <window> <slot> <pid>` lines of the limits fixture. */
export function claimLines(lines: string[]): ClaimSeen[] {
  return lines
    .filter((l) => l.startsWith('claim '))
    .map((l) => {
      const [, id, czxid, ctime, window, slot, pid] = l.split(' ');
      return {
        id: id as string,
        czxid: Number(czxid),
        ctime: Number(ctime),
        window: window === '-' ? undefined : window,
        slot: slot === '-' ? undefined : slot,
        pid: pid as string,
      };
    });
}

/**
 * The rate limit held: every claim was counted in a window; each window
 * counted at most `max`; a window opened (its first claim's ctime: a window
 * is only ever created by a claim transaction) at least `duration` after the
 * one before; and every claim a window counted committed before the next
 * window opened (it wrote the window at a version that the next one's
 * creation deleted). So the starts split into consecutive spans of at least
 * `duration` with at most `max` each. Returns the number of windows.
 */
export function assertRateLimited(claims: ClaimSeen[], max: number, duration: number): number {
  const windows = new Map<string, ClaimSeen[]>();
  for (const c of claims) {
    assert.ok(c.window, `claim of job ${c.id} was counted in a window`);
    windows.set(c.window, [...(windows.get(c.window) ?? []), c]);
  }
  const spans = [...windows.entries()]
    .map(([id, cs]) => {
      const sorted = [...cs].sort((a, b) => a.czxid - b.czxid);
      return { id, claims: sorted, opener: sorted[0] as ClaimSeen, last: sorted[sorted.length - 1] as ClaimSeen };
    })
    .sort((a, b) => a.opener.czxid - b.opener.czxid);
  spans.forEach((w, i) => {
    assert.ok(w.claims.length <= max, `window ${w.id} counted ${w.claims.length} jobs, max ${max}`);
    for (const c of w.claims) assert.ok(c.ctime >= w.opener.ctime, `job ${c.id} started in window ${w.id}`);
    const next = spans[i + 1];
    if (!next) return;
    assert.ok(
      next.opener.ctime - w.opener.ctime >= duration,
      `window ${next.id} opened ${next.opener.ctime - w.opener.ctime} ms after ${w.id}, less than ${duration}`,
    );
    assert.ok(w.last.czxid < next.opener.czxid, `window ${w.id} counted a job after window ${next.id} opened`);
  });
  return spans.length;
}

/** The czxid of each finished job's pointer (the transaction that finished it), by job id. */
export async function finishZxids(session: Session, layout: QueueLayout, kind: 'completed' | 'failed') {
  const out = new Map<string, number>();
  const dir = layout.finishedDir(kind);
  for (const bucket of await session.getChildren(dir)) {
    for (const name of await session.getChildren(`${dir}/${bucket}`)) {
      const stat = await session.exists(`${dir}/${bucket}/${name}`);
      const id = name.slice(name.indexOf('-') + 1, -11);
      if (stat) out.set(id, stat.czxid);
    }
  }
  return out;
}

/**
 * The most jobs active at once, from intervals [claim zxid, finish zxid) in
 * ZooKeeper's total order of transactions (a finish and a claim in one
 * transaction do not overlap).
 */
export function peakActive(intervals: { start: number; end: number }[]): number {
  const events = intervals.flatMap((i) => [
    { at: i.start, d: 1 },
    { at: i.end, d: -1 },
  ]);
  events.sort((a, b) => a.at - b.at || a.d - b.d);
  let now = 0;
  let peak = 0;
  for (const e of events) {
    now += e.d;
    peak = Math.max(peak, now);
  }
  return peak;
}
